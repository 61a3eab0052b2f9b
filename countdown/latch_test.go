package countdown_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

// result is what a waiter goroutine reports.
type result struct {
	err error
	at  time.Time
}

// startWaiters starts n goroutines calling l.Wait and returns the channel
// their results arrive on.
func startWaiters(ctx context.Context, l *countdown.Latch, n int, out chan<- result) {
	for range n {
		go func() {
			err := l.Wait(ctx)
			out <- result{err, time.Now()}
		}()
	}
}

// collect receives n results, failing the test on an error or after d.
func collect(t *testing.T, in <-chan result, n int, d time.Duration) []time.Time {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	ats := make([]time.Time, 0, n)
	for range n {
		select {
		case r := <-in:
			require.NoError(t, r.err, "Wait")
			ats = append(ats, r.at)
		case <-timer.C:
			require.FailNowf(t, "waiters did not return", "%d of %d waiters returned within %v", len(ats), n, d)
		}
	}
	return ats
}

// latest returns the greatest delay from start to any of ats.
func latest(start time.Time, ats []time.Time) time.Duration {
	var d time.Duration
	for _, at := range ats {
		d = max(d, at.Sub(start))
	}
	return d
}

func mustCount(t *testing.T, l *countdown.Latch, want int64) {
	t.Helper()
	n, err := l.Count(context.Background())
	require.NoError(t, err, "Count")
	require.Equal(t, want, n, "Count")
}

func mustSet(t *testing.T, l *countdown.Latch, n int64) {
	t.Helper()
	ok, err := l.TrySetCount(context.Background(), n)
	require.NoError(t, err, "TrySetCount(%d)", n)
	require.True(t, ok, "TrySetCount(%d)", n)
}

func mustCountDown(t *testing.T, l *countdown.Latch) {
	t.Helper()
	require.NoError(t, l.CountDown(context.Background()), "CountDown")
}

func TestName(t *testing.T) {
	require.Equal(t, "batch", countdown.New(nil, "batch").Name())
}

// Redisson layout: the count is a plain string key, the name itself.
func TestTrySetCount(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(clienttest.Shared(t), name)

	mustCount(t, l, 0)
	mustSet(t, l, 3)
	mustCount(t, l, 3)
	require.Equal(t, any("3"), s.Do(t, "GET", name), "GET %s", name)
	require.Equal(t, any(int64(-1)), s.Do(t, "TTL", name), "TTL %s (a latch does not expire)", name)

	// Redisson: trySetCount on a set latch is false and changes nothing.
	ok, err := l.TrySetCount(ctx, 5)
	require.NoError(t, err, "TrySetCount on a set latch")
	require.False(t, ok, "TrySetCount on a set latch")
	mustCount(t, l, 3)

	// Another client's handle sees the same latch.
	mustCount(t, countdown.New(clienttest.Shared(t), name), 3)

	// The largest count, 2^53, is set and counted down exactly.
	top := countdown.New(clienttest.Shared(t), redistest.Key(t, "top"))
	mustSet(t, top, 1<<53)
	require.NoError(t, top.CountDown(ctx))
	mustCount(t, top, 1<<53-1)
	_, err = top.Delete(ctx)
	require.NoError(t, err)
}

// Redisson: 8 waiters all return promptly when the third of three
// count-downs lands, and not before.
func TestCountDownOpensForAllWaiters(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	c := clienttest.Shared(t)
	l := countdown.New(c, name)
	worker := countdown.New(clienttest.Shared(t), name)
	mustSet(t, l, 3)

	out := make(chan result, 8)
	startWaiters(ctx, l, 8, out)
	require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 8 }, 5*time.Second, redistest.Tick, "8 waiters subscribed")

	mustCountDown(t, worker)
	mustCountDown(t, worker)
	mustCount(t, l, 1)
	require.Never(t, func() bool { return len(out) > 0 }, 200*time.Millisecond, redistest.Tick, "a waiter returned with the count at 1")

	start := time.Now()
	mustCountDown(t, worker)
	d := latest(start, collect(t, out, 8, 5*time.Second))
	t.Logf("8 waiters returned within %v of the last count-down", d)
	assert.Less(t, d, time.Second, "waiters returned too long after the last count-down")
	require.Equal(t, any(int64(0)), s.Do(t, "EXISTS", name), "the counter still exists at zero")
	mustCount(t, l, 0)
	require.Eventually(t, func() bool { return clienttest.Stats(c).Channels == 0 }, 5*time.Second, redistest.Tick, "subscription released")
}

// The figure: 8 waiters in one client and waiters in two other
// clients, each with its own connection, all return within a few hundred
// milliseconds of the last count-down, made by a fourth client.
func TestWaitersAcrossClients(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	clients := []*redisync.Client{clienttest.Shared(t), clienttest.Shared(t), clienttest.Shared(t)}
	counts := []int{8, 4, 4}
	coordinator := countdown.New(clienttest.Shared(t), name)
	mustSet(t, coordinator, 2)

	out := make(chan result, 16)
	for i, c := range clients {
		startWaiters(ctx, countdown.New(c, name), counts[i], out)
	}
	for i, c := range clients {
		require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == counts[i] }, 5*time.Second, redistest.Tick, "waiters subscribed")
	}
	mustCountDown(t, coordinator)

	start := time.Now()
	mustCountDown(t, coordinator)
	d := latest(start, collect(t, out, 16, 5*time.Second))
	t.Logf("16 waiters in 3 clients returned within %v of the last count-down", d)
	assert.Less(t, d, time.Second, "waiters returned too long after the last count-down")
}

// The count never goes below zero: the counter is deleted at zero, and
// count-downs of an open latch change nothing.
func TestCountNeverBelowZero(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(clienttest.Shared(t), name)
	mustSet(t, l, 2)
	for range 5 {
		mustCountDown(t, l)
	}
	mustCount(t, l, 0)
	require.Equal(t, any(int64(0)), s.Do(t, "EXISTS", name), "the counter exists after counting down past zero")

	// A stored count that is not positive (another client wrote it) is an
	// open latch, and reads as 0.
	s.Do(t, "SET", name, "-3")
	mustCount(t, l, 0)
	ok, err := l.TryWait(ctx, 0)
	require.NoError(t, err, "TryWait(0) on count -3")
	require.True(t, ok, "TryWait(0) on count -3")
	mustCountDown(t, l)
	require.Equal(t, any(int64(0)), s.Do(t, "EXISTS", name), "CountDown left a non-positive counter in place")
}

// Redisson: counting down a latch that is not set does nothing and is no
// error; in particular it creates no key.
func TestCountDownUnsetLatch(t *testing.T) {
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(clienttest.Shared(t), name)
	mustCountDown(t, l)
	require.Equal(t, any(int64(0)), s.Do(t, "EXISTS", name), "CountDown on an unset latch created %s", name)
	mustCount(t, l, 0)
}

// Redisson: Delete of an absent latch is false; Delete of a set latch is
// true and opens it for its waiters.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	c := clienttest.Shared(t)
	l := countdown.New(c, name)

	ok, err := l.Delete(ctx)
	require.NoError(t, err, "Delete of an absent latch")
	require.False(t, ok, "Delete of an absent latch")
	mustSet(t, l, 5)
	out := make(chan result, 3)
	startWaiters(ctx, l, 3, out)
	require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 3 }, 5*time.Second, redistest.Tick, "3 waiters subscribed")
	start := time.Now()
	ok, err = l.Delete(ctx)
	require.NoError(t, err, "Delete of a set latch")
	require.True(t, ok, "Delete of a set latch")
	t.Logf("3 waiters returned within %v of Delete", latest(start, collect(t, out, 3, 5*time.Second)))
	mustCount(t, l, 0)
	// Deleted, the latch can be set again.
	mustSet(t, l, 1)
}

// The channel and its messages are Redisson's: "1" when the count is set or
// the latch deleted, "0" when the count reaches zero, nothing for count-downs
// above zero or of an unset latch.
func TestMessages(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	l := countdown.New(clienttest.Shared(t), name)

	ps := redistest.Shared(t).Client(t).Subscribe(ctx, keys.LatchChannel(name))
	defer ps.Close()
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	require.Equal(t, "redisson_countdownlatch__channel__{"+name+"}", keys.LatchChannel(name), "channel")

	mustSet(t, l, 2)
	mustCountDown(t, l)
	mustCountDown(t, l) // zero
	mustCountDown(t, l) // unset: nothing
	mustSet(t, l, 1)
	_, err = l.Delete(ctx)
	require.NoError(t, err)
	_, err = l.Delete(ctx) // absent: nothing
	require.NoError(t, err)
	require.NoError(t, ps.Ping(ctx, "end"))

	var got []string
	for {
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err)
		if _, ok := msg.(*redis.Pong); ok {
			break
		}
		got = append(got, msg.(*redis.Message).Payload)
	}
	require.Equal(t, []string{"1", "0", "1", "1"}, got, "messages")
}

// A latch that is not set is open: Wait returns at once, without
// subscribing.
func TestWaitUnsetLatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := clienttest.Shared(t)
	l := countdown.New(c, redistest.Key(t, "latch"))
	require.NoError(t, l.Wait(ctx), "Wait on an unset latch")
	ok, err := l.TryWait(ctx, time.Second)
	require.NoError(t, err, "TryWait on an unset latch")
	require.True(t, ok, "TryWait on an unset latch")
	require.Zero(t, clienttest.Stats(c).Channels, "channels subscribed")
}

// A waiter whose pub/sub message is lost still returns, by its bounded
// fallback re-check (Redisson's await would hang). The counter is deleted
// behind the latch's back, so nothing is published.
func TestLostMessageFallback(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	const recheck = 300 * time.Millisecond
	c := clienttest.Shared(t, redisync.WithRecheckInterval(recheck))
	l := countdown.New(c, name)
	mustSet(t, l, 1)

	out := make(chan result, 2)
	startWaiters(ctx, l, 2, out)
	require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 2 }, 5*time.Second, redistest.Tick, "2 waiters subscribed")
	start := time.Now()
	s.Do(t, "DEL", name)
	d := latest(start, collect(t, out, 2, 5*time.Second))
	t.Logf("with a lost message, waiters returned %v after the count reached zero (re-check interval %v)", d, recheck)
	// The default re-check interval is 5s: returning well before it shows
	// the configured interval bounds the wait.
	assert.LessOrEqual(t, d, recheck+time.Second, "waiters returned too long after the count reached zero, want about %v", recheck)
}

// A count-down re-sent by go-redis after a lost reply is applied once (a
// doubled one would open the latch early); a re-sent TrySetCount or Delete
// reports what its first run did.
func TestRetrySafety(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	// Set the connection up and load the scripts before arming, so that the
	// dropped reply is the script's, not the handshake's or a NOSCRIPT.
	require.NoError(t, rdb.Ping(ctx).Err())
	for _, s := range []*redis.Script{lua.LatchTrySetCount, lua.LatchCountDown, lua.LatchDelete} {
		require.NoError(t, s.Load(ctx, rdb).Err())
	}
	name := redistest.Key(t, "latch")
	l := countdown.New(c, name)

	p.DropNextReply()
	ok, err := l.TrySetCount(ctx, 3)
	require.NoError(t, err, "re-sent TrySetCount")
	require.True(t, ok, "re-sent TrySetCount")
	require.Equal(t, 1, p.Dropped(), "replies the proxy dropped")
	mustCount(t, l, 3)

	p.DropNextReply()
	mustCountDown(t, l)
	require.Equal(t, 2, p.Dropped(), "replies the proxy dropped")
	mustCount(t, l, 2)

	p.DropNextReply()
	ok, err = l.Delete(ctx)
	require.NoError(t, err, "re-sent Delete")
	require.True(t, ok, "re-sent Delete")
	require.Equal(t, 3, p.Dropped(), "replies the proxy dropped")
	mustCount(t, l, 0)
}

// The request record also keeps a count-down re-sent after the latch was
// set anew from counting the new round down: the script is run twice with
// the same request key, as go-redis would re-send it.
func TestCountDownResentAfterReset(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	rdb := redistest.Shared(t).Client(t)
	c := clienttest.New(t, rdb)
	l := countdown.New(c, name)
	cc := (*core.Client)(c)
	a := lua.LatchCountDownArgs{Latch: name, Request: keys.Request(name, cc.Requests().ID()), Channel: keys.LatchChannel(name),
		Message: "0", Publish: "publish"}

	mustSet(t, l, 1)
	countDown := func() int64 {
		a.Deadline = cc.Requests().Deadline(ctx)
		n, err := a.Run(ctx, lua.Direct{Client: rdb})
		require.NoError(t, err)
		return n
	}
	require.Zero(t, countDown(), "what the first run left")
	mustSet(t, l, 2) // the next round
	require.Zero(t, countDown(), "re-run, want the recorded 0")
	mustCount(t, l, 2)
}

// A CountDown runs even when its ctx is already cancelled: a worker's
// deferred CountDown after its request was cancelled still counts.
func TestCountDownCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := countdown.New(clienttest.Shared(t), redistest.Key(t, "latch"))
	mustSet(t, l, 2)
	require.NoError(t, l.CountDown(ctx), "CountDown with a cancelled ctx")
	mustCount(t, l, 1)
}

// A Wait ended by its ctx returns an error wrapping ctx.Err() and leaves no
// subscription behind.
func TestWaitContext(t *testing.T) {
	c := clienttest.Shared(t)
	l := countdown.New(c, redistest.Key(t, "latch"))
	mustSet(t, l, 1)

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Wait(ctx) }()
		require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 1 }, 5*time.Second, redistest.Tick, "waiter subscribed")
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled, "Wait")
		case <-time.After(5 * time.Second):
			require.FailNow(t, "Wait did not return after cancel")
		}
		require.Eventually(t, func() bool {
			st := clienttest.Stats(c)
			return st.Channels == 0 && st.Waiters == 0
		}, 5*time.Second, redistest.Tick, "no subscription left")
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, l.Wait(ctx), context.DeadlineExceeded, "Wait")
		require.Eventually(t, func() bool { return clienttest.Stats(c).Channels == 0 }, 5*time.Second, redistest.Tick, "no subscription left")
	})
	t.Run("close", func(t *testing.T) {
		c2 := clienttest.Shared(t)
		l2 := countdown.New(c2, l.Name())
		done := make(chan error, 1)
		go func() { done <- l2.Wait(context.Background()) }()
		require.Eventually(t, func() bool { return clienttest.Stats(c2).Waiters == 1 }, 5*time.Second, redistest.Tick, "waiter subscribed")
		_ = c2.Close()
		select {
		case err := <-done:
			require.ErrorIs(t, err, redisync.ErrClosed, "Wait")
		case <-time.After(5 * time.Second):
			require.FailNow(t, "Wait did not return after Close")
		}
	})
}

// TryWait(0) is one check: one command once its script is loaded (the
// first run of a script a server has not seen is sent again with its
// source), no subscription. A longer TryWait returns false when the wait
// runs out and true when the latch opens in time.
func TestTryWait(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	var cmds redistest.Counter
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(&cmds)
	c := clienttest.New(t, rdb)
	l := countdown.New(c, name)
	mustSet(t, l, 1)
	mustCount(t, l, 1) // loads the read's script

	before := cmds.Load()
	ok, err := l.TryWait(ctx, 0)
	require.NoError(t, err, "TryWait(0) on a set latch")
	require.False(t, ok, "TryWait(0) on a set latch")
	require.EqualValues(t, 1, cmds.Load()-before, "commands TryWait(0) sent")
	require.Zero(t, clienttest.Stats(c).Channels, "channels TryWait(0) subscribed")

	start := time.Now()
	ok, err = l.TryWait(ctx, 300*time.Millisecond)
	require.NoError(t, err, "TryWait(300ms) on a set latch")
	require.False(t, ok, "TryWait(300ms) on a set latch")
	d := time.Since(start)
	require.GreaterOrEqual(t, d, 300*time.Millisecond, "TryWait(300ms) took")
	require.LessOrEqual(t, d, 3*time.Second, "TryWait(300ms) took")
	require.Eventually(t, func() bool { return clienttest.Stats(c).Channels == 0 }, 5*time.Second, redistest.Tick, "no subscription left")

	worker := countdown.New(clienttest.Shared(t), name)
	type waited struct {
		ok  bool
		err error
	}
	got := make(chan waited, 1)
	go func() {
		ok, err := l.TryWait(ctx, 10*time.Second)
		got <- waited{ok, err}
	}()
	clienttest.WaitWaiters(t, 1, c) // the count-down comes while TryWait waits
	require.NoError(t, worker.CountDown(ctx))
	r := <-got
	require.NoError(t, r.err, "TryWait(10s) with a count-down during the wait")
	require.True(t, r.ok, "TryWait(10s) with a count-down during the wait")
}

// Bad input fails with ErrInvalidArgument before anything is sent.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	var cmds redistest.Counter
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(&cmds)
	c := clienttest.New(t, rdb)
	empty := countdown.New(c, "")
	named := countdown.New(c, redistest.Key(t, "latch"))
	nilClient := countdown.New(nil, "latch")
	badOption := countdown.New(clienttest.New(t, rdb, redisync.WithRecheckInterval(-1)), "latch")

	calls := map[string]func() error{
		"empty name TrySetCount": func() error { _, err := empty.TrySetCount(ctx, 1); return err },
		"empty name CountDown":   func() error { return empty.CountDown(ctx) },
		"empty name Count":       func() error { _, err := empty.Count(ctx); return err },
		"empty name Wait":        func() error { return empty.Wait(ctx) },
		"empty name TryWait":     func() error { _, err := empty.TryWait(ctx, 0); return err },
		"empty name Delete":      func() error { _, err := empty.Delete(ctx); return err },
		"TrySetCount(0)":         func() error { _, err := named.TrySetCount(ctx, 0); return err },
		"TrySetCount(-1)":        func() error { _, err := named.TrySetCount(ctx, -1); return err },
		// Regression (issue 34): MaxInt64 was accepted, beyond what the
		// scripts count exactly (2^53), where the semaphores refuse.
		"TrySetCount(2^53+1)":   func() error { _, err := named.TrySetCount(ctx, 1<<53+1); return err },
		"TrySetCount(MaxInt64)": func() error { _, err := named.TrySetCount(ctx, math.MaxInt64); return err },
		"TryWait(-1ns)":         func() error { _, err := named.TryWait(ctx, -1); return err },
		"nil client":            func() error { return nilClient.CountDown(ctx) },
		"bad client option":     func() error { return badOption.Wait(ctx) },
	}
	for what, call := range calls {
		assert.ErrorIs(t, call(), redisync.ErrInvalidArgument, what)
	}
	_, err := named.TrySetCount(ctx, math.MaxInt64)
	require.ErrorContains(t, err, "count 9223372036854775807, must be between 1 and 2^53")
	require.Zero(t, cmds.Load(), "commands bad input sent")
	require.Zero(t, clienttest.Stats(c).Channels, "channels bad input subscribed")
}

// Every operation on a closed client fails with ErrClosed.
func TestClosedClient(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t)
	l := countdown.New(c, redistest.Key(t, "latch"))
	_ = c.Close()
	calls := map[string]func() error{
		"TrySetCount": func() error { _, err := l.TrySetCount(ctx, 1); return err },
		"CountDown":   func() error { return l.CountDown(ctx) },
		"Count":       func() error { _, err := l.Count(ctx); return err },
		"Wait":        func() error { return l.Wait(ctx) },
		"TryWait":     func() error { _, err := l.TryWait(ctx, time.Second); return err },
		"Delete":      func() error { _, err := l.Delete(ctx); return err },
	}
	for what, call := range calls {
		assert.ErrorIs(t, call(), redisync.ErrClosed, what)
	}
}

// Many workers counting down concurrently open the latch exactly when the
// last one lands.
func TestConcurrentCountDowns(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	const workers = 50
	l := countdown.New(clienttest.Shared(t), name)
	mustSet(t, l, workers+1)
	var wg sync.WaitGroup
	for range 4 {
		w := countdown.New(clienttest.Shared(t), name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range workers / 4 {
				assert.NoError(t, w.CountDown(ctx))
			}
		}()
	}
	for range workers % 4 {
		mustCountDown(t, l)
	}
	wg.Wait()
	mustCount(t, l, 1)
	open, _ := l.TryWait(ctx, 0)
	require.False(t, open, "latch open with one count left")
	mustCountDown(t, l)
	ok, err := l.TryWait(ctx, 0)
	require.NoError(t, err, "TryWait(0) after the last count-down")
	require.True(t, ok, "TryWait(0) after the last count-down")
}

// A name holding a hash tag puts Redisson's latch channel in another
// cluster slot than the counter: on a Redis Cluster the latch still sets,
// counts down, wakes its waiters and deletes.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c1 := clienttest.New(t, cl.Client(t))
	c2 := clienttest.New(t, cl.Client(t))
	for _, tc := range []struct {
		name     string
		sameSlot bool
	}{
		{"latch:" + t.Name(), true},
		{"batch{" + t.Name() + "}:7", false},
	} {
		name := tc.name
		require.Equal(t, tc.sameSlot, keys.Slot(keys.LatchChannel(name)) == keys.Slot(name),
			"%s: channel slot %d, counter slot %d: not the case this name is for", name, keys.Slot(keys.LatchChannel(name)), keys.Slot(name))
		l1, l2 := countdown.New(c1, name), countdown.New(c2, name)
		mustSet(t, l1, 2)
		out := make(chan result, 4)
		startWaiters(ctx, l1, 2, out)
		startWaiters(ctx, l2, 2, out)
		require.Eventually(t, func() bool { return clienttest.Stats(c1).Waiters == 2 && clienttest.Stats(c2).Waiters == 2 }, 10*time.Second, redistest.Tick, "waiters subscribed")
		mustCountDown(t, l2)
		start := time.Now()
		mustCountDown(t, l1)
		d := latest(start, collect(t, out, 4, 10*time.Second))
		t.Logf("%s: waiters on two cluster clients returned within %v", name, d)
		assert.Less(t, d, time.Second, "%s: waiters returned too long after the last count-down (the zero message was lost?)", name)
		mustSet(t, l2, 1)
		ok, err := l1.Delete(ctx)
		require.NoError(t, err, "%s: Delete", name)
		require.True(t, ok, "%s: Delete", name)
		mustCount(t, l2, 0)
	}
}

// The scripts also run on miniredis, the embedded server of the demo
// (gopher-lua, no cjson): the latch sets, wakes a waiter through pub/sub
// and deletes there too. This checks compatibility only; behaviour is
// tested against redis-server above.
func TestMiniredisCompatible(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	for _, name := range []string{"latch", "batch{7}"} {
		l := countdown.New(c, name)
		mustSet(t, l, 2)
		ok, err := l.TrySetCount(ctx, 2)
		require.NoError(t, err, "%s: TrySetCount on a set latch", name)
		require.False(t, ok, "%s: TrySetCount on a set latch", name)
		mustCountDown(t, l)
		mustCount(t, l, 1)
		out := make(chan result, 1)
		startWaiters(ctx, l, 1, out)
		require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 1 }, 5*time.Second, redistest.Tick, "waiter subscribed")
		start := time.Now()
		mustCountDown(t, l)
		require.LessOrEqual(t, latest(start, collect(t, out, 1, 5*time.Second)), time.Second,
			"%s: the waiter returned too long after the last count-down: no message?", name)
		mustCountDown(t, l) // unset: nothing
		require.False(t, mr.Exists(name), "%s: counter left at zero", name)
		mustSet(t, l, 1)
		ok, err = l.Delete(ctx)
		require.NoError(t, err, "%s: Delete", name)
		require.True(t, ok, "%s: Delete", name)
	}
}
