package rwlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Regression (issue 34): a wait was no time limit when Redis was slow:
// under CLIENT PAUSE, TryRLock and TryLock waited for their acquisition on
// its way as long as Redis took, and returned true once the pause ended.
// The engine now cuts the attempt at the end of the wait (on a go-redis
// client with ContextTimeoutEnabled): both return false while Redis is
// still paused, and the acquisition, which Redis may run once unpaused, is
// undone.
func TestTryLockWaitBoundsRequests(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t) // its own server: the pause stops every client
	c := clienttest.New(t, s.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }))
	read := rwlock.New(c, redistest.Key(t, "read"))
	write := rwlock.New(c, redistest.Key(t, "write"))
	// Load the scripts.
	ok, err := read.TryRLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, read.RUnlock(ctx))
	ok, err = write.TryLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, write.Unlock(ctx))

	s.TryWhileWritesPaused(t, map[string]func() (bool, error){
		"TryRLock": func() (bool, error) { return read.TryRLock(ctx, 200*time.Millisecond) },
		"TryLock":  func() (bool, error) { return write.TryLock(ctx, 200*time.Millisecond) },
	})
	for _, rw := range []*rwlock.RWLock{read, write} {
		redistest.Eventually(t, 10*time.Second, rw.Name()+": the cut acquisition undone", func() error {
			r, err := rw.IsReadLocked(ctx)
			if err != nil {
				return err
			}
			w, err := rw.IsWriteLocked(ctx)
			if err == nil && (r || w) {
				return fmt.Errorf("%s still locked", rw.Name())
			}
			return err
		})
	}
}
