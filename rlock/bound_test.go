package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// tryLocker is what the three locks share for this test.
type tryLocker interface {
	TryLock(ctx context.Context, wait time.Duration) (bool, error)
	Unlock(ctx context.Context) error
	IsLocked(ctx context.Context) (bool, error)
}

// Regression (issue 34): a wait was no time limit when Redis was slow:
// under CLIENT PAUSE, TryLock(ctx, wait) waited for its acquisition on
// its way as long as Redis took, and returned true once the pause ended.
// The engine now cuts the attempt at the end of the wait (on a go-redis
// client with ContextTimeoutEnabled): TryLock returns false while Redis is
// still paused, and the acquisition, which Redis may run once unpaused, is
// undone. The lock, the fair lock and the spin lock.
func TestTryLockWaitBoundsRequests(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t) // its own server: the pause stops every client
	c := clienttest.New(t, s.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }))
	locks := map[string]tryLocker{
		"Lock":     rlock.New(c, redistest.Key(t, "lock")),
		"FairLock": rlock.NewFair(c, redistest.Key(t, "fair")),
		"SpinLock": rlock.NewSpin(c, redistest.Key(t, "spin")),
	}
	for _, l := range locks { // load the scripts
		ok, err := l.TryLock(ctx, 0)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, l.Unlock(ctx))
	}

	calls := map[string]func() (bool, error){}
	for kind, l := range locks {
		calls[kind] = func() (bool, error) { return l.TryLock(ctx, 200*time.Millisecond) }
	}
	s.TryWhileWritesPaused(t, calls)
	for kind, l := range locks {
		redistest.Eventually(t, 10*time.Second, kind+": the cut acquisition undone", func() error {
			held, err := l.IsLocked(ctx)
			if err == nil && held {
				return fmt.Errorf("%s still locked", kind)
			}
			return err
		})
	}
}
