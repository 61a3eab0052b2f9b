package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
)

// The scripts run on miniredis (gopher-lua), the embedded server of the
// demo, too: every operation of both semaphores, expiry by the server's
// clock included. The behaviour itself is tested on a real Redis.
func TestScriptsRunOnMiniredis(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb, redisync.WithRecheckInterval(100*time.Millisecond))

	s := New(c, "jobs")
	ok, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok, "TrySetPermits")
	require.NoError(t, s.AddPermits(ctx, 1))
	require.NoError(t, s.Acquire(ctx, 3))
	ok, err = s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquire with none available")
	require.NoError(t, s.Release(ctx, 2))
	require.EqualValues(t, 2, available(t, s), "available")
	n, err := s.DrainPermits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "drained")
	acq, _ := s.h.C.Requests().Ledger().Begin(s.h.Name)
	s.undo(ctx, 1, acq)
	ok, err = s.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok, "Delete")

	e := NewExpirable(c, "calls")
	now := time.Now()
	m.SetTime(now)
	require.NoError(t, e.SetPermits(ctx, 2))
	ok, err = e.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.False(t, ok, "TrySetPermits of a set semaphore")
	require.NoError(t, e.AddPermits(ctx, 1))
	ids, err := e.AcquireN(ctx, 2, time.Second)
	require.NoError(t, err)
	forever, err := e.Acquire(ctx, 0)
	require.NoError(t, err)
	d, err := e.LeaseTime(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, time.Second, d, "LeaseTime on the server's clock")
	d, err = e.LeaseTime(ctx, forever)
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), d, "LeaseTime of a permit that never expires")
	ok, err = e.UpdateLease(ctx, ids[1], 3*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "UpdateLease")

	m.SetTime(now.Add(2 * time.Second)) // ids[0] expires, ids[1] does not
	require.ErrorIs(t, e.Release(ctx, ids...), redisync.ErrNotHeld, "release of an expired permit")
	require.NoError(t, e.Release(ctx, ids[1]))
	_, ok, err = e.TryAcquireN(ctx, 3, 0, time.Second)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquireN(3) with 2 available")
	avail, acquired, err := e.state(ctx)
	require.NoError(t, err)
	require.Equal(t, [2]int64{2, 1}, [2]int64{avail, acquired}, "available, acquired")
	e.undo(ctx, e.requestKey(), []string{"0123456789abcdef"}, time.Second)
	ok, err = e.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok, "Delete")
}
