package semaphore

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// A Release whose permits the next caller of the same Client waits for
// hands them over in-process: no command is sent, nothing is published,
// and Redis's count does not change.
func TestReleaseHandsPermitsToLocalWaiter(t *testing.T) {
	ctx := context.Background()
	c, cc := countedClient(t)
	s := New(c, redistest.Key(t, "sem"))
	_, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 1))

	done := async(func() error { return s.Acquire(ctx, 1) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the second caller waits")
	time.Sleep(50 * time.Millisecond) // past its try after subscribing
	before := cc.Load()
	require.NoError(t, s.Release(ctx, 1))
	r := await(t, done, 3*time.Second, "Acquire after a Release of the same Client")
	require.NoError(t, r.err)
	require.Equal(t, before, cc.Load(), "commands sent by the Release and the handed Acquire")
	require.EqualValues(t, 0, available(t, s), "available while the handed permit is held")
	require.NoError(t, s.Release(ctx, 1))
	require.EqualValues(t, 1, available(t, s), "available after the last Release")
	require.Zero(t, lineLen(s.h.C, s.h.Name), "callers left in line")
}

// A release of more permits than the head of the line waits for, or of
// fewer, goes to Redis and wakes it as before.
func TestReleaseOtherCountGoesToRedis(t *testing.T) {
	ctx := context.Background()
	c, cc := countedClient(t)
	s := New(c, redistest.Key(t, "sem"))
	_, err := s.TrySetPermits(ctx, 0)
	require.NoError(t, err)

	done := async(func() error { return s.Acquire(ctx, 2) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the caller waits")
	before := cc.Load()
	require.NoError(t, s.Release(ctx, 3))
	require.NoError(t, await(t, done, 3*time.Second, "Acquire(2) after Release(3)").err)
	require.Greater(t, cc.Load(), before, "commands sent")
	require.EqualValues(t, 1, available(t, s), "available")
}

// While the callers of one Client pass a permit among themselves by
// handoffs, another Client's waiter still gets it: a chain of handoffs
// ends after core.HandoffWindow, with a release to Redis.
func TestPermitHandoffLetsOtherClientsIn(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	name := redistest.Key(t, "sem")
	local := New(clienttest.Shared(t), name)
	remote := New(clienttest.Shared(t), name)
	_, err := local.TrySetPermits(ctx, 1)
	require.NoError(t, err)

	var wg sync.WaitGroup
	var inside, most, rounds atomic.Int64
	section := func() {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Microsecond)
		inside.Add(-1)
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if local.Acquire(ctx, 1) != nil {
					return
				}
				section()
				rounds.Add(1)
				_ = local.Release(context.Background(), 1)
			}
		}()
	}
	require.Eventually(t, func() bool { return rounds.Load() > 20 }, 5*time.Second, redistest.Tick, "the local callers hammer")
	for range 5 {
		ok, err := remote.TryAcquire(ctx, 1, 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok, "the other Client's waiter gets the permit while the local callers hammer")
		section()
		require.NoError(t, remote.Release(ctx, 1))
	}
	stop()
	wg.Wait()
	require.EqualValues(t, 1, most.Load(), "holders of the one permit at once")
	require.EqualValues(t, 1, available(t, remote), "available after everyone released")
	t.Logf("%d local acquisitions", rounds.Load())
}

// A waiter whose wait ends just as a Release of its Client hands it the
// permits either has them (its call succeeds) or they went to Redis: no
// permit is lost or made up.
func TestCancelRacingPermitHandoff(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	s := New(c, redistest.Key(t, "sem"))
	_, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	for round := range 30 {
		require.NoError(t, s.Acquire(ctx, 1))
		wctx, cancel := context.WithCancel(ctx)
		done := async(func() error { return s.Acquire(wctx, 1) })
		require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "round %d: the caller waits", round)
		go func() {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			cancel()
		}()
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		require.NoError(t, s.Release(ctx, 1))
		r := await(t, done, 3*time.Second, "the cancelled Acquire")
		cancel()
		if r.err == nil {
			require.NoError(t, s.Release(ctx, 1), "round %d: release of the handed permit", round)
		} else {
			require.ErrorIs(t, r.err, context.Canceled, "round %d", round)
		}
		require.EqualValues(t, 1, available(t, s), "round %d: available", round)
		require.Zero(t, lineLen(s.h.C, s.h.Name), "round %d: callers left in line", round)
		require.Eventually(t, func() bool { return channels(s.h.C) == 0 }, 5*time.Second, redistest.Tick, "round %d: unsubscribed", round)
	}
}
