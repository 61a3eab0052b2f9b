package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// Regression (issue 34): a wait was no time limit when Redis was slow:
// TryAcquire(ctx, n, wait) waited for a request on its way as long as
// Redis took (under CLIENT PAUSE, until the pause ended or go-redis's read
// timeout). Its wait now bounds its requests too (on a go-redis client
// with ContextTimeoutEnabled): it returns (false, nil) while Redis is still
// paused, and the acquisition, which Redis may run once unpaused, is
// undone.
func TestTryAcquireWaitBoundsRequests(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t) // its own server: the pause stops every client
	c := clienttest.New(t, s.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }))
	l := New(c, redistest.Key(t, "rl"))
	require.NoError(t, l.SetRate(ctx, Overall, 5, time.Hour))
	ok, err := l.TryAcquire(ctx, 1, 0) // loads the script
	require.NoError(t, err)
	require.True(t, ok)

	admin := s.Client(t)
	// WRITE: scripts wait, CLIENT UNPAUSE and reads do not. 20 s: longer
	// than the guard below, so the call must return while paused.
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err())
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := l.TryAcquire(ctx, 1, 300*time.Millisecond)
		done <- result{ok, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("TryAcquire(ctx, 1, 300ms) still running after 10 s: its request was not cut at the end of the wait")
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.NoError(t, r.err)
	require.False(t, r.ok)
	redistest.Eventually(t, 10*time.Second, "the cut acquisition undone", func() error {
		n, err := l.AvailablePermits(ctx)
		if err == nil && n != 4 {
			return fmt.Errorf("%d permits available, want 4", n)
		}
		return err
	})
}
