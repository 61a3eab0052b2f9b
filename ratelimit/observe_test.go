package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// The Observer sees every decision of both limiters, by name: allowed
// (acquired), denied (busy, timed out) and how long allowed calls waited.
func TestObserverCountsDecisions(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]redisync.WaitResult{}
	c := clienttest.Shared(t, redisync.WithObserver(redisync.Observer{
		WaitEnd: func(_ context.Context, w redisync.WaitEnd) {
			mu.Lock()
			defer mu.Unlock()
			got[w.Primitive+" "+w.Name] = append(got[w.Primitive+" "+w.Name], w.Result)
		},
	}))
	ctx := context.Background()
	l := New(c, redistest.Key(t, "rl"))
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Hour))
	_, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	_, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	_, err = l.TryAcquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	g := NewGCRA(c, redistest.Key(t, "g"), Limit{Rate: 1, Period: time.Hour, Burst: 1})
	_, err = g.Allow(ctx)
	require.NoError(t, err)
	_, err = g.Allow(ctx)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []redisync.WaitResult{redisync.WaitAcquired, redisync.WaitBusy, redisync.WaitTimedOut},
		got["rate_limiter "+l.Name()])
	assert.Equal(t, []redisync.WaitResult{redisync.WaitAcquired, redisync.WaitBusy}, got["gcra "+g.Name()])
	s := c.Stats()
	assert.Equal(t, uint64(2), s.Acquired)
	assert.Equal(t, uint64(2), s.Busy)
	assert.Equal(t, uint64(1), s.TimedOut)
}
