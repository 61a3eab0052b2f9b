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

	s.TryWhileWritesPaused(t, map[string]func() (bool, error){
		"Semaphore.TryAcquire": func() (bool, error) { return counted.TryAcquire(ctx, 1, 300*time.Millisecond) },
		"ExpirableSemaphore.TryAcquire": func() (bool, error) {
			_, ok, err := expirable.TryAcquire(ctx, 300*time.Millisecond, time.Hour)
			return ok, err
		},
	})
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
