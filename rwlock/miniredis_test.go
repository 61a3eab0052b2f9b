package rwlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
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
		require.NoError(t, rw.RLock(octx))
		require.NoError(t, rw.RLock(octx))
		require.NoError(t, other.RLock(ctx))
		require.ErrorIs(t, rw.Lock(octx), redisync.ErrUpgrade, name+": upgrade")
		// A lease and more: four renewal rounds (every 300ms) keep the holds.
		ticks := (*core.Client)(c).Holds().Stats().Ticks
		require.Eventually(t, func() bool { return (*core.Client)(c).Holds().Stats().Ticks >= ticks+4 },
			10*time.Second, redistest.Tick, "%s: four renewal rounds", name)
		require.NoError(t, rw.Err(), name)
		require.NoError(t, rw.RUnlock(octx))
		require.NoError(t, rw.RUnlock(octx))
		require.NoError(t, other.RUnlock(ctx))
		require.False(t, mr.Exists(name), "%s: hash left after the last read release", name)

		require.NoError(t, rw.Lock(octx))
		require.NoError(t, rw.Lock(octx))
		require.NoError(t, rw.RLock(octx))
		got := make(chan error, 1)
		go func() { got <- other.RLock(ctx) }()
		clienttest.WaitWaiters(t, 1, c)
		require.NoError(t, rw.Unlock(octx))
		require.NoError(t, rw.Unlock(octx)) // downgrade: publishes "1"
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			require.FailNow(t, name+": the downgrade did not wake the reader")
		}
		ok, err := rw.IsReadLocked(ctx)
		require.NoError(t, err, name+": IsReadLocked")
		require.True(t, ok, name+": IsReadLocked")
		n, err := rw.ReadHoldCount(octx)
		require.NoError(t, err, name+": ReadHoldCount")
		require.Equal(t, int64(1), n, name+": ReadHoldCount")
		ok, err = rw.ForceUnlock(ctx)
		require.NoError(t, err, name+": ForceUnlock")
		require.True(t, ok, name+": ForceUnlock")
		for _, k := range mr.Keys() {
			require.True(t, strings.HasPrefix(k, "redisync_request:"), "%s: key %q left after ForceUnlock", name, k)
		}
	}
}
