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

	s.TryWhileWritesPaused(t, map[string]func() (bool, error){
		"TryAcquire": func() (bool, error) { return l.TryAcquire(ctx, 1, 300*time.Millisecond) },
	})
	redistest.Eventually(t, 10*time.Second, "the cut acquisition undone", func() error {
		n, err := l.AvailablePermits(ctx)
		if err == nil && n != 4 {
			return fmt.Errorf("%d permits available, want 4", n)
		}
		return err
	})
}
