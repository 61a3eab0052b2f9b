package semaphore

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
// Redis took (under CLIENT PAUSE, until the pause ended). Its wait now
// bounds its requests too (on a go-redis client with
// ContextTimeoutEnabled): it returns false while Redis is still paused,
// and the acquisition, which Redis may run once unpaused, is undone. Both
// semaphores.
func TestTryAcquireWaitBoundsRequests(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t) // its own server: the pause stops every client
	c := clienttest.New(t, s.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true }))
	counted := New(c, redistest.Key(t, "sem"))
	expirable := NewExpirable(c, redistest.Key(t, "esem"))
	require.NoError(t, counted.AddPermits(ctx, 2))
	require.NoError(t, expirable.AddPermits(ctx, 2))
	// Load the acquisition scripts.
	ok, err := counted.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = expirable.TryAcquire(ctx, 0, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)

	admin := s.Client(t)
	// WRITE: scripts wait, CLIENT UNPAUSE and reads do not. 20 s: longer
	// than the guard below, so the calls must return while paused.
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err())
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 2)
	go func() {
		ok, err := counted.TryAcquire(ctx, 1, 300*time.Millisecond)
		done <- result{ok, err}
	}()
	go func() {
		_, ok, err := expirable.TryAcquire(ctx, 300*time.Millisecond, time.Hour)
		done <- result{ok, err}
	}()
	for range 2 {
		select {
		case r := <-done:
			require.NoError(t, r.err)
			require.False(t, r.ok)
		case <-time.After(10 * time.Second):
			t.Fatal("TryAcquire(…, 300ms) still running after 10 s: its request was not cut at the end of the wait")
		}
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	redistest.Eventually(t, 10*time.Second, "the cut acquisitions undone", func() error {
		n, err := counted.AvailablePermits(ctx)
		if err != nil {
			return err
		}
		m, err := expirable.AvailablePermits(ctx)
		if err == nil && (n != 1 || m != 1) {
			return fmt.Errorf("%d and %d permits available, want 1 and 1", n, m)
		}
		return err
	})
}
