package redisync_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu       sync.Mutex
	starts   []redisync.WaitInfo
	ends     []redisync.WaitEnd
	marked   []bool // per end: its ctx carried the value WaitStart added
	holds    []redisync.HoldEnd
	ticks    []redisync.RenewalTick
	attached *redisync.Client
	detached int
}

type markKey struct{}

func (r *recorder) observer() redisync.Observer {
	return redisync.Observer{
		WaitStart: func(ctx context.Context, w redisync.WaitInfo) context.Context {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.starts = append(r.starts, w)
			return context.WithValue(ctx, markKey{}, w.Name)
		},
		WaitEnd: func(ctx context.Context, w redisync.WaitEnd) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ends = append(r.ends, w)
			r.marked = append(r.marked, ctx.Value(markKey{}) == w.Name)
		},
		HoldEnd: func(h redisync.HoldEnd) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.holds = append(r.holds, h)
		},
		RenewalTick: func(t redisync.RenewalTick) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ticks = append(r.ticks, t)
		},
		Attach: func(c *redisync.Client) func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.attached = c
			return func() {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.detached++
			}
		},
	}
}

// last returns the latest WaitEnd and whether its ctx was WaitStart's.
func (r *recorder) last(t *testing.T) (redisync.WaitEnd, bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.ends)
	return r.ends[len(r.ends)-1], r.marked[len(r.marked)-1]
}

func (r *recorder) holdEnds() []redisync.HoldEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redisync.HoldEnd(nil), r.holds...)
}

func (r *recorder) renewalTicks() []redisync.RenewalTick {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redisync.RenewalTick(nil), r.ticks...)
}

// Every kind of acquisition and wait ends with its result, once, in the
// observer and in Stats: acquired, busy, timed out, cancelled, error.
func TestObserverWaitResults(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	var rec recorder
	c := redisync.New(rdb, redisync.WithObserver(rec.observer()))
	defer c.Close()

	check := func(what string, primitive string, want redisync.WaitResult, min time.Duration) {
		t.Helper()
		e, marked := rec.last(t)
		assert.Equal(t, primitive, e.Primitive, what)
		assert.Equal(t, want, e.Result, "%s: %s, want %s (err %v)", what, e.Result, want, e.Err)
		assert.True(t, marked, "%s: WaitEnd gets the context WaitStart returned", what)
		assert.GreaterOrEqual(t, e.Duration, min, what)
		assert.Equal(t, want == redisync.WaitCancelled || want == redisync.WaitError, e.Err != nil, what)
	}

	name := redistest.Key(t, "lock")
	holder, other := rlock.New(c, name), rlock.New(c, name)
	require.NoError(t, holder.Lock(ctx))
	check("Lock", "rlock", redisync.WaitAcquired, 0)
	ok, err := other.TryLock(ctx, 0)
	require.NoError(t, err)
	require.False(t, ok)
	check("TryLock 0", "rlock", redisync.WaitBusy, 0)
	ok, err = other.TryLock(ctx, 60*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	check("TryLock 60ms", "rlock", redisync.WaitTimedOut, 60*time.Millisecond)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
	err = other.Lock(tctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	check("Lock past the deadline", "rlock", redisync.WaitCancelled, 60*time.Millisecond)
	require.NoError(t, holder.Unlock(ctx))

	rw := rwlock.New(c, redistest.Key(t, "rw"))
	octx := redisync.WithOwner(ctx)
	require.NoError(t, rw.RLock(octx))
	check("RLock", "rwlock.read", redisync.WaitAcquired, 0)
	require.ErrorIs(t, rw.Lock(octx), redisync.ErrUpgrade)
	check("Lock while reading", "rwlock.write", redisync.WaitError, 0)
	require.NoError(t, rw.RUnlock(octx))

	sem := semaphore.New(c, redistest.Key(t, "sem"))
	_, err = sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))
	check("Acquire", "semaphore", redisync.WaitAcquired, 0)
	ok, err = sem.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok)
	check("TryAcquire 0", "semaphore", redisync.WaitBusy, 0)
	exp := semaphore.NewExpirable(c, redistest.Key(t, "exp"))
	_, ok, err = exp.TryAcquire(ctx, 30*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	check("expirable TryAcquire 30ms", "expirable_semaphore", redisync.WaitTimedOut, 30*time.Millisecond)

	latch := countdown.New(c, redistest.Key(t, "latch"))
	_, err = latch.TrySetCount(ctx, 1)
	require.NoError(t, err)
	ok, err = latch.TryWait(ctx, 0)
	require.NoError(t, err)
	require.False(t, ok)
	check("TryWait 0", "countdown", redisync.WaitBusy, 0)
	require.NoError(t, latch.CountDown(ctx))
	require.NoError(t, latch.Wait(ctx))
	check("Wait", "countdown", redisync.WaitAcquired, 0)

	// A call rejected before it waits is not an acquisition.
	_, err = other.TryLock(ctx, -time.Second)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)

	s := c.Stats()
	assert.Equal(t, uint64(4), s.Acquired)
	assert.Equal(t, uint64(3), s.Busy)
	assert.Equal(t, uint64(2), s.TimedOut)
	assert.Equal(t, uint64(1), s.Cancelled)
	assert.Equal(t, uint64(1), s.Errors)
	assert.Equal(t, s.Busy, s.Waits(redisync.WaitBusy))
	assert.Zero(t, s.Waiting)
	assert.Zero(t, s.Holds)
	rec.mu.Lock()
	assert.Len(t, rec.starts, 11)
	assert.Len(t, rec.ends, 11)
	assert.Equal(t, redisync.WaitInfo{Primitive: "rlock", Name: name, Wait: 60 * time.Millisecond}, rec.starts[2])
	rec.mu.Unlock()
}

// A wait that Close interrupts ends with WaitError; Attach saw the client
// and Close calls the detach function once.
func TestObserverCloseAndAttach(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Shared(t).Client(t)
	var rec recorder
	c := redisync.New(rdb, redisync.WithObserver(rec.observer()))
	rec.mu.Lock()
	assert.Same(t, c, rec.attached)
	rec.mu.Unlock()

	name := redistest.Key(t)
	holder := redisync.New(rdb)
	defer holder.Close()
	require.NoError(t, rlock.New(holder, name).Lock(ctx))
	errc := make(chan error, 1)
	go func() { errc <- rlock.New(c, name).Lock(ctx) }()
	// its own channel, and the lock's while the holder is foreign
	require.Eventually(t, func() bool { return c.Stats().PubSubChannels >= 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, c.Stats().Waiting)
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-errc, redisync.ErrClosed)
	e, _ := rec.last(t)
	assert.Equal(t, redisync.WaitError, e.Result)
	assert.Equal(t, uint64(1), c.Stats().Errors)
	require.NoError(t, c.Close())
	rec.mu.Lock()
	assert.Equal(t, 1, rec.detached)
	rec.mu.Unlock()
}

// Holds: their time, their renewals, and their loss, in the observer and
// in Stats.
func TestObserverHoldsAndRenewals(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	var rec recorder
	c := redisync.New(s.Client(t), redisync.WithObserver(rec.observer()),
		redisync.WithWatchdogTimeout(300*time.Millisecond)) // renewed every 100ms
	defer c.Close()

	name := redistest.Key(t)
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, 1, c.Stats().Holds)
	time.Sleep(250 * time.Millisecond)
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, c.Stats().Holds)

	ends := rec.holdEnds()
	require.Len(t, ends, 1)
	assert.Equal(t, "rlock", ends[0].Primitive)
	assert.Equal(t, name, ends[0].Name)
	assert.False(t, ends[0].Lost)
	assert.ErrorIs(t, ends[0].Err, redisync.ErrNotHeld)
	assert.GreaterOrEqual(t, ends[0].Duration, 250*time.Millisecond)
	st := c.Stats()
	assert.GreaterOrEqual(t, st.Renewals, uint64(2), "a 250ms hold renewed every 100ms")
	assert.Zero(t, st.RenewalFailures)

	// Another owner's hold is deleted behind its back: the next round
	// finds it gone.
	require.NoError(t, l.Lock(redisync.WithOwner(ctx)))
	require.NoError(t, s.Client(t).Del(ctx, name).Err())
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the loss was not noticed")
	}
	require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	ends = rec.holdEnds()
	require.Len(t, ends, 2)
	assert.True(t, ends[1].Lost)
	assert.ErrorIs(t, ends[1].Err, redisync.ErrLockLost)
	assert.Equal(t, uint64(1), c.Stats().HoldsLost)
	assert.Zero(t, c.Stats().Holds)

	// The round that found the hold gone reports it when it ends, after
	// Done closed.
	var renewed, lost int
	require.Eventually(t, func() bool {
		renewed, lost = 0, 0
		for _, tick := range rec.renewalTicks() {
			renewed += tick.Renewed
			lost += tick.Lost
			assert.Zero(t, tick.Failed)
		}
		return lost == 1
	}, 5*time.Second, time.Millisecond, "the round that found the hold gone reports it")
	assert.Equal(t, uint64(renewed), c.Stats().Renewals, "Stats and the observer count the same")
}

// Renewals that cannot reach Redis are failures, each round, until the
// hold is lost after a whole lease without one.
func TestStatsRenewalFailures(t *testing.T) {
	ctx := context.Background()
	p := redistest.NewProxy(t, redistest.Shared(t).Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	var rec recorder
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(600*time.Millisecond), redisync.WithObserver(rec.observer()))
	defer c.Close()
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	p.Block()
	defer p.Unblock()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold outlived its lease without renewal")
	}
	require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	st := c.Stats()
	assert.Positive(t, st.RenewalFailures)
	assert.Equal(t, uint64(1), st.HoldsLost)
	// The round that ended the hold reports when it ends, after Done
	// closed; then the watchdog stops.
	assert.Eventually(t, func() bool {
		var failed, lost int
		for _, tick := range rec.renewalTicks() {
			failed += tick.Failed
			lost += tick.Lost
		}
		return lost == 1 && uint64(failed) == c.Stats().RenewalFailures
	}, 5*time.Second, time.Millisecond, "Stats and the observer count the same failures")
	ends := rec.holdEnds()
	require.Len(t, ends, 1)
	assert.True(t, ends[0].Lost)
}

// The pub/sub gauges and the reconnect counter: a waiter's channel is
// counted while it waits; a killed pub/sub connection that comes back is a
// reconnect, and the waiter still gets the lock.
func TestStatsPubSub(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := redisync.New(s.Client(t))
	defer c.Close()
	name := redistest.Key(t)
	holder := rlock.New(c, name)
	require.NoError(t, holder.Lock(ctx))
	errc := make(chan error, 1)
	go func() { errc <- rlock.New(c, name).Lock(ctx) }()
	// its own channel, and the lock's while the holder is foreign
	require.Eventually(t, func() bool { return c.Stats().PubSubChannels >= 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, c.Stats().Waiting)
	require.NoError(t, s.Client(t).ClientKillByFilter(ctx, "TYPE", "pubsub").Err())
	require.Eventually(t, func() bool { return c.Stats().PubSubReconnects == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, holder.Unlock(ctx))
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock")
	}
	require.Eventually(t, func() bool { return c.Stats().PubSubChannels == 0 }, 5*time.Second, 5*time.Millisecond)
	st := c.Stats()
	assert.Zero(t, st.Waiting)
	assert.Equal(t, 1, st.Holds)
	assert.Equal(t, uint64(2), st.Acquired)
}

// Stats needs no observer and no live client; observers given twice both
// hear every event, and WaitStart's contexts chain.
func TestStatsWithoutObserverAndTwoObservers(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, redisync.Stats{}, (*redisync.Client)(nil).Stats())
	rdb := redistest.Shared(t).Client(t)
	plain := redisync.New(rdb)
	name := redistest.Key(t)
	ok, err := rlock.New(plain, name).TryLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, plain.Close())
	assert.Equal(t, uint64(1), plain.Stats().Acquired)
	assert.Equal(t, uint64(1), plain.Stats().HoldsLost, "Close ends a live hold as lost")

	type k1 struct{}
	var mu sync.Mutex
	var seen []string
	first := redisync.Observer{
		WaitStart: func(ctx context.Context, _ redisync.WaitInfo) context.Context {
			return context.WithValue(ctx, k1{}, "first")
		},
		WaitEnd: func(context.Context, redisync.WaitEnd) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, "first")
		},
	}
	second := redisync.Observer{
		WaitStart: func(ctx context.Context, _ redisync.WaitInfo) context.Context { return nil },
		WaitEnd: func(ctx context.Context, e redisync.WaitEnd) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, "second:"+ctx.Value(k1{}).(string)+":"+e.Result.String())
		},
	}
	c := redisync.New(rdb, redisync.WithObserver(first), redisync.WithObserver(second))
	defer c.Close()
	l := rlock.New(c, redistest.Key(t, "two")) // name stays locked until its lease ends
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	mu.Lock()
	assert.Equal(t, []string{"first", "second:first:acquired"}, seen)
	mu.Unlock()

	for r, s := range map[redisync.WaitResult]string{
		redisync.WaitAcquired: "acquired", redisync.WaitBusy: "busy", redisync.WaitTimedOut: "timed_out",
		redisync.WaitCancelled: "cancelled", redisync.WaitError: "error", 99: "unknown",
	} {
		assert.Equal(t, s, r.String())
	}
}
