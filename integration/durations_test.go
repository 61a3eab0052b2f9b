package integration

import (
	"context"
	"fmt"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// maxLease is the longest lease: 2^43 ms, about 278 years.
const maxLease = (1 << 43) * time.Millisecond

// Regression (issue 25): WithLease(math.MaxInt64) and
// WithWatchdogTimeout(math.MaxInt64) made a lock with no expiry at all, an
// expirable permit with that lease reported a negative LeaseTime, a 30 ns
// permit lease was gone before its Release, and a negative one silently
// never expired. Every lease outside [1 ms, 2^43 ms] is an invalid
// argument now, reported before anything is sent (the client below cannot
// even dial).
func TestBadDurationsSendNothing(t *testing.T) {
	var dials atomic.Int32
	rdb := redis.NewClient(&redis.Options{
		Addr:       "127.0.0.1:1",
		MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, fmt.Errorf("no dialing in this test")
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	c := redisync.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	bad := []time.Duration{math.MinInt64, -time.Second, -1, 0, 30, 999 * time.Microsecond, maxLease + time.Millisecond, math.MaxInt64}
	cases := map[string]func() error{}
	for _, d := range bad {
		cases[fmt.Sprintf("rlock WithLease(%v)", d)] = func() error { return rlock.New(c, "x", rlock.WithLease(d)).Lock(ctx) }
		cases[fmt.Sprintf("fair WithLease(%v)", d)] = func() error { _, err := rlock.NewFair(c, "x", rlock.WithLease(d)).TryLock(ctx, 0); return err }
		cases[fmt.Sprintf("spin WithLease(%v)", d)] = func() error { return rlock.NewSpin(c, "x", rlock.WithLease(d)).Lock(ctx) }
		cases[fmt.Sprintf("rwlock WithLease(%v) RLock", d)] = func() error { return rwlock.New(c, "x", rwlock.WithLease(d)).RLock(ctx) }
		cases[fmt.Sprintf("rwlock WithLease(%v) Lock", d)] = func() error { return rwlock.New(c, "x", rwlock.WithLease(d)).Lock(ctx) }
		wd := redisync.New(rdb, redisync.WithWatchdogTimeout(d))
		cases[fmt.Sprintf("WithWatchdogTimeout(%v)", d)] = func() error { return rlock.New(wd, "x").Lock(ctx) }
		if d == 0 {
			continue // an expirable permit's lease 0: never expires
		}
		es := semaphore.NewExpirable(c, "x")
		cases[fmt.Sprintf("expirable Acquire(%v)", d)] = func() error { _, err := es.Acquire(ctx, d); return err }
		cases[fmt.Sprintf("expirable AcquireN(%v)", d)] = func() error { _, err := es.AcquireN(ctx, 2, d); return err }
		cases[fmt.Sprintf("expirable TryAcquire(%v)", d)] = func() error { _, _, err := es.TryAcquire(ctx, 0, d); return err }
		cases[fmt.Sprintf("expirable TryAcquireN(%v)", d)] = func() error { _, _, err := es.TryAcquireN(ctx, 2, time.Second, d); return err }
		cases[fmt.Sprintf("expirable UpdateLease(%v)", d)] = func() error {
			_, err := es.UpdateLease(ctx, "0123456789abcdef0123456789abcdef", d)
			return err
		}
	}
	for what, run := range cases {
		assert.ErrorIs(t, run(), redisync.ErrInvalidArgument, what)
	}
	assert.Zero(t, dials.Load(), "nothing was sent")
}

// The bounds themselves are valid: a lock with a 2^43 ms lease and a permit
// with one both expire (a TTL, a positive LeaseTime), and a lease just above
// a millisecond is rounded up.
func TestLeaseBounds(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	l := rlock.New(c, name, rlock.WithLease(maxLease))
	require.NoError(t, l.Lock(ctx))
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, maxLease-time.Minute)
	require.NoError(t, l.Unlock(ctx))

	es := semaphore.NewExpirable(c, name+":sem")
	require.NoError(t, es.AddPermits(ctx, 3))
	id, err := es.Acquire(ctx, maxLease)
	require.NoError(t, err)
	left, err := es.LeaseTime(ctx, id)
	require.NoError(t, err)
	assert.Greater(t, left, maxLease-time.Minute)
	ok, err := es.UpdateLease(ctx, id, time.Millisecond+1)
	require.NoError(t, err)
	assert.True(t, ok)
	never, err := es.Acquire(ctx, 0)
	require.NoError(t, err)
	left, err = es.LeaseTime(ctx, never)
	require.NoError(t, err)
	assert.EqualValues(t, -1, left, "lease 0 never expires")
	require.NoError(t, es.Release(ctx, never))
}
