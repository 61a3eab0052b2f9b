package rwlock_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Issue 12: one rwlock handle shared by 8 goroutines on each of 2 clients,
// as a sync.RWMutex is: readers overlap, and no writer ever overlaps a
// reader or another writer, through the same handle or another.
func TestSharedHandleExcludes(t *testing.T) {
	const (
		clients    = 2
		goroutines = 8
		steps      = 12
	)
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	var chk checker
	var wg sync.WaitGroup
	for range clients {
		rw := rwlock.New(clienttest.Shared(t), name) // one handle, shared
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range steps {
					if rand.IntN(3) == 0 {
						if !assert.NoError(t, rw.Lock(ctx)) {
							return
						}
						chk.enter(true)
						chk.leave(true)
						assert.NoError(t, rw.Unlock(ctx))
						continue
					}
					if !assert.NoError(t, rw.RLock(ctx)) {
						return
					}
					chk.enter(false)
					time.Sleep(time.Millisecond) // work inside, so that readers overlap
					chk.leave(false)
					assert.NoError(t, rw.RUnlock(ctx))
				}
			}()
		}
	}
	wg.Wait()
	chk.mu.Lock()
	defer chk.mu.Unlock()
	assert.Empty(t, chk.violations, "a writer overlapped another holder")
	assert.Equal(t, clients*goroutines*steps, chk.reads+chk.writes, "every step completed")
	assert.Zero(t, chk.readers+chk.writers, "holders left inside")
}

// A plain handle's Lock waits for the read holds taken through it, as
// sync.RWMutex's does (no ErrUpgrade without a context owner), and a
// waiting Lock keeps later RLocks through the handle out.
func TestPlainHandleWriterWaitsForItsReaders(t *testing.T) {
	ctx := testCtx(t)
	rw := rwlock.New(clienttest.Shared(t), redistest.Key(t, "rw"))
	require.NoError(t, rw.RLock(ctx))
	ok, err := rw.TryLock(ctx, 0)
	require.NoError(t, err, "no ErrUpgrade without a context owner")
	assert.False(t, ok)

	locked := make(chan error, 1)
	go func() { locked <- rw.Lock(ctx) }()
	require.Eventually(t, func() bool {
		ok, err := rw.TryRLock(ctx, 0)
		if ok {
			_ = rw.RUnlock(ctx)
		}
		return err == nil && !ok
	}, 5*time.Second, 5*time.Millisecond, "a waiting Lock keeps later RLocks out")
	require.NoError(t, rw.RUnlock(ctx))
	select {
	case err := <-locked:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Lock did not get in after the handle's read hold went")
	}
	require.NoError(t, rw.Unlock(ctx))
}

// Regression (issue 12): a read release that failed on the network left a
// phantom read hold in Redis; the same owner then got ErrUpgrade forever and
// writers starved. Now a new hold starts from the client's own counts, the
// last release frees the lock, and nothing is renewed; for both sides.
func TestRelockAfterFailedUnlock(t *testing.T) {
	for _, side := range []string{"read", "write"} {
		t.Run(side, func(t *testing.T) {
			ctx := redisync.WithOwner(testCtx(t))
			s := redistest.Start(t)
			c, proxy := clienttest.Proxied(t, s, redis.Options{MaxRetries: -1,
				ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond},
				redisync.WithWatchdogTimeout(3*time.Second))
			name := redistest.Key(t, "rw")
			rw := rwlock.New(c, name)
			lock, unlock := rw.RLock, rw.RUnlock
			if side == "write" {
				lock, unlock = rw.Lock, rw.Unlock
			}

			require.NoError(t, lock(ctx))
			clienttest.FailWhileCut(t, proxy, func() error { return unlock(ctx) })
			direct := s.Client(t)
			require.EqualValues(t, 1, direct.Exists(ctx, name).Val(), "test setup: the failed release left the hold in Redis")

			// The same owner takes the write side: not refused as an upgrade
			// by the phantom read hold, and freed by its own Unlock.
			require.NoError(t, rw.Lock(ctx))
			n, err := rw.ReadHoldCount(ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "the phantom read hold is gone")
			require.NoError(t, rw.Unlock(ctx))
			assert.Zero(t, direct.Exists(ctx, name).Val(), "the lock is free after the last release")

			require.NoError(t, lock(ctx))
			require.NoError(t, unlock(ctx))
			assert.Zero(t, direct.Exists(ctx, name).Val(), "the lock is free after the last release")
			assert.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "nothing is renewed")
			ok, err := rwlock.New(clienttest.Shared(t), name).TryLock(testCtx(t), 0)
			require.NoError(t, err)
			assert.True(t, ok, "the write side is free for other owners")
		})
	}
}
