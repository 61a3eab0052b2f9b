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

	admin := s.Client(t)
	// WRITE: scripts wait, CLIENT UNPAUSE and reads do not. 20 s: longer
	// than the guard below, so the calls must return while paused.
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err())
	type result struct {
		side string
		ok   bool
		err  error
	}
	done := make(chan result, 2)
	go func() {
		ok, err := read.TryRLock(ctx, 200*time.Millisecond)
		done <- result{"TryRLock", ok, err}
	}()
	go func() {
		ok, err := write.TryLock(ctx, 200*time.Millisecond)
		done <- result{"TryLock", ok, err}
	}()
	for range 2 {
		select {
		case r := <-done:
			require.NoError(t, r.err, r.side)
			require.False(t, r.ok, r.side)
		case <-time.After(10 * time.Second):
			t.Fatal("TryRLock/TryLock(ctx, 200ms) still running after 10 s: its request was not cut at the end of the wait")
		}
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
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
