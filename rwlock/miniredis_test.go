package rwlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rwlock"
)

// TestMiniredisCompatible: the scripts also run on miniredis, the embedded
// server of the demo (gopher-lua, no cjson): both sides, reentrancy, a
// downgrade that wakes a waiting reader, the upgrade refusal, renewal and
// ForceUnlock. Behaviour is tested against redis-server elsewhere.
func TestMiniredisCompatible(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(900*time.Millisecond), redisync.WithRecheckInterval(time.Minute))
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t)

	for _, name := range []string{"rw", "a{b}c"} {
		rw, other := rwlock.New(c, name), rwlock.New(c, name)
		octx := redisync.WithOwner(ctx) // rw re-enters, downgrades and is refused an upgrade
		must(t, rw.RLock(octx))
		must(t, rw.RLock(octx))
		must(t, other.RLock(ctx))
		wantErr(t, name+": upgrade", rw.Lock(octx), redisync.ErrUpgrade)
		time.Sleep(time.Second) // a lease and more: renewals keep the holds
		if err := rw.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		must(t, rw.RUnlock(octx))
		must(t, rw.RUnlock(octx))
		must(t, other.RUnlock(ctx))
		if mr.Exists(name) {
			t.Fatalf("%s: hash left after the last read release", name)
		}

		must(t, rw.Lock(octx))
		must(t, rw.Lock(octx))
		must(t, rw.RLock(octx))
		got := make(chan error, 1)
		go func() { got <- other.RLock(ctx) }()
		waitWaiters(t, 1, c)
		must(t, rw.Unlock(octx))
		must(t, rw.Unlock(octx)) // downgrade: publishes "1"
		select {
		case err := <-got:
			must(t, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the downgrade did not wake the reader", name)
		}
		ok, err := rw.IsReadLocked(ctx)
		wantBool(t, name+": IsReadLocked", ok, err, true)
		n, err := rw.ReadHoldCount(octx)
		wantCount(t, name+": ReadHoldCount", n, err, 1)
		ok, err = rw.ForceUnlock(ctx)
		wantBool(t, name+": ForceUnlock", ok, err, true)
		for _, k := range mr.Keys() {
			if !strings.HasPrefix(k, "redisync_request:") {
				t.Fatalf("%s: key %q left after ForceUnlock", name, k)
			}
		}
	}
}
