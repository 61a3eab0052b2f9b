package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// Both semaphores work on a Redis Cluster: every script's keys share one
// slot, and a release published on one node wakes a waiter subscribed
// through another.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	slow := redisync.WithRecheckInterval(time.Minute)
	a := clientOn(t, cl.Client(t), slow)
	b := clientOn(t, cl.Client(t), slow)
	for _, name := range []string{redistest.Key(t, "sem"), "{" + redistest.Key(t, "tenant") + "}:sem"} {
		s, other := New(a, name), New(b, name)
		ok, err := s.TrySetPermits(ctx, 1)
		noErr(t, err)
		equal(t, ok, true, name+": TrySetPermits")
		noErr(t, s.Acquire(ctx, 1))
		done := async(func() error { return other.Acquire(ctx, 1) })
		eventually(t, 5*time.Second, name+": the waiter subscribes", func() bool { return waiters(other.h.C) == 1 })
		noErr(t, s.Release(ctx, 1))
		noErr(t, await(t, done, 5*time.Second, name+": Acquire after the release").err)
		noErr(t, other.AddPermits(ctx, 2))
		n, err := other.DrainPermits(ctx)
		noErr(t, err)
		equal(t, n, 2, name+": drained")
		ok, err = s.Delete(ctx)
		noErr(t, err)
		equal(t, ok, true, name+": Delete")

		e, eo := NewExpirable(a, name+":exp"), NewExpirable(b, name+":exp")
		noErr(t, e.SetPermits(ctx, 2))
		ids, err := e.AcquireN(ctx, 2, time.Minute)
		noErr(t, err)
		got := async(func() error { _, err := eo.Acquire(ctx, time.Minute); return err })
		eventually(t, 5*time.Second, name+": the expirable waiter subscribes", func() bool { return waiters(eo.h.C) == 1 })
		ok, err = e.UpdateLease(ctx, ids[0], time.Hour)
		noErr(t, err)
		equal(t, ok, true, name+": UpdateLease")
		_, err = e.LeaseTime(ctx, ids[0])
		noErr(t, err)
		noErr(t, e.Release(ctx, ids...))
		noErr(t, await(t, got, 5*time.Second, name+": expirable Acquire after the release").err)
		noErr(t, e.AddPermits(ctx, 1))
		ok, err = e.TrySetPermits(ctx, 1)
		noErr(t, err)
		equal(t, ok, false, name+": TrySetPermits of a set semaphore")
		n, err = e.Permits(ctx)
		noErr(t, err)
		equal(t, n, 3, name+": permits")
		ok, err = e.Delete(ctx)
		noErr(t, err)
		equal(t, ok, true, name+": expirable Delete")
	}
}
