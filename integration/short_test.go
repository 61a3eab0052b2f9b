package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Regression (make chaos, seed 5, single): two expirable permits without a
// lease stayed taken with nothing held, their ids in no acquisition the
// callers were told of. An acquisition's first copy was held up on a
// stalled connection; go-redis re-sent it on another, which found too few
// permits, and the caller was told "not acquired"; the held-up copy then
// reached Redis before its deadline, found permits released meanwhile, and
// took them. Only a success was recorded under the request key. Now a
// shortage is recorded too, and the late copy answers "short" again.
func TestLateCopyAfterShortTakesNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"expirable", "counted"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			lateCopyAfterShortTakesNothing(t, kind)
		})
	}
}

func lateCopyAfterShortTakesNothing(t *testing.T, kind string) {
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	// One connection in the pool, which the stall holds; the re-send
	// dials a new one. Timeouts of 1 s and 2 re-sends make a request
	// lifetime of a few seconds, past the stall.
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 2, MaxRetries: 2,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	other := clienttest.New(t, s.Client(t))
	direct := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")

	var tryAcquire func() (bool, error)
	var holdAll, releaseAll func()
	switch kind {
	case "expirable":
		es, eo := semaphore.NewExpirable(c, name), semaphore.NewExpirable(other, name)
		require.NoError(t, es.SetPermits(ctx, 1))
		var id string
		holdAll = func() {
			var err error
			id, err = eo.Acquire(ctx, 0)
			require.NoError(t, err)
		}
		releaseAll = func() { require.NoError(t, eo.Release(ctx, id)) }
		tryAcquire = func() (bool, error) { _, ok, err := es.TryAcquire(ctx, 0, 0); return ok, err }
	case "counted":
		cs, co := semaphore.New(c, name), semaphore.New(other, name)
		require.NoError(t, cs.AddPermits(ctx, 1))
		holdAll = func() { require.NoError(t, co.Acquire(ctx, 1)) }
		releaseAll = func() { require.NoError(t, co.Release(ctx, 1)) }
		tryAcquire = func() (bool, error) { return cs.TryAcquire(ctx, 1, 0) }
	}
	state := permitState(direct, kind, name, 1)
	// Load the scripts through this client, then leave one idle connection.
	ok, err := tryAcquire()
	require.NoError(t, err)
	require.True(t, ok)
	switch kind {
	case "expirable":
		// give back what tryAcquire took: it is the only permit
		v, _ := direct.ZRange(ctx, keys.SemaphoreTimeouts(name), 0, -1).Result()
		require.Len(t, v, 1)
		direct.ZRem(ctx, keys.SemaphoreTimeouts(name), v[0])
		direct.IncrBy(ctx, name, 1)
	case "counted":
		direct.IncrBy(ctx, name, 1)
	}
	holdAll() // no permit left
	require.NoError(t, rdb.Ping(ctx).Err())

	const stall = 2500 * time.Millisecond
	require.NotZero(t, p.Stall(stall))
	ok, err = tryAcquire() // the first copy is held; the re-send finds no permit
	require.NoError(t, err)
	require.False(t, ok, "acquired with no permit available")
	releaseAll() // a permit is free when the held copy arrives
	time.Sleep(stall + 500*time.Millisecond)
	require.NotZero(t, p.LateDelivered(), "the held copy was not delivered late: the test proves nothing")

	eventuallyAllFree(t, 2*time.Second, state, 1)
}
