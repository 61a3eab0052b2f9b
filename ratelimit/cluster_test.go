package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// Both limiters work on a Redis Cluster: every key a script touches,
// the per-client keys it builds from prefixes included, shares the
// limiter's slot, and Delete finds a Java client's budget on the master
// of that slot.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	a, b := clienttest.New(t, cl.Client(t)), clienttest.New(t, cl.Client(t))
	for _, name := range []string{redistest.Key(t, "rl"), "{" + redistest.Key(t, "tenant") + "}:rl"} {
		l, other := New(a, name), New(b, name)
		require.NoError(t, l.SetRate(ctx, PerClient, 2, time.Hour), name)
		for _, x := range []*Limiter{l, other} {
			ok, err := x.TryAcquire(ctx, 2, 0)
			require.NoError(t, err, name)
			require.True(t, ok, name)
		}
		ok, err := other.UpdateRate(ctx, PerClient, 3, time.Hour)
		require.NoError(t, err, name)
		require.True(t, ok, name)
		n, err := l.AvailablePermits(ctx)
		require.NoError(t, err, name)
		assert.Equal(t, int64(1), n, name+": kept state")
		require.NoError(t, l.Release(ctx, 1), name)
		v, err := javaAcquire(t, rdb, name, "java-1", 1) // unregistered: found by a SCAN of the slot's master
		require.NoError(t, err, name)
		require.Nil(t, v, name)
		ok, err = l.Delete(ctx)
		require.NoError(t, err, name)
		require.True(t, ok, name)
		for _, k := range []string{name, keys.RateClientValue(name, a.ID()), keys.RateClientPermits(name, b.ID()), keys.RateClients(name),
			keys.RateClientValue(name, "java-1"), keys.RateClientPermits(name, "java-1")} {
			assert.Zero(t, rdb.Exists(ctx, k).Val(), k+" deleted")
		}

		g := NewGCRA(a, name+":gcra", Limit{Rate: 1, Period: time.Hour, Burst: 1})
		r, err := g.Reserve(ctx, 1)
		require.NoError(t, err, name)
		require.True(t, r.OK())
		r2, err := g.Reserve(ctx, 1)
		require.NoError(t, err, name)
		require.NoError(t, r2.Cancel(ctx), name)
		allowed, err := g.Allow(ctx)
		require.NoError(t, err, name)
		require.False(t, allowed, name)
		require.NoError(t, g.Reset(ctx), name)
	}
}
