package semaphore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
)

// The scripts run on miniredis (gopher-lua), the embedded server of the
// demo, too: every operation of both semaphores, expiry by the server's
// clock included. The behaviour itself is tested on a real Redis.
func TestScriptsRunOnMiniredis(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clientOn(t, rdb, redisync.WithRecheckInterval(100*time.Millisecond))

	s := New(c, "jobs")
	ok, err := s.TrySetPermits(ctx, 2)
	noErr(t, err)
	equal(t, ok, true, "TrySetPermits")
	noErr(t, s.AddPermits(ctx, 1))
	noErr(t, s.Acquire(ctx, 3))
	ok, err = s.TryAcquire(ctx, 1, 0)
	noErr(t, err)
	equal(t, ok, false, "TryAcquire with none available")
	noErr(t, s.Release(ctx, 2))
	equal(t, available(t, s), 2, "available")
	n, err := s.DrainPermits(ctx)
	noErr(t, err)
	equal(t, n, 2, "drained")
	s.undo(ctx, 1, s.requestKey())
	ok, err = s.Delete(ctx)
	noErr(t, err)
	equal(t, ok, true, "Delete")

	e := NewExpirable(c, "calls")
	now := time.Now()
	m.SetTime(now)
	noErr(t, e.SetPermits(ctx, 2))
	ok, err = e.TrySetPermits(ctx, 5)
	noErr(t, err)
	equal(t, ok, false, "TrySetPermits of a set semaphore")
	noErr(t, e.AddPermits(ctx, 1))
	ids, err := e.AcquireN(ctx, 2, time.Second)
	noErr(t, err)
	forever, err := e.Acquire(ctx, 0)
	noErr(t, err)
	d, err := e.LeaseTime(ctx, ids[0])
	noErr(t, err)
	equal(t, d, time.Second, "LeaseTime on the server's clock")
	d, err = e.LeaseTime(ctx, forever)
	noErr(t, err)
	equal(t, d, time.Duration(-1), "LeaseTime of a permit that never expires")
	ok, err = e.UpdateLease(ctx, ids[1], 3*time.Second)
	noErr(t, err)
	equal(t, ok, true, "UpdateLease")

	m.SetTime(now.Add(2 * time.Second)) // ids[0] expires, ids[1] does not
	if err := e.Release(ctx, ids...); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("release of an expired permit: got %v, want ErrNotHeld", err)
	}
	noErr(t, e.Release(ctx, ids[1]))
	_, ok, err = e.TryAcquireN(ctx, 3, 0, time.Second)
	noErr(t, err)
	equal(t, ok, false, "TryAcquireN(3) with 2 available")
	avail, acquired, err := e.state(ctx)
	noErr(t, err)
	equal(t, [2]int64{avail, acquired}, [2]int64{2, 1}, "available, acquired")
	e.undo(ctx, e.requestKey(), []any{"0123456789abcdef"})
	ok, err = e.Delete(ctx)
	noErr(t, err)
	equal(t, ok, true, "Delete")
}
