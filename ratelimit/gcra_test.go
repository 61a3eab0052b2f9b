package ratelimit

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// GCRA allows exactly its burst at once, then one event per emission
// interval.
func TestGCRABurstThenRate(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	g := NewGCRA(c, redistest.Key(t, "g"), Limit{Rate: 1, Period: time.Hour, Burst: 5})
	for i := range 5 {
		r, err := g.AllowN(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, int64(1), r.Allowed, "event %d of the burst", i)
		assert.Equal(t, int64(4-i), r.Remaining)
		assert.Zero(t, r.RetryAfter)
		assert.InDelta(t, float64(time.Duration(i+1)*time.Hour), float64(r.ResetAfter), float64(time.Second), "reset after")
	}
	r, err := g.AllowN(ctx, 1)
	require.NoError(t, err)
	require.Zero(t, r.Allowed, "past the burst")
	assert.InDelta(t, float64(time.Hour), float64(r.RetryAfter), float64(time.Second), "retry after one interval")
	// Regression (issue 40): above the burst, AllowN returned
	// {Allowed: 0, RetryAfter: -1ns} and nil, which an HTTP middleware
	// turned into "Retry-After: 0" for a request that can never pass.
	r, err = g.AllowN(ctx, 6)
	require.ErrorIs(t, err, ErrExceedsRate, "above the burst: never, as WaitN says")
	assert.Equal(t, Result{}, r)
	require.NoError(t, g.Reset(ctx))
	r, err = g.AllowN(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, int64(5), r.Allowed, "a full burst after Reset")

	// Then the rate: one event per emission interval (500ms here), as
	// soon as RetryAfter says.
	fast := NewGCRA(c, redistest.Key(t, "fast"), Limit{Rate: 2, Period: time.Second, Burst: 1})
	last := time.Now()
	ok, err := fast.Allow(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	for allowed := 0; allowed < 3; {
		sent := time.Now()
		r, err := fast.AllowN(ctx, 1)
		require.NoError(t, err)
		if r.Allowed == 1 {
			// Only when an interval has passed since the last one
			// (this machine may have stalled between the calls).
			require.GreaterOrEqual(t, sent.Sub(last), 450*time.Millisecond, "allowed within the interval")
			last, allowed = sent, allowed+1
			continue
		}
		require.Greater(t, r.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, r.RetryAfter, 500*time.Millisecond)
		time.Sleep(r.RetryAfter)
		last = time.Now()
		ok, err := fast.Allow(ctx)
		require.NoError(t, err)
		require.True(t, ok, "allowed once RetryAfter has passed")
		allowed++
	}
}

// Four processes allow events as fast as they can: over every window of
// their allowed events, at most Burst + Rate·T/Period.
func TestGCRAExactAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "g")
	limit := Limit{Rate: 100, Period: time.Second, Burst: 10}
	var mu sync.Mutex
	var times []int64 // server µs of each allowed event
	var wg sync.WaitGroup
	stop := time.Now().Add(700 * time.Millisecond)
	for range 4 {
		g := NewGCRA(clienttest.Shared(t), name, limit)
		g.taken = func(at, n int64) {
			mu.Lock()
			defer mu.Unlock()
			for range n {
				times = append(times, at)
			}
		}
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					_, err := g.Allow(ctx)
					if !assert.NoError(t, err) {
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(times)
	require.Greater(t, len(times), int(limit.Burst), "allowed more than the burst in 0.7s")
	em := limit.emission()
	for i := range times {
		for j := i; j < len(times); j++ {
			allowed := int64(j - i + 1)
			bound := limit.Burst + (times[j]-times[i])/em
			if !assert.LessOrEqual(t, allowed, bound, "events %d..%d over %dµs", i, j, times[j]-times[i]) {
				return
			}
		}
	}
}

// Reserve takes future slots; Cancel gives a slot back when no later
// reservation relies on it, and nothing otherwise (x/time/rate's rule).
func TestGCRAReserveCancel(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	g := NewGCRA(c, redistest.Key(t, "g"), Limit{Rate: 1, Period: time.Hour, Burst: 1})
	now, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	require.True(t, now.OK())
	assert.Zero(t, now.Delay())
	r1, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	require.InDelta(t, float64(time.Hour), float64(r1.Delay()), float64(time.Second))
	require.NoError(t, r1.Cancel(ctx))
	require.NoError(t, r1.Cancel(ctx), "idempotent")
	r2, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Hour), float64(r2.Delay()), float64(time.Second), "the cancelled slot is given back")

	r3, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	assert.InDelta(t, float64(2*time.Hour), float64(r3.Delay()), float64(time.Second))
	require.NoError(t, r2.Cancel(ctx)) // r3 relies on it: nothing back
	r4, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	assert.InDelta(t, float64(3*time.Hour), float64(r4.Delay()), float64(time.Second))
	require.NoError(t, r4.Cancel(ctx))  // the last one: back
	require.NoError(t, now.Cancel(ctx)) // its time has come: nothing
	r5, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	assert.InDelta(t, float64(3*time.Hour), float64(r5.Delay()), float64(time.Second))

	big, err := g.Reserve(ctx, 2)
	require.NoError(t, err)
	assert.False(t, big.OK(), "above the burst")
	assert.Equal(t, time.Duration(-1), big.Delay())
}

// WaitN whose slot is past ctx's deadline fails at once and reserves
// nothing; within it, it waits and takes the slot.
func TestGCRAWaitFailsFast(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t, "g")
	g := NewGCRA(c, name, Limit{Rate: 1, Period: time.Hour, Burst: 1})
	require.NoError(t, g.Wait(ctx), "a full burst: at once")
	rdb := rdbOf(c)
	before := rdb.Get(ctx, name).Val()
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	err := g.WaitN(dctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, dctx.Err(), "before the deadline")
	require.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, before, rdb.Get(ctx, name).Val(), "nothing reserved")
	require.ErrorIs(t, g.WaitN(ctx, 2), ErrExceedsRate)

	fast := NewGCRA(c, redistest.Key(t, "fast"), Limit{Rate: 20, Period: time.Second, Burst: 1})
	require.NoError(t, fast.Wait(ctx))
	require.NoError(t, fast.Wait(ctx), "waits 50ms for its slot")

	// Cancelled while sleeping: the reservation is given back.
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	slow := NewGCRA(c, redistest.Key(t, "slow"), Limit{Rate: 1, Period: time.Hour, Burst: 1})
	require.NoError(t, slow.Wait(ctx))
	tat := rdb.Get(ctx, slow.Name()).Val()
	go func() { done <- slow.Wait(cctx) }()
	require.Eventually(t, func() bool { return rdb.Get(ctx, slow.Name()).Val() != tat }, 5*time.Second, time.Millisecond)
	stop()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, tat, rdb.Get(ctx, slow.Name()).Val(), "given back")
}
