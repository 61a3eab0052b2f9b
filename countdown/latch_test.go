package countdown_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
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
			if r.err != nil {
				t.Fatalf("Wait: %v", r.err)
			}
			ats = append(ats, r.at)
		case <-timer.C:
			t.Fatalf("%d of %d waiters returned within %v", len(ats), n, d)
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
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	if n != want {
		t.Fatalf("Count = %d, want %d", n, want)
	}
}

func mustSet(t *testing.T, l *countdown.Latch, n int64) {
	t.Helper()
	ok, err := l.TrySetCount(context.Background(), n)
	if err != nil || !ok {
		t.Fatalf("TrySetCount(%d) = %v, %v; want true, nil", n, ok, err)
	}
}

func mustCountDown(t *testing.T, l *countdown.Latch) {
	t.Helper()
	if err := l.CountDown(context.Background()); err != nil {
		t.Fatalf("CountDown: %v", err)
	}
}

func TestName(t *testing.T) {
	if got := countdown.New(nil, "batch").Name(); got != "batch" {
		t.Fatalf("Name = %q", got)
	}
}

// Redisson layout: the count is a plain string key, the name itself.
func TestTrySetCount(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(sharedClient(t), name)

	mustCount(t, l, 0)
	mustSet(t, l, 3)
	mustCount(t, l, 3)
	if got := s.Do(t, "GET", name); got != "3" {
		t.Fatalf("GET %s = %v, want \"3\"", name, got)
	}
	if got := s.Do(t, "TTL", name); got != int64(-1) {
		t.Fatalf("TTL %s = %v, want -1 (a latch does not expire)", name, got)
	}

	// Redisson: trySetCount on a set latch is false and changes nothing.
	ok, err := l.TrySetCount(ctx, 5)
	if err != nil || ok {
		t.Fatalf("TrySetCount on a set latch = %v, %v; want false, nil", ok, err)
	}
	mustCount(t, l, 3)

	// Another client's handle sees the same latch.
	mustCount(t, countdown.New(sharedClient(t), name), 3)
}

// Redisson: 8 waiters all return promptly when the third of three
// count-downs lands, and not before.
func TestCountDownOpensForAllWaiters(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	c := sharedClient(t)
	l := countdown.New(c, name)
	worker := countdown.New(sharedClient(t), name)
	mustSet(t, l, 3)

	out := make(chan result, 8)
	startWaiters(ctx, l, 8, out)
	eventually(t, 5*time.Second, "8 waiters subscribed", func() bool { return waitersOf(c) == 8 })

	mustCountDown(t, worker)
	mustCountDown(t, worker)
	mustCount(t, l, 1)
	select {
	case r := <-out:
		t.Fatalf("a waiter returned (%v) with the count at 1", r.err)
	case <-time.After(200 * time.Millisecond):
	}

	start := time.Now()
	mustCountDown(t, worker)
	d := latest(start, collect(t, out, 8, 5*time.Second))
	t.Logf("8 waiters returned within %v of the last count-down", d)
	if d > time.Second {
		t.Errorf("waiters returned %v after the last count-down, want < 1s", d)
	}
	if got := s.Do(t, "EXISTS", name); got != int64(0) {
		t.Fatalf("the counter still exists at zero")
	}
	mustCount(t, l, 0)
	eventually(t, 5*time.Second, "subscription released", func() bool { return channelsOf(c) == 0 })
}

// The figure: 8 waiters in one client and waiters in two other
// clients, each with its own connection, all return within a few hundred
// milliseconds of the last count-down, made by a fourth client.
func TestWaitersAcrossClients(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	clients := []*redisync.Client{sharedClient(t), sharedClient(t), sharedClient(t)}
	counts := []int{8, 4, 4}
	coordinator := countdown.New(sharedClient(t), name)
	mustSet(t, coordinator, 2)

	out := make(chan result, 16)
	for i, c := range clients {
		startWaiters(ctx, countdown.New(c, name), counts[i], out)
	}
	for i, c := range clients {
		eventually(t, 5*time.Second, "waiters subscribed", func() bool { return waitersOf(c) == counts[i] })
	}
	mustCountDown(t, coordinator)

	start := time.Now()
	mustCountDown(t, coordinator)
	d := latest(start, collect(t, out, 16, 5*time.Second))
	t.Logf("16 waiters in 3 clients returned within %v of the last count-down", d)
	if d > time.Second {
		t.Errorf("waiters returned %v after the last count-down, want < 1s", d)
	}
}

// The count never goes below zero: the counter is deleted at zero, and
// count-downs of an open latch change nothing.
func TestCountNeverBelowZero(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(sharedClient(t), name)
	mustSet(t, l, 2)
	for range 5 {
		mustCountDown(t, l)
	}
	mustCount(t, l, 0)
	if got := s.Do(t, "EXISTS", name); got != int64(0) {
		t.Fatalf("the counter exists after counting down past zero")
	}

	// A stored count that is not positive (another client wrote it) is an
	// open latch, and reads as 0.
	s.Do(t, "SET", name, "-3")
	mustCount(t, l, 0)
	if ok, err := l.TryWait(ctx, 0); err != nil || !ok {
		t.Fatalf("TryWait(0) on count -3 = %v, %v; want true, nil", ok, err)
	}
	mustCountDown(t, l)
	if got := s.Do(t, "EXISTS", name); got != int64(0) {
		t.Fatalf("CountDown left a non-positive counter in place")
	}
}

// Redisson: counting down a latch that is not set does nothing and is no
// error; in particular it creates no key.
func TestCountDownUnsetLatch(t *testing.T) {
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	l := countdown.New(sharedClient(t), name)
	mustCountDown(t, l)
	if got := s.Do(t, "EXISTS", name); got != int64(0) {
		t.Fatalf("CountDown on an unset latch created %s", name)
	}
	mustCount(t, l, 0)
}

// Redisson: Delete of an absent latch is false; Delete of a set latch is
// true and opens it for its waiters.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	c := sharedClient(t)
	l := countdown.New(c, name)

	if ok, err := l.Delete(ctx); err != nil || ok {
		t.Fatalf("Delete of an absent latch = %v, %v; want false, nil", ok, err)
	}
	mustSet(t, l, 5)
	out := make(chan result, 3)
	startWaiters(ctx, l, 3, out)
	eventually(t, 5*time.Second, "3 waiters subscribed", func() bool { return waitersOf(c) == 3 })
	start := time.Now()
	if ok, err := l.Delete(ctx); err != nil || !ok {
		t.Fatalf("Delete of a set latch = %v, %v; want true, nil", ok, err)
	}
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
	l := countdown.New(sharedClient(t), name)

	ps := redistest.Shared(t).Client(t).Subscribe(ctx, keys.LatchChannel(name))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if want := "redisson_countdownlatch__channel__{" + name + "}"; keys.LatchChannel(name) != want {
		t.Fatalf("channel %q, want %q", keys.LatchChannel(name), want)
	}

	mustSet(t, l, 2)
	mustCountDown(t, l)
	mustCountDown(t, l) // zero
	mustCountDown(t, l) // unset: nothing
	mustSet(t, l, 1)
	if _, err := l.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(ctx); err != nil { // absent: nothing
		t.Fatal(err)
	}
	if err := ps.Ping(ctx, "end"); err != nil {
		t.Fatal(err)
	}

	var got []string
	for {
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*redis.Pong); ok {
			break
		}
		got = append(got, msg.(*redis.Message).Payload)
	}
	if want := []string{"1", "0", "1", "1"}; !equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A latch that is not set is open: Wait returns at once, without
// subscribing.
func TestWaitUnsetLatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := sharedClient(t)
	l := countdown.New(c, redistest.Key(t, "latch"))
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait on an unset latch: %v", err)
	}
	if ok, err := l.TryWait(ctx, time.Second); err != nil || !ok {
		t.Fatalf("TryWait on an unset latch = %v, %v; want true, nil", ok, err)
	}
	if n := channelsOf(c); n != 0 {
		t.Fatalf("%d channels subscribed", n)
	}
}

// A waiter whose pub/sub message is lost still returns, by its bounded
// fallback re-check (Redisson's await would hang). The counter is deleted
// behind the latch's back, so nothing is published.
func TestLostMessageFallback(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	const recheck = 300 * time.Millisecond
	c := sharedClient(t, redisync.WithRecheckInterval(recheck))
	l := countdown.New(c, name)
	mustSet(t, l, 1)

	out := make(chan result, 2)
	startWaiters(ctx, l, 2, out)
	eventually(t, 5*time.Second, "2 waiters subscribed", func() bool { return waitersOf(c) == 2 })
	start := time.Now()
	s.Do(t, "DEL", name)
	d := latest(start, collect(t, out, 2, 5*time.Second))
	t.Logf("with a lost message, waiters returned %v after the count reached zero (re-check interval %v)", d, recheck)
	// The default re-check interval is 5s: returning well before it shows
	// the configured interval bounds the wait.
	if d > recheck+time.Second {
		t.Errorf("waiters returned %v after the count reached zero, want about %v", d, recheck)
	}
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
	c := newClient(t, rdb)
	// Set the connection up and load the scripts before arming, so that the
	// dropped reply is the script's, not the handshake's or a NOSCRIPT.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*redis.Script{lua.LatchTrySetCount, lua.LatchCountDown, lua.LatchDelete} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	name := redistest.Key(t, "latch")
	l := countdown.New(c, name)

	p.DropNextReply()
	ok, err := l.TrySetCount(ctx, 3)
	if err != nil || !ok {
		t.Fatalf("re-sent TrySetCount = %v, %v; want true, nil", ok, err)
	}
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want 1", p.Dropped())
	}
	mustCount(t, l, 3)

	p.DropNextReply()
	mustCountDown(t, l)
	if p.Dropped() != 2 {
		t.Fatalf("the proxy dropped %d replies, want 2", p.Dropped())
	}
	mustCount(t, l, 2)

	p.DropNextReply()
	ok, err = l.Delete(ctx)
	if err != nil || !ok {
		t.Fatalf("re-sent Delete = %v, %v; want true, nil", ok, err)
	}
	if p.Dropped() != 3 {
		t.Fatalf("the proxy dropped %d replies, want 3", p.Dropped())
	}
	mustCount(t, l, 0)
}

// The request record also keeps a count-down re-sent after the latch was
// set anew from counting the new round down: the script is run twice with
// the same request key, as go-redis would re-send it.
func TestCountDownResentAfterReset(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	rdb := redistest.Shared(t).Client(t)
	c := newClient(t, rdb)
	l := countdown.New(c, name)
	cc := (*core.Client)(c)
	ks := []string{name, keys.Request(name, cc.RequestID()), keys.LatchChannel(name)}

	mustSet(t, l, 1)
	countDown := func() int64 {
		n, err := lua.LatchCountDown.Run(ctx, rdb, ks, cc.RequestDeadline(ctx), "0", "publish").Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := countDown(); n != 0 {
		t.Fatalf("first run left %d", n)
	}
	mustSet(t, l, 2) // the next round
	if n := countDown(); n != 0 {
		t.Fatalf("re-run returned %d, want the recorded 0", n)
	}
	mustCount(t, l, 2)
}

// A CountDown runs even when its ctx is already cancelled: a worker's
// deferred CountDown after its request was cancelled still counts.
func TestCountDownCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := countdown.New(sharedClient(t), redistest.Key(t, "latch"))
	mustSet(t, l, 2)
	if err := l.CountDown(ctx); err != nil {
		t.Fatalf("CountDown with a cancelled ctx: %v", err)
	}
	mustCount(t, l, 1)
}

// A Wait ended by its ctx returns an error wrapping ctx.Err() and leaves no
// subscription behind.
func TestWaitContext(t *testing.T) {
	c := sharedClient(t)
	l := countdown.New(c, redistest.Key(t, "latch"))
	mustSet(t, l, 1)

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Wait(ctx) }()
		eventually(t, 5*time.Second, "waiter subscribed", func() bool { return waitersOf(c) == 1 })
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait = %v, want an error wrapping context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait did not return after cancel")
		}
		eventually(t, 5*time.Second, "no subscription left", func() bool {
			st := (*core.Client)(c).Mux().Stats()
			return st.Channels == 0 && st.Waiters == 0
		})
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want an error wrapping context.DeadlineExceeded", err)
		}
		eventually(t, 5*time.Second, "no subscription left", func() bool { return channelsOf(c) == 0 })
	})
	t.Run("close", func(t *testing.T) {
		c2 := sharedClient(t)
		l2 := countdown.New(c2, l.Name())
		done := make(chan error, 1)
		go func() { done <- l2.Wait(context.Background()) }()
		eventually(t, 5*time.Second, "waiter subscribed", func() bool { return waitersOf(c2) == 1 })
		_ = c2.Close()
		select {
		case err := <-done:
			if !errors.Is(err, redisync.ErrClosed) {
				t.Fatalf("Wait = %v, want an error wrapping ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait did not return after Close")
		}
	})
}

// TryWait(0) is one check: one command, no subscription. A longer TryWait
// returns false when the wait runs out and true when the latch opens in time.
func TestTryWait(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	var cmds redistest.Counter
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(&cmds)
	c := newClient(t, rdb)
	l := countdown.New(c, name)
	mustSet(t, l, 1)

	before := cmds.Load()
	if ok, err := l.TryWait(ctx, 0); err != nil || ok {
		t.Fatalf("TryWait(0) on a set latch = %v, %v; want false, nil", ok, err)
	}
	if n := cmds.Load() - before; n != 1 {
		t.Fatalf("TryWait(0) sent %d commands, want 1", n)
	}
	if n := channelsOf(c); n != 0 {
		t.Fatalf("TryWait(0) subscribed %d channels", n)
	}

	start := time.Now()
	if ok, err := l.TryWait(ctx, 300*time.Millisecond); err != nil || ok {
		t.Fatalf("TryWait(300ms) on a set latch = %v, %v; want false, nil", ok, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Fatalf("TryWait(300ms) took %v", d)
	}
	eventually(t, 5*time.Second, "no subscription left", func() bool { return channelsOf(c) == 0 })

	worker := countdown.New(sharedClient(t), name)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = worker.CountDown(ctx)
	}()
	if ok, err := l.TryWait(ctx, 10*time.Second); err != nil || !ok {
		t.Fatalf("TryWait(10s) with a count-down after 100ms = %v, %v; want true, nil", ok, err)
	}
}

// Bad input fails with ErrInvalidArgument before anything is sent.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	var cmds redistest.Counter
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(&cmds)
	c := newClient(t, rdb)
	empty := countdown.New(c, "")
	named := countdown.New(c, redistest.Key(t, "latch"))
	nilClient := countdown.New(nil, "latch")
	badOption := countdown.New(newClient(t, rdb, redisync.WithRecheckInterval(-1)), "latch")

	calls := map[string]func() error{
		"empty name TrySetCount": func() error { _, err := empty.TrySetCount(ctx, 1); return err },
		"empty name CountDown":   func() error { return empty.CountDown(ctx) },
		"empty name Count":       func() error { _, err := empty.Count(ctx); return err },
		"empty name Wait":        func() error { return empty.Wait(ctx) },
		"empty name TryWait":     func() error { _, err := empty.TryWait(ctx, 0); return err },
		"empty name Delete":      func() error { _, err := empty.Delete(ctx); return err },
		"TrySetCount(0)":         func() error { _, err := named.TrySetCount(ctx, 0); return err },
		"TrySetCount(-1)":        func() error { _, err := named.TrySetCount(ctx, -1); return err },
		"TryWait(-1ns)":          func() error { _, err := named.TryWait(ctx, -1); return err },
		"nil client":             func() error { return nilClient.CountDown(ctx) },
		"bad client option":      func() error { return badOption.Wait(ctx) },
	}
	for what, call := range calls {
		if err := call(); !errors.Is(err, redisync.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	if n := cmds.Load(); n != 0 {
		t.Fatalf("bad input sent %d commands", n)
	}
	if n := channelsOf(c); n != 0 {
		t.Fatalf("bad input subscribed %d channels", n)
	}
}

// Every operation on a closed client fails with ErrClosed.
func TestClosedClient(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
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
		if err := call(); !errors.Is(err, redisync.ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", what, err)
		}
	}
}

// Many workers counting down concurrently open the latch exactly when the
// last one lands.
func TestConcurrentCountDowns(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "latch")
	const workers = 50
	l := countdown.New(sharedClient(t), name)
	mustSet(t, l, workers+1)
	var wg sync.WaitGroup
	for range 4 {
		w := countdown.New(sharedClient(t), name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range workers / 4 {
				if err := w.CountDown(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range workers % 4 {
		mustCountDown(t, l)
	}
	wg.Wait()
	mustCount(t, l, 1)
	if ok, _ := l.TryWait(ctx, 0); ok {
		t.Fatal("latch open with one count left")
	}
	mustCountDown(t, l)
	if ok, err := l.TryWait(ctx, 0); err != nil || !ok {
		t.Fatalf("TryWait(0) after the last count-down = %v, %v", ok, err)
	}
}

// A name holding a hash tag puts Redisson's latch channel in another
// cluster slot than the counter: on a Redis Cluster the latch still sets,
// counts down, wakes its waiters and deletes.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c1 := newClient(t, cl.Client(t))
	c2 := newClient(t, cl.Client(t))
	for _, tc := range []struct {
		name     string
		sameSlot bool
	}{
		{"latch:" + t.Name(), true},
		{"batch{" + t.Name() + "}:7", false},
	} {
		name := tc.name
		if sameSlot := keys.Slot(keys.LatchChannel(name)) == keys.Slot(name); sameSlot != tc.sameSlot {
			t.Fatalf("%s: channel slot %d, counter slot %d: not the case this name is for",
				name, keys.Slot(keys.LatchChannel(name)), keys.Slot(name))
		}
		l1, l2 := countdown.New(c1, name), countdown.New(c2, name)
		mustSet(t, l1, 2)
		out := make(chan result, 4)
		startWaiters(ctx, l1, 2, out)
		startWaiters(ctx, l2, 2, out)
		eventually(t, 10*time.Second, "waiters subscribed", func() bool { return waitersOf(c1) == 2 && waitersOf(c2) == 2 })
		mustCountDown(t, l2)
		start := time.Now()
		mustCountDown(t, l1)
		d := latest(start, collect(t, out, 4, 10*time.Second))
		t.Logf("%s: waiters on two cluster clients returned within %v", name, d)
		if d > time.Second {
			t.Errorf("%s: waiters returned %v after the last count-down, want < 1s (the zero message was lost?)", name, d)
		}
		mustSet(t, l2, 1)
		if ok, err := l1.Delete(ctx); err != nil || !ok {
			t.Fatalf("%s: Delete = %v, %v", name, ok, err)
		}
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
	c := newClient(t, rdb)
	for _, name := range []string{"latch", "batch{7}"} {
		l := countdown.New(c, name)
		mustSet(t, l, 2)
		if ok, err := l.TrySetCount(ctx, 2); err != nil || ok {
			t.Fatalf("%s: TrySetCount on a set latch = %v, %v", name, ok, err)
		}
		mustCountDown(t, l)
		mustCount(t, l, 1)
		out := make(chan result, 1)
		startWaiters(ctx, l, 1, out)
		eventually(t, 5*time.Second, "waiter subscribed", func() bool { return waitersOf(c) == 1 })
		start := time.Now()
		mustCountDown(t, l)
		if d := latest(start, collect(t, out, 1, 5*time.Second)); d > time.Second {
			t.Fatalf("%s: the waiter returned %v after the last count-down: no message?", name, d)
		}
		mustCountDown(t, l) // unset: nothing
		if mr.Exists(name) {
			t.Fatalf("%s: counter left at zero", name)
		}
		mustSet(t, l, 1)
		if ok, err := l.Delete(ctx); err != nil || !ok {
			t.Fatalf("%s: Delete = %v, %v", name, ok, err)
		}
	}
}
