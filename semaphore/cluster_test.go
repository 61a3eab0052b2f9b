package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
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
	a := clienttest.New(t, cl.Client(t), slow)
	b := clienttest.New(t, cl.Client(t), slow)
	for _, name := range []string{redistest.Key(t, "sem"), "{" + redistest.Key(t, "tenant") + "}:sem"} {
		s, other := New(a, name), New(b, name)
		ok, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok, name+": TrySetPermits")
		require.NoError(t, s.Acquire(ctx, 1))
		done := async(func() error { return other.Acquire(ctx, 1) })
		require.Eventually(t, func() bool { return waiters(other.h.C) == 1 }, 5*time.Second, redistest.Tick, name+": the waiter subscribes")
		require.NoError(t, s.Release(ctx, 1))
		require.NoError(t, await(t, done, 5*time.Second, name+": Acquire after the release").err)
		require.NoError(t, other.AddPermits(ctx, 2))
		n, err := other.DrainPermits(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, name+": drained")
		ok, err = s.Delete(ctx)
		require.NoError(t, err)
		require.True(t, ok, name+": Delete")

		e, eo := NewExpirable(a, name+":exp"), NewExpirable(b, name+":exp")
		require.NoError(t, e.SetPermits(ctx, 2))
		ids, err := e.AcquireN(ctx, 2, time.Minute)
		require.NoError(t, err)
		got := async(func() error { _, err := eo.Acquire(ctx, time.Minute); return err })
		require.Eventually(t, func() bool { return waiters(eo.h.C) == 1 }, 5*time.Second, redistest.Tick, name+": the expirable waiter subscribes")
		ok, err = e.UpdateLease(ctx, ids[0], time.Hour)
		require.NoError(t, err)
		require.True(t, ok, name+": UpdateLease")
		_, err = e.LeaseTime(ctx, ids[0])
		require.NoError(t, err)
		require.NoError(t, e.Release(ctx, ids...))
		require.NoError(t, await(t, got, 5*time.Second, name+": expirable Acquire after the release").err)
		require.NoError(t, e.AddPermits(ctx, 1))
		ok, err = e.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.False(t, ok, name+": TrySetPermits of a set semaphore")
		n, err = e.Permits(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, name+": permits")
		ok, err = e.Delete(ctx)
		require.NoError(t, err)
		require.True(t, ok, name+": expirable Delete")
	}
}
