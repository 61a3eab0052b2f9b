package redisyncotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
)

// The decisions of a Limiter and of a GCRA are counted under the
// primitives "rate_limiter" and "gcra": allowed as acquired, denied as busy
// (a single attempt) or timed_out (a wait that cannot succeed in time),
// and how long allowed calls waited; each has a span with the limiter's
// name.
func TestRateLimiterDecisions(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	c := redisync.New(redistest.Shared(t).Client(t), tel.option())
	defer c.Close()

	// A Limiter of 1 per 100 ms: allowed, denied, allowed after a wait;
	// one of 1 per hour: a wait of a minute that cannot succeed.
	l := ratelimit.New(c, redistest.Key(t, "rl"))
	require.NoError(t, l.SetRate(ctx, ratelimit.Overall, 1, 100*time.Millisecond))
	ok, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, l.Acquire(ctx, 1))
	hour := ratelimit.New(c, redistest.Key(t, "rl-hour"))
	require.NoError(t, hour.SetRate(ctx, ratelimit.Overall, 1, time.Hour))
	ok, err = hour.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = hour.TryAcquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "hopeless: returns at once")

	// A GCRA of 10 per second, burst 1: the same; one of 1 per hour, a
	// WaitN past its context's deadline.
	g := ratelimit.NewGCRA(c, redistest.Key(t, "g"), ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 1})
	ok, err = g.Allow(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = g.Allow(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, g.Wait(ctx))
	gh := ratelimit.NewGCRA(c, redistest.Key(t, "g-hour"), ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1})
	ok, err = gh.Allow(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.ErrorIs(t, gh.WaitN(dctx, 1), context.DeadlineExceeded)

	ms := tel.metrics(t)
	for _, primitive := range []string{"rate_limiter", "gcra"} {
		for result, want := range map[string]int64{"acquired": 3, "busy": 1, "timed_out": 1, "cancelled": 0, "error": 0} {
			attrs := []string{"redisync.primitive=" + primitive, "redisync.result=" + result}
			assert.Equal(t, want, value(t, ms, "redisync.acquisitions", attrs...), "acquisitions %v", attrs)
			assert.Equal(t, want, value(t, ms, "redisync.wait.duration", attrs...), "wait.duration count %v", attrs)
		}
		assert.GreaterOrEqual(t, histogramSum(ms, "redisync.wait.duration",
			"redisync.primitive="+primitive, "redisync.result=acquired"), 0.05, "%s: the allowed wait", primitive)
	}
	assert.Equal(t, int64(10), value(t, ms, "redisync.acquisitions"))

	names := map[string]string{}
	for _, s := range tel.spans.Ended() {
		if s.Name() != redisyncotel.SpanName {
			continue
		}
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		names[m["redisync.name"]] = m["redisync.primitive"]
	}
	assert.Equal(t, map[string]string{l.Name(): "rate_limiter", hour.Name(): "rate_limiter",
		g.Name(): "gcra", gh.Name(): "gcra"}, names)
}
