package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// waitDone waits for a goroutine's result, failing after a generous bound.
func waitDone(t *testing.T, what string, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		require.NoError(t, err, what)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not woken", what)
	}
}

// Every primitive works on a Cluster and through Sentinel, and its waiters
// are woken by pub/sub (the re-check interval is a minute).
func TestPrimitivesAcrossDeployments(t *testing.T) {
	for _, d := range deployments(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			a := clienttest.New(t, d.client(t))
			b := clienttest.New(t, d.client(t), redisync.WithRecheckInterval(time.Minute))

			t.Run("rwlock", func(t *testing.T) {
				name := redistest.Key(t)
				r1, r2 := rwlock.New(a, name), rwlock.New(b, name)
				require.NoError(t, r1.RLock(ctx))
				require.NoError(t, r2.RLock(ctx))
				w := rwlock.New(b, name)
				errc := make(chan error, 1)
				go func() { errc <- w.Lock(ctx) }()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, r1.RUnlock(ctx))
				require.NoError(t, r2.RUnlock(ctx))
				waitDone(t, "writer", errc)
				locked, err := w.IsWriteLocked(ctx)
				require.NoError(t, err)
				assert.True(t, locked)
				require.NoError(t, w.Unlock(ctx))
			})

			t.Run("semaphore", func(t *testing.T) {
				name := redistest.Key(t)
				s1, s2 := semaphore.New(a, name), semaphore.New(b, name)
				ok, err := s1.TrySetPermits(ctx, 1)
				require.NoError(t, err)
				require.True(t, ok)
				require.NoError(t, s1.Acquire(ctx, 1))
				errc := make(chan error, 1)
				go func() { errc <- s2.Acquire(ctx, 1) }()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, s1.Release(ctx, 1))
				waitDone(t, "semaphore waiter", errc)
				n, err := s2.AvailablePermits(ctx)
				require.NoError(t, err)
				assert.Zero(t, n)
				require.NoError(t, s2.Release(ctx, 1))
			})

			t.Run("expirable", func(t *testing.T) {
				name := redistest.Key(t)
				s1, s2 := semaphore.NewExpirable(a, name), semaphore.NewExpirable(b, name)
				require.NoError(t, s1.SetPermits(ctx, 1))
				id, err := s1.Acquire(ctx, time.Minute)
				require.NoError(t, err)
				errc := make(chan error, 1)
				go func() {
					id2, err := s2.Acquire(ctx, time.Minute)
					if err == nil {
						err = s2.Release(ctx, id2)
					}
					errc <- err
				}()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, s1.Release(ctx, id))
				waitDone(t, "expirable waiter", errc)
			})

			t.Run("latch", func(t *testing.T) {
				name := redistest.Key(t)
				coord := countdown.New(a, name)
				ok, err := coord.TrySetCount(ctx, 2)
				require.NoError(t, err)
				require.True(t, ok)
				errc := make(chan error, 1)
				go func() { errc <- countdown.New(b, name).Wait(ctx) }()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, coord.CountDown(ctx))
				require.NoError(t, countdown.New(b, name).CountDown(ctx))
				waitDone(t, "latch waiter", errc)
			})

			t.Run("multilock", func(t *testing.T) {
				n1, n2 := redistest.Key(t, "1"), redistest.Key(t, "2") // different slots on the cluster
				held := rlock.New(a, n2)
				require.NoError(t, held.Lock(ctx))
				m := multilock.New(rlock.New(b, n1), rlock.New(b, n2))
				errc := make(chan error, 1)
				go func() { errc <- m.Lock(ctx) }()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, held.Unlock(ctx))
				waitDone(t, "multilock", errc)
				require.NoError(t, m.Unlock(ctx))
			})
		})
	}
}
