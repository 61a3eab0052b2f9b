package core

import (
	"context"
	"errors"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// One lease rule for every primitive: whole milliseconds, rounded up, so a
// positive lease never becomes PEXPIRE 0 (rlock once sent 500µs as 0 and
// the lock was gone the moment it was taken).
func TestMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {500 * time.Microsecond, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {time.Second, 1000}} {
		assert.Equal(t, c.want, Millis(c.d), "Millis(%v)", c.d)
	}
	// The lease rule (API.md, Durations): at least 1 ms, at most 2^43 ms,
	// rounded up to whole milliseconds in between.
	for _, d := range []time.Duration{math.MinInt64, -time.Millisecond, 0, 30, 500 * time.Microsecond, time.Millisecond - 1, MaxLease + 1, math.MaxInt64} {
		assert.ErrorIs(t, CheckLease("rlock", d), errs.ErrInvalidArgument, "lease %v", d)
	}
	for _, d := range []time.Duration{time.Millisecond, time.Millisecond + 1, time.Hour, MaxLease} {
		assert.NoError(t, CheckLease("rlock", d), "lease %v", d)
	}
	assert.EqualValues(t, 1<<43, Millis(MaxLease))
}

// fakeAttempt is an Attempt whose outcome the test decides: its n-th call
// (from 1) answers result(n). A call decides its answer before it counts
// itself, so once a test sees n calls, the n-th answer is given. Wait makes
// one attempt at a time.
type fakeAttempt struct {
	calls  atomic.Int64
	result func(n int64) (bool, time.Duration, error)
}

func (f *fakeAttempt) try(context.Context) (bool, time.Duration, error) {
	ok, retry, err := f.result(f.calls.Load() + 1)
	f.calls.Add(1)
	return ok, retry, err
}

// never is an attempt result that never succeeds and gives no hint.
func never(int64) (bool, time.Duration, error) { return false, 0, nil }

// giveUps counts GiveUp calls.
type giveUps struct{ n atomic.Int64 }

func (g *giveUps) GiveUp(ctx context.Context) {
	if ctx.Err() == nil { // a detached context, even when the wait's ended
		g.n.Add(1)
	}
}

// WaitSpec is a wait as these tests describe it: a pub/sub channel or a
// spin, a bound, an attempt and what giving up cleans.
type WaitSpec struct {
	Channel string
	Wake    pubsub.Policy
	Spin    *Spin
	GiveUp  GiveUpper
	Forever bool
	Wait    time.Duration
	Try     Attempt
}

// runWait runs s as the engine runs a side's wait (acquisition.wait), with
// a fake attempt instead of the acquisition's.
func runWait(ctx context.Context, c *Client, s WaitSpec) (v bool, err error) {
	b := Bound{Forever: s.Forever, Wait: s.Wait}
	if s.GiveUp != nil {
		if !c.bg.Track() {
			return false, errs.ErrClosed
		}
		defer c.bg.Untrack()
		defer func() {
			if !v {
				giveUp(ctx, c.bg, s.GiveUp, false)
			}
		}()
	}
	l := &loop{w: c.Waits(), try: s.Try, channel: s.Channel, deadline: b.deadline()}
	if s.Spin != nil {
		r, err := l.spin(ctx, s.Spin)
		return r == acquired, err
	}
	r, err := l.pubsub(ctx, &PubSub{Channel: s.Channel, Wake: s.Wake}, nil, b)
	return r == acquired, err
}

// waitSpec returns a WaitSpec for f on a fresh channel, counting GiveUp
// calls in g.
func waitSpec(t *testing.T, f *fakeAttempt, g *giveUps) WaitSpec {
	return WaitSpec{Channel: redistest.Key(t, "ch"), Wake: pubsub.WakeOne, Try: f.try, GiveUp: g}
}

// newWait returns a fake attempt answering result, its GiveUp counter and
// a WaitSpec for them on a fresh channel.
func newWait(t *testing.T, result func(n int64) (bool, time.Duration, error)) (*fakeAttempt, *giveUps, WaitSpec) {
	f := &fakeAttempt{result: result}
	g := &giveUps{}
	return f, g, waitSpec(t, f, g)
}

// waitResult is what a Wait in the background returned, and when.
type waitResult struct {
	ok  bool
	err error
	at  time.Time
}

// waitInBackground runs runWait(ctx, c, s) in a goroutine.
func waitInBackground(ctx context.Context, c *Client, s WaitSpec) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		ok, err := runWait(ctx, c, s)
		ch <- waitResult{ok, err, time.Now()}
	}()
	return ch
}

// awaitResult returns the background Wait's result, failing the test after d.
func awaitResult(t *testing.T, ch <-chan waitResult, d time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		require.FailNowf(t, "Wait did not return", "not within %v", d)
		return waitResult{}
	}
}

// subscribed waits until c's multiplexer has n waiters.
func subscribed(t *testing.T, c *Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Mux().Stats().Waiters == n }, 5*time.Second, redistest.Tick, "%d pub/sub waiters", n)
}

// unsubscribed checks that c's multiplexer comes to hold nothing.
func unsubscribed(t *testing.T, c *Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := c.Mux().Stats()
		return s.Channels == 0 && s.Waiters == 0 && s.Leaving == 0
	}, 5*time.Second, redistest.Tick, "subscriptions left")
}

// A first attempt that succeeds returns at once: no subscription, no
// connection, no GiveUp.
func TestWaitSuccessAtOnce(t *testing.T) {
	c := sharedClient(t, Options{})
	f := &fakeAttempt{result: func(int64) (bool, time.Duration, error) { return true, 0, nil }}
	var g giveUps
	for _, s := range []WaitSpec{
		{Forever: true},
		{Wait: time.Minute},
		{Wait: 0},
	} {
		spec := waitSpec(t, f, &g)
		spec.Forever, spec.Wait = s.Forever, s.Wait
		ok, err := runWait(context.Background(), c, spec)
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.EqualValues(t, 3, f.calls.Load(), "one attempt per Wait")
	assert.Zero(t, g.n.Load(), "GiveUp after a success")
	assert.Equal(t, pubsub.Stats{}, c.Mux().Stats(), "a wait that succeeded at once subscribed")
}

// Wait 0 makes a single attempt and does not subscribe.
func TestWaitZeroIsOneAttempt(t *testing.T) {
	c := sharedClient(t, Options{})
	f, g, spec := newWait(t, never)
	ok, err := runWait(context.Background(), c, spec)
	require.NoError(t, err)
	require.False(t, ok)
	assert.EqualValues(t, 1, f.calls.Load(), "attempts")
	assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	assert.Equal(t, pubsub.Stats{}, c.Mux().Stats(), "Wait 0 subscribed")
}

// A message on the channel wakes the waiter, which tries again: the
// re-check interval is a minute, so only the message can have woken it.
func TestWaitWokenByMessage(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	var released atomic.Bool
	f, g, spec := newWait(t, func(int64) (bool, time.Duration, error) { return released.Load(), 0, nil })
	spec.Forever = true
	done := waitInBackground(context.Background(), c, spec)
	// Attempt 1 fails, the waiter subscribes, attempt 2 (the re-check after
	// the subscription) fails, and the waiter waits.
	require.Eventually(t, func() bool { return f.calls.Load() == 2 }, 5*time.Second, redistest.Tick, "two attempts")
	subscribed(t, c, 1)
	released.Store(true)
	sent := time.Now()
	require.NoError(t, c.Redis().Publish(context.Background(), spec.Channel, "0").Err())
	r := awaitResult(t, done, 5*time.Second)
	require.NoError(t, r.err)
	require.True(t, r.ok)
	assert.Less(t, r.at.Sub(sent), 2*time.Second, "woken long after the message")
	assert.EqualValues(t, 3, f.calls.Load(), "attempts: first, after subscribing, after the message")
	assert.Zero(t, g.n.Load(), "GiveUp after a success")
	unsubscribed(t, c)
}

// An attempt's retry hint wakes the waiter without a message: here after
// 300ms, the re-check cap being a minute.
func TestWaitRetryHint(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	start := time.Now()
	const hint = 300 * time.Millisecond
	f, _, spec := newWait(t, func(int64) (bool, time.Duration, error) {
		return time.Since(start) >= hint, hint, nil
	})
	spec.Forever = true
	ok, err := runWait(context.Background(), c, spec)
	require.NoError(t, err)
	require.True(t, ok)
	d := time.Since(start)
	assert.GreaterOrEqual(t, d, hint)
	assert.Less(t, d, 3*time.Second, "the hint was not honoured (the re-check cap is a minute)")
	assert.LessOrEqual(t, f.calls.Load(), int64(4), "attempts: first, after subscribing, after the hint (and one spare for a late timer)")
	unsubscribed(t, c)
}

// The client's re-check interval caps a longer hint: messages can be lost.
func TestWaitRecheckCapsHint(t *testing.T) {
	const recheck = 200 * time.Millisecond
	c := sharedClient(t, Options{Recheck: recheck})
	start := time.Now()
	_, _, spec := newWait(t, func(n int64) (bool, time.Duration, error) {
		return n >= 3, time.Minute, nil // succeeds on the first re-check
	})
	spec.Forever = true
	ok, err := runWait(context.Background(), c, spec)
	require.NoError(t, err)
	require.True(t, ok)
	d := time.Since(start)
	assert.GreaterOrEqual(t, d, recheck)
	assert.Less(t, d, 3*time.Second, "the re-check interval did not cap a minute's hint")
	unsubscribed(t, c)
}

// A wait that runs out returns (false, nil) after its wait, with GiveUp
// called once and the subscription released.
func TestWaitRunsOut(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	f, g, spec := newWait(t, never)
	spec.Wait = 300 * time.Millisecond
	start := time.Now()
	ok, err := runWait(context.Background(), c, spec)
	d := time.Since(start)
	require.NoError(t, err)
	require.False(t, ok)
	assert.GreaterOrEqual(t, d, spec.Wait)
	assert.Less(t, d, 3*time.Second)
	assert.GreaterOrEqual(t, f.calls.Load(), int64(3), "attempts: first, after subscribing, at the end of the wait")
	assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	unsubscribed(t, c)
}

// A wait ended by ctx returns an error wrapping ctx.Err() and the cause,
// calls GiveUp once and leaves no subscription.
func TestWaitContextEnds(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	t.Run("cancel", func(t *testing.T) {
		_, g, spec := newWait(t, never)
		spec.Forever = true
		cause := errors.New("the caller went away")
		ctx, cancel := context.WithCancelCause(context.Background())
		done := waitInBackground(ctx, c, spec)
		subscribed(t, c, 1)
		cancel(cause)
		r := awaitResult(t, done, 5*time.Second)
		require.False(t, r.ok)
		require.ErrorIs(t, r.err, context.Canceled)
		require.ErrorIs(t, r.err, cause)
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
		unsubscribed(t, c)
	})
	t.Run("deadline", func(t *testing.T) {
		_, g, spec := newWait(t, never)
		spec.Forever = true
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		ok, err := runWait(ctx, c, spec)
		require.False(t, ok)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
		unsubscribed(t, c)
	})
	t.Run("attempt fails because ctx ended", func(t *testing.T) {
		// An attempt's own error after ctx ended is reported as ctx's.
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeAttempt{result: func(int64) (bool, time.Duration, error) {
			cancel()
			return false, 0, errors.New("i/o timeout")
		}}
		var g giveUps
		ok, err := runWait(ctx, c, waitSpec(t, f, &g))
		require.False(t, ok)
		require.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	})
}

// An attempt's error ends the wait with that error, before or after
// subscribing.
func TestWaitAttemptError(t *testing.T) {
	c := sharedClient(t, Options{Recheck: 50 * time.Millisecond})
	boom := errors.New("boom")
	for _, failAt := range []int64{1, 3} {
		f, g, spec := newWait(t, func(n int64) (bool, time.Duration, error) {
			if n == failAt {
				return false, 0, boom
			}
			return false, 0, nil
		})
		spec.Forever = true
		ok, err := runWait(context.Background(), c, spec)
		require.False(t, ok)
		require.ErrorIs(t, err, boom, "failing attempt %d", failAt)
		assert.Equal(t, failAt, f.calls.Load(), "no attempt after the error")
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	}
	unsubscribed(t, c)
}

// Close ends a wait in progress with errs.ErrClosed, and a Wait on a closed
// client makes no attempt.
func TestWaitClosed(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	f, g, spec := newWait(t, never)
	spec.Forever = true
	done := waitInBackground(context.Background(), c, spec)
	subscribed(t, c, 1)
	require.NoError(t, c.Close())
	r := awaitResult(t, done, 5*time.Second)
	require.False(t, r.ok)
	require.ErrorIs(t, r.err, errs.ErrClosed)
	assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")

	calls := f.calls.Load()
	ok, err := runWait(context.Background(), c, spec)
	require.False(t, ok)
	require.ErrorIs(t, err, errs.ErrClosed)
	assert.Equal(t, calls, f.calls.Load(), "an attempt on a closed client")
}

// A spin wait repeats attempts with a growing pause and never subscribes.
func TestWaitSpin(t *testing.T) {
	c := sharedClient(t, Options{Recheck: time.Minute})
	spin := &Spin{Min: 4 * time.Millisecond, Max: 16 * time.Millisecond}

	t.Run("success", func(t *testing.T) {
		f, g, spec := newWait(t, func(n int64) (bool, time.Duration, error) { return n == 5, time.Hour, nil })
		spec.Spin, spec.Forever = spin, true
		start := time.Now()
		ok, err := runWait(context.Background(), c, spec)
		require.NoError(t, err)
		require.True(t, ok)
		assert.EqualValues(t, 5, f.calls.Load(), "attempts")
		// Pauses drawn from the upper half of 4, 8, 16, 16ms: at least 22ms.
		// The retry hint (an hour) is not a spin wait's business.
		assert.GreaterOrEqual(t, time.Since(start), 22*time.Millisecond)
		assert.Zero(t, g.n.Load(), "GiveUp after a success")
	})
	t.Run("runs out", func(t *testing.T) {
		f, g, spec := newWait(t, never)
		spec.Spin, spec.Wait = spin, 150*time.Millisecond
		start := time.Now()
		ok, err := runWait(context.Background(), c, spec)
		require.NoError(t, err)
		require.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), spec.Wait)
		// At most one attempt per 2ms: the pause never drops below Min/2.
		assert.GreaterOrEqual(t, f.calls.Load(), int64(5), "attempts")
		assert.LessOrEqual(t, f.calls.Load(), int64(80), "attempts")
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	})
	t.Run("ctx", func(t *testing.T) {
		_, g, spec := newWait(t, never)
		spec.Spin, spec.Forever = spin, true
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		ok, err := runWait(ctx, c, spec)
		require.False(t, ok)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	})
	assert.Equal(t, pubsub.Stats{}, c.Mux().Stats(), "a spin wait subscribed")

	t.Run("closed", func(t *testing.T) {
		f, g, spec := newWait(t, never)
		spec.Spin, spec.Forever = spin, true
		done := waitInBackground(context.Background(), c, spec)
		require.Eventually(t, func() bool { return f.calls.Load() >= 2 }, 5*time.Second, redistest.Tick, "spin attempts")
		require.NoError(t, c.Close())
		r := awaitResult(t, done, 5*time.Second)
		require.ErrorIs(t, r.err, errs.ErrClosed)
		assert.EqualValues(t, 1, g.n.Load(), "GiveUp calls")
	})
}

// Resend re-sends after network errors only, until an answer, ctx's end or
// the request's lifetime.
func TestResend(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	c := NewClient(rdb, Options{})
	defer c.Close()
	netErr := &net.OpError{Op: "dial", Err: errors.New("refused")}
	calls := 0
	err := c.Requests().Resend(context.Background(), func() error {
		calls++
		if calls < 3 {
			return netErr
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Resend = %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	var reply error = replyErr("REDISYNC_LATE late")
	if err := c.Requests().Resend(context.Background(), func() error { calls++; return reply }); err != reply || calls != 1 {
		t.Fatalf("an error reply is an answer: %v after %d calls", err, calls)
	}
	calls = 0
	loading := replyErr("LOADING Redis is loading the dataset in memory")
	err = c.Requests().Resend(context.Background(), func() error {
		calls++
		if calls == 1 {
			return loading
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("a reply saying the request did not run is re-sent: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	calls = 0
	if err := c.Requests().Resend(ctx, func() error { calls++; return netErr }); err != netErr || calls < 2 {
		t.Fatalf("Resend until ctx ends = %v after %d calls", err, calls)
	}
}

// replyErr is an error reply from Redis (redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
