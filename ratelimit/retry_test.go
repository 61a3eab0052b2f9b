package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// A request that go-redis re-sends after a lost reply (it ran, the reply
// was dropped) is applied once: an acquisition grants once, a release
// gives back once, a reservation takes its slot once.
func TestRetrySafety(t *testing.T) {
	ctx := context.Background()
	c, p := clienttest.Proxied(t, redistest.Shared(t), redis.Options{})
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 10, time.Hour))
	// Load every script first: a dropped NOSCRIPT reply would prove nothing.
	_, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx, 1))
	g := NewGCRA(c, redistest.Key(t, "g"), Limit{Rate: 1, Period: time.Hour, Burst: 1})
	r, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, r.Cancel(ctx))
	require.NoError(t, g.Reset(ctx))

	drop := func(what string, op func() error) {
		t.Helper()
		require.NoError(t, rdb.Ping(ctx).Err())
		before := p.Dropped()
		p.DropNextReply()
		require.NoError(t, op(), what)
		require.Equal(t, before+1, p.Dropped(), "replies dropped during "+what)
	}
	drop("TryAcquire(3)", func() error {
		ok, err := l.TryAcquire(ctx, 3, 0)
		assert.True(t, ok)
		return err
	})
	n, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(7), n, "one grant of 3")
	assert.Equal(t, int64(1), rdb.ZCard(ctx, keys.RatePermits(name)).Val())
	drop("Release(2)", func() error { return l.Release(ctx, 2) })
	n, err = l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(9), n, "released once")

	drop("Reserve", func() error {
		r, err := g.Reserve(ctx, 1)
		assert.Zero(t, r.Delay())
		return err
	})
	r, err = g.Reserve(ctx, 1)
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Hour), float64(r.Delay()), float64(time.Second), "the lost reply's reservation took one slot")
}

// WithKeepAlive: the limiter's keys expire after the keep-alive without
// use, and it is then not initialized.
func TestKeepAlive(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, PerClient, 2, time.Second, WithKeepAlive(2*time.Second)))
	ok, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	for _, k := range []string{name, keys.RateClientValue(name, c.ID()), keys.RateClientPermits(name, c.ID()), keys.RateClients(name)} {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.True(t, ttl > 0 && ttl <= 2*time.Second, "%s: PTTL %v", k, ttl)
	}
	redistest.Eventually(t, 10*time.Second, "the limiter expired", func() error {
		_, err := l.Config(ctx)
		if err == nil {
			return assert.AnError
		}
		return nil
	})
	_, err = l.TryAcquire(ctx, 1, 0)
	require.ErrorIs(t, err, ErrNotInitialized)
	assert.Zero(t, rdb.Exists(ctx, keys.RateClientValue(name, c.ID()), keys.RateClientPermits(name, c.ID()), keys.RateClients(name)).Val())
}

// SetRate resets the budgets of every redisync client, not only the
// caller's (Redisson 3.52 resets the caller's only).
func TestSetRateResetsEveryClient(t *testing.T) {
	a, b := clienttest.Shared(t), clienttest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	require.NoError(t, New(a, name).SetRate(ctx, PerClient, 2, time.Hour))
	for _, c := range []*Limiter{New(a, name), New(b, name)} {
		ok, err := c.TryAcquire(ctx, 2, 0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, New(a, name).SetRate(ctx, PerClient, 2, time.Hour))
	n, err := New(b, name).AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the other client's budget is full again")
}
