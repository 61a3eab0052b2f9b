package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// Issue 40 item 1: both limiters' snapshots agree with what their next
// call sees, on a single node and on a Cluster, and take nothing.
func TestInspect(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	for what, c := range map[string]*redisync.Client{
		"single node": clienttest.Shared(t),
		"cluster":     clienttest.New(t, cl.Client(t)),
	} {
		t.Run(what, func(t *testing.T) {
			ctx := context.Background()
			g := NewGCRA(c, redistest.Key(t, "g"), Limit{Rate: 1, Period: time.Hour, Burst: 5})
			gi, err := g.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, GCRAInfo{Remaining: 5}, gi, "idle: a full burst")
			r, err := g.AllowN(ctx, 2)
			require.NoError(t, err)
			gi, err = g.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, r.Remaining, gi.Remaining)
			assert.InDelta(t, float64(2*time.Hour), float64(gi.ResetAfter), float64(time.Second))
			gi2, err := g.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, gi.Remaining, gi2.Remaining, "Inspect takes nothing")
			r, err = g.AllowN(ctx, 1)
			require.NoError(t, err)
			assert.EqualValues(t, gi.Remaining-1, r.Remaining, "the next call saw what Inspect showed")

			l := New(c, redistest.Key(t, "l"))
			_, err = l.Inspect(ctx)
			require.ErrorIs(t, err, ErrNotInitialized)
			_, err = l.TrySetRate(ctx, Overall, 10, time.Hour)
			require.NoError(t, err)
			ok, err := l.TryAcquire(ctx, 3, 0)
			require.NoError(t, err)
			require.True(t, ok)
			li, err := l.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, Info{Available: 7}, li)
		})
	}
}
