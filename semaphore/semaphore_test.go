package semaphore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

func available(t *testing.T, s *Semaphore) int64 {
	t.Helper()
	n, err := s.AvailablePermits(context.Background())
	noErr(t, err)
	return n
}

func TestTrySetPermits(t *testing.T) {
	ctx := context.Background()
	s := New(newClient(t), redistest.Key(t, "sem"))
	ok, err := s.TrySetPermits(ctx, 3)
	noErr(t, err)
	equal(t, ok, true, "first TrySetPermits")
	ok, err = s.TrySetPermits(ctx, 5)
	noErr(t, err)
	equal(t, ok, false, "second TrySetPermits")
	equal(t, available(t, s), 3, "available")
	equal(t, s.Name(), s.h.Name, "Name")

	zero := New(newClient(t), redistest.Key(t, "zero"))
	ok, err = zero.TrySetPermits(ctx, 0)
	noErr(t, err)
	equal(t, ok, true, "TrySetPermits(0) on an unset semaphore")
	ok, err = zero.TrySetPermits(ctx, 2)
	noErr(t, err)
	equal(t, ok, false, "TrySetPermits after TrySetPermits(0)")
}

// Redisson: release on a semaphore that was never set gives 1 permit.
func TestReleaseWithoutSet(t *testing.T) {
	s := New(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.Release(context.Background(), 1))
	equal(t, available(t, s), 1, "available after release without set")
}

// Redisson: acquire on a semaphore that was never set waits.
func TestAcquireNeverSetWaits(t *testing.T) {
	s := New(newClient(t), redistest.Key(t, "sem"))
	start := time.Now()
	ok, err := s.TryAcquire(context.Background(), 1, 200*time.Millisecond)
	noErr(t, err)
	equal(t, ok, false, "TryAcquire on an unset semaphore")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("TryAcquire returned after %v, before its wait", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = s.Acquire(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on an unset semaphore: got %v, want DeadlineExceeded", err)
	}
	equal(t, available(t, s), 0, "available")
}

// Redisson: acquire(4) with 2 left completes right after the second of two
// later releases.
func TestAcquireCompletesAfterSecondRelease(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := New(newClient(t, redisync.WithRecheckInterval(time.Minute)), name)
	other := New(newClient(t), name)
	_, err := s.TrySetPermits(ctx, 2)
	noErr(t, err)

	done := async(func() error { return s.Acquire(ctx, 4) })
	eventually(t, 5*time.Second, "the waiter subscribes", func() bool { return waiters(s.h.C) == 1 })
	noErr(t, other.Release(ctx, 1))
	pending(t, done, 300*time.Millisecond, "Acquire(4) with 3 available")
	noErr(t, other.Release(ctx, 1))
	released := time.Now()
	r := await(t, done, 3*time.Second, "Acquire(4) after the second release")
	noErr(t, r.err)
	t.Logf("acquired %v after the second release", r.at.Sub(released))
	equal(t, available(t, s), 0, "available")
}

func TestAddPermits(t *testing.T) {
	ctx := context.Background()
	s := New(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.AddPermits(ctx, 2))
	equal(t, available(t, s), 2, "after AddPermits(2) on an unset semaphore")
	noErr(t, s.AddPermits(ctx, -5))
	equal(t, available(t, s), -3, "after AddPermits(-5)")
	ok, err := s.TryAcquire(ctx, 1, 0)
	noErr(t, err)
	equal(t, ok, false, "TryAcquire with -3 available")
	noErr(t, s.AddPermits(ctx, 4))
	ok, err = s.TryAcquire(ctx, 1, 0)
	noErr(t, err)
	equal(t, ok, true, "TryAcquire with 1 available")
	equal(t, available(t, s), 0, "available")
}

func TestDrainPermits(t *testing.T) {
	ctx := context.Background()
	s := New(newClient(t), redistest.Key(t, "sem"))
	n, err := s.DrainPermits(ctx)
	noErr(t, err)
	equal(t, n, 0, "drain of an unset semaphore")
	exists, err := s.h.C.Redis().Exists(ctx, s.h.Name).Result()
	noErr(t, err)
	equal(t, exists, 0, "key after draining an unset semaphore")

	noErr(t, s.AddPermits(ctx, 7))
	n, err = s.DrainPermits(ctx)
	noErr(t, err)
	equal(t, n, 7, "drained")
	equal(t, available(t, s), 0, "available after drain")

	noErr(t, s.AddPermits(ctx, -2))
	n, err = s.DrainPermits(ctx)
	noErr(t, err)
	equal(t, n, -2, "drain of a negative count")
	equal(t, available(t, s), 0, "available after draining a negative count")
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	s := New(newClient(t), redistest.Key(t, "sem"))
	ok, err := s.Delete(ctx)
	noErr(t, err)
	equal(t, ok, false, "Delete of an unset semaphore")
	noErr(t, s.AddPermits(ctx, 3))
	ok, err = s.Delete(ctx)
	noErr(t, err)
	equal(t, ok, true, "Delete")
	equal(t, available(t, s), 0, "available after Delete")
	ok, err = s.TrySetPermits(ctx, 1)
	noErr(t, err)
	equal(t, ok, true, "TrySetPermits after Delete")
}

// The layout is Redisson's: a string counter named name, and every release
// publishes the new count on redisson_sc:{name}.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := New(newClient(t), name)

	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	noErr(t, err)

	_, err = s.TrySetPermits(ctx, 2)
	noErr(t, err)
	equal(t, srv.Do(t, "GET", name), any("2"), "GET name")
	equal(t, srv.Do(t, "TYPE", name), any("string"), "TYPE name")
	msg, err := sub.ReceiveMessage(ctx)
	noErr(t, err)
	equal(t, msg.Payload, "2", "message of TrySetPermits")

	noErr(t, s.Acquire(ctx, 2))
	equal(t, srv.Do(t, "GET", name), any("0"), "GET name after acquiring all")
	noErr(t, s.Release(ctx, 1))
	msg, err = sub.ReceiveMessage(ctx)
	noErr(t, err)
	equal(t, msg.Payload, "1", "message of Release")

	// A count written by someone else (a Java service) is used as is.
	srv.Do(t, "SET", name, "5")
	ok, err := s.TryAcquire(ctx, 5, 0)
	noErr(t, err)
	equal(t, ok, true, "TryAcquire(5) of a count set with SET")
}

// Redisson: 16 clients × 100 guarded sections with 1 permit give exactly
// 1600; scaled down to 8 × 25 for a busy 2-core machine.
func TestGuardedSections(t *testing.T) {
	const clients, sections = 8, 25
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	counter := redistest.Key(t, "counter")
	ok, err := New(newClient(t), name).TrySetPermits(ctx, 1)
	noErr(t, err)
	equal(t, ok, true, "TrySetPermits")

	sems := make([]*Semaphore, clients)
	rdbs := make([]*redis.Client, clients)
	for c := range clients {
		rdbs[c] = srv.Client(t)
		sems[c] = New(clientOn(t, rdbs[c]), name)
	}
	var inside, overlaps atomic.Int64
	eachClient(t, clients, sections, func(c int) error {
		if err := sems[c].Acquire(ctx, 1); err != nil {
			return err
		}
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		// A read-modify-write that loses updates unless exclusive.
		v, err := rdbs[c].Get(ctx, counter).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if err := rdbs[c].Set(ctx, counter, v+1, 0).Err(); err != nil {
			return err
		}
		inside.Add(-1)
		return sems[c].Release(ctx, 1)
	})
	equal(t, overlaps.Load(), 0, "sections that overlapped")
	equal(t, srv.Do(t, "GET", counter), any(strconv.Itoa(clients*sections)), "counter")
	equal(t, srv.Do(t, "GET", name), any("1"), "permits after all sections")
}

// 6 clients × 10 sections with 2 permits never have more than 2 holders at
// once, and do reach 2.
func TestConcurrencyCap(t *testing.T) {
	const clients, sections, permits = 6, 10, 2
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	_, err := New(newClient(t), name).TrySetPermits(ctx, permits)
	noErr(t, err)

	sems := make([]*Semaphore, clients)
	for c := range sems {
		sems[c] = New(newClient(t), name)
	}
	most := mostHolders(t, clients, sections, func(c int) (func() error, error) {
		if err := sems[c].Acquire(ctx, 1); err != nil {
			return nil, err
		}
		return func() error { return sems[c].Release(ctx, 1) }, nil
	})
	equal(t, most, permits, "most holders at once")
	equal(t, available(t, New(newClient(t), name)), permits, "permits after all sections")
}

// A waiter is woken by the release's message, within milliseconds: the
// re-check interval is a minute, so nothing else could wake it.
func TestWakeOnRelease(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := newClient(t, redisync.WithRecheckInterval(time.Minute))
	s := New(c, name)
	other := New(newClient(t), name)

	var worst time.Duration
	for i := range 5 {
		done := async(func() error { return s.Acquire(ctx, 1) })
		eventually(t, 5*time.Second, "the waiter subscribes", func() bool { return waiters(s.h.C) == 1 })
		released := time.Now()
		noErr(t, other.Release(ctx, 1))
		r := await(t, done, 5*time.Second, "Acquire after the release")
		noErr(t, r.err)
		d := r.at.Sub(released)
		t.Logf("round %d: woken %v after the release", i, d)
		worst = max(worst, d)
	}
	// Typically about a millisecond; generous for a busy machine.
	if worst > time.Second {
		t.Fatalf("slowest wake-up %v after the release", worst)
	}
}

// A release of n wakes up to n local waiters, not all of them.
func TestReleaseWakesUpToN(t *testing.T) {
	const waiting = 5
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := newClient(t, redisync.WithRecheckInterval(time.Minute))
	s := New(c, name)
	other := New(newClient(t), name)

	var got atomic.Int64
	results := make(chan result, waiting)
	for range waiting {
		go func() {
			err := s.Acquire(ctx, 1)
			if err == nil {
				got.Add(1)
			}
			results <- result{err, time.Now()}
		}()
	}
	eventually(t, 5*time.Second, "all callers wait", func() bool {
		return lineLen(s.h.C, name) == waiting && waiters(s.h.C) == 1
	})
	noErr(t, other.Release(ctx, 2))
	eventually(t, 3*time.Second, "two callers acquire", func() bool { return got.Load() == 2 })
	time.Sleep(300 * time.Millisecond)
	equal(t, got.Load(), 2, "callers through after a release of 2")
	equal(t, lineLen(s.h.C, name), waiting-2, "callers still waiting")
	equal(t, available(t, s), 0, "available")

	noErr(t, other.Release(ctx, 3))
	for range waiting {
		r := await(t, results, 5*time.Second, "Acquire")
		noErr(t, r.err)
	}
	equal(t, lineLen(s.h.C, name), 0, "callers left in line")
	eventually(t, 5*time.Second, "unsubscribed", func() bool { return channels(s.h.C) == 0 })
}

// A caller waiting for 3 permits is not starved by a stream of callers of
// the same client that take 1 permit at a time.
func TestLargeRequestNotStarved(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	name := redistest.Key(t, "sem")
	c := newClient(t)
	s := New(c, name)
	_, err := s.TrySetPermits(ctx, 3)
	noErr(t, err)

	var wg sync.WaitGroup
	var small atomic.Int64
	// As many callers as permits, each taking a permit back right after
	// releasing it, out of phase: without the local line, all three permits
	// would (almost) never be free at once.
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 7 * time.Millisecond)
			for ctx.Err() == nil {
				if err := s.Acquire(ctx, 1); err != nil {
					return
				}
				small.Add(1)
				time.Sleep(20 * time.Millisecond)
				_ = s.Release(ctx, 1)
			}
		}()
	}
	eventually(t, 5*time.Second, "the stream of small acquisitions runs", func() bool { return small.Load() > 6 })
	var overtaken int64
	start := time.Now()
	big := async(func() error {
		before := small.Load()
		if err := s.Acquire(ctx, 3); err != nil {
			return err
		}
		overtaken = small.Load() - before
		return s.Release(ctx, 3)
	})
	r := await(t, big, 5*time.Second, "Acquire(3) amid a stream of Acquire(1)")
	noErr(t, r.err)
	t.Logf("Acquire(3) took %v; %d Acquire(1) got through meanwhile", r.at.Sub(start), overtaken)
	// Only the three already under way when Acquire(3) arrived may finish
	// before it (without the line: hundreds, for more than a second).
	if overtaken > 3 {
		t.Fatalf("%d Acquire(1) overtook Acquire(3)", overtaken)
	}
	stop()
	wg.Wait()
	equal(t, available(t, New(newClient(t), name)), 3, "permits after the stream")
}

// TryAcquire with no wait does not overtake a caller of the same client
// that waits, even when enough permits for itself are available.
func TestTryAcquireDoesNotOvertake(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := New(newClient(t), name)
	noErr(t, s.AddPermits(ctx, 1))
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	big := async(func() error { return s.Acquire(ctx2, 2) })
	eventually(t, 5*time.Second, "Acquire(2) waits", func() bool { return lineLen(s.h.C, name) == 1 && waiters(s.h.C) == 1 })
	ok, err := s.TryAcquire(ctx, 1, 0)
	noErr(t, err)
	equal(t, ok, false, "TryAcquire(1) behind a waiting Acquire(2)")
	// Another client is not ordered behind it.
	ok, err = New(newClient(t), name).TryAcquire(ctx, 1, 0)
	noErr(t, err)
	equal(t, ok, true, "TryAcquire(1) of another client")
	cancel()
	if r := await(t, big, 5*time.Second, "cancelled Acquire(2)"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", r.err)
	}
}

// A lost pub/sub message (a count raised by a raw INCRBY, no PUBLISH) is
// noticed within the client's re-check interval.
func TestLostMessageRecheck(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	c := newClient(t, redisync.WithRecheckInterval(300*time.Millisecond))
	s := New(c, name)

	done := async(func() error { return s.Acquire(ctx, 1) })
	eventually(t, 5*time.Second, "the waiter subscribes", func() bool { return waiters(s.h.C) == 1 })
	srv.Do(t, "INCRBY", name, 1)
	raised := time.Now()
	r := await(t, done, 5*time.Second, "Acquire after a silent INCRBY")
	noErr(t, r.err)
	d := r.at.Sub(raised)
	t.Logf("noticed %v after the silent INCRBY", d)
	if d > 2*time.Second {
		t.Fatalf("noticed after %v with a 300ms re-check interval", d)
	}
}

// A request re-sent by go-redis after a lost reply is applied once.
func TestRetrySafety(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t)
	s := New(c, redistest.Key(t, "sem"))
	// Load every script first: a dropped NOSCRIPT reply would prove nothing.
	_, err := s.TrySetPermits(ctx, 5)
	noErr(t, err)
	noErr(t, s.Acquire(ctx, 1))
	noErr(t, s.Release(ctx, 1))
	noErr(t, s.AddPermits(ctx, 0))
	_, err = New(c, redistest.Key(t, "other")).DrainPermits(ctx)
	noErr(t, err)

	drop := func(what string, op func() error) {
		t.Helper()
		noErr(t, rdb.Ping(ctx).Err())
		before := p.Dropped()
		p.DropNextReply()
		noErr(t, op())
		equal(t, p.Dropped(), before+1, "replies dropped during "+what)
	}
	drop("Acquire(2)", func() error { return s.Acquire(ctx, 2) })
	equal(t, available(t, s), 3, "available after Acquire(2) with a lost reply")
	drop("Release(2)", func() error { return s.Release(ctx, 2) })
	equal(t, available(t, s), 5, "available after Release(2) with a lost reply")
	drop("AddPermits(3)", func() error { return s.AddPermits(ctx, 3) })
	equal(t, available(t, s), 8, "available after AddPermits(3) with a lost reply")
	var drained int64
	drop("DrainPermits", func() (err error) { drained, err = s.DrainPermits(ctx); return err })
	equal(t, drained, 8, "DrainPermits with a lost reply")
	var deleted bool
	drop("Delete", func() (err error) { deleted, err = s.Delete(ctx); return err })
	equal(t, deleted, true, "Delete with a lost reply")
	var set bool
	drop("TrySetPermits", func() (err error) { set, err = s.TrySetPermits(ctx, 4); return err })
	equal(t, set, true, "TrySetPermits with a lost reply")
	equal(t, available(t, s), 4, "available after TrySetPermits(4)")
}

// An acquisition whose reply was lost is undone: given back if it took
// place, cancelled if it had not.
func TestUndo(t *testing.T) {
	ctx := context.Background()
	s := New(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.AddPermits(ctx, 3))
	run := func(reqKey string) int64 {
		t.Helper()
		r, err := lua.SemaphoreAcquire.Run(ctx, s.h.C.Redis(), []string{s.h.Name, reqKey}, 2, s.h.C.RequestDeadline(ctx)).Int64()
		noErr(t, err)
		return r
	}

	took := s.requestKey()
	equal(t, run(took), 1, "acquisition")
	equal(t, available(t, s), 1, "available after the acquisition")
	s.undo(ctx, 2, took)
	equal(t, available(t, s), 3, "available after its undo")
	equal(t, run(took), -1, "late copy of the undone acquisition")
	equal(t, available(t, s), 3, "available after the late copy")
	s.undo(ctx, 2, took)
	equal(t, available(t, s), 3, "available after a second undo")

	never := s.requestKey()
	s.undo(ctx, 2, never)
	equal(t, available(t, s), 3, "available after the undo of an acquisition that never ran")
	equal(t, run(never), -1, "late acquisition after its undo")
	equal(t, available(t, s), 3, "available after the late acquisition")
}

// An acquisition cut off by its ctx while its script is in flight leaves
// the permits where they were.
func TestAcquireCutOff(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	s := New(c, redistest.Key(t, "sem"))
	noErr(t, s.AddPermits(ctx, 2))
	noErr(t, s.Acquire(ctx, 1)) // load the script
	noErr(t, s.Release(ctx, 1))
	noErr(t, rdb.Ping(ctx).Err())

	p.Block()
	time.AfterFunc(500*time.Millisecond, p.Unblock)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := s.Acquire(cctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire cut off by its deadline: got %v", err)
	}
	check := New(newClient(t), s.h.Name)
	time.Sleep(200 * time.Millisecond) // let a late copy land, if any
	equal(t, available(t, check), 2, "available after the cut-off Acquire")
}

// A cancelled Acquire holds nothing: no permit, no subscription, no place
// in line.
func TestCancelledAcquire(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := newClient(t)
	s := New(c, name)
	noErr(t, s.AddPermits(ctx, 1))

	ctx1, cancel1 := context.WithCancel(ctx)
	ctx2, cancel2 := context.WithCancel(ctx)
	first := async(func() error { return s.Acquire(ctx1, 3) })
	eventually(t, 5*time.Second, "first waiter subscribed", func() bool { return waiters(s.h.C) == 1 })
	second := async(func() error { return s.Acquire(ctx2, 1) })
	eventually(t, 5*time.Second, "second caller in line", func() bool { return lineLen(s.h.C, name) == 2 })

	cancel2() // in line, not yet asking Redis
	if r := await(t, second, 5*time.Second, "cancelled second caller"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled caller in line: %v", r.err)
	}
	equal(t, lineLen(s.h.C, name), 1, "callers in line")
	cancel1() // the head, subscribed
	if r := await(t, first, 5*time.Second, "cancelled first caller"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled head: %v", r.err)
	}
	equal(t, lineLen(s.h.C, name), 0, "callers in line")
	equal(t, channels(s.h.C), 0, "channels subscribed")
	equal(t, waiters(s.h.C), 0, "pub/sub waiters")
	equal(t, available(t, s), 1, "available")

	// A cancelled head hands its turn on.
	ctx3, cancel3 := context.WithCancel(ctx)
	head := async(func() error { return s.Acquire(ctx3, 3) })
	eventually(t, 5*time.Second, "head subscribed", func() bool { return waiters(s.h.C) == 1 })
	next := async(func() error { return s.Acquire(ctx, 1) })
	pending(t, next, 200*time.Millisecond, "Acquire(1) behind Acquire(3)")
	cancel3()
	<-head
	noErr(t, await(t, next, 5*time.Second, "Acquire(1) after the head left").err)
	equal(t, available(t, s), 0, "available")
}

// Bad input is reported before anything is sent.
func TestBadInputSendsNothing(t *testing.T) {
	ctx := context.Background()
	c, cc := countedClient(t)
	s := New(c, redistest.Key(t, "sem"))
	empty := New(c, "")
	nilClient := New(nil, "x")

	invalid := map[string]error{
		"Acquire(0)":            s.Acquire(ctx, 0),
		"Acquire(-1)":           s.Acquire(ctx, -1),
		"Acquire(2^53+1)":       s.Acquire(ctx, maxPermits+1),
		"Release(0)":            s.Release(ctx, 0),
		"Release(-2)":           s.Release(ctx, -2),
		"AddPermits(-2^53-1)":   s.AddPermits(ctx, -maxPermits-1),
		"empty name Acquire":    empty.Acquire(ctx, 1),
		"empty name Release":    empty.Release(ctx, 1),
		"empty name AddPermits": empty.AddPermits(ctx, 1),
		"nil client Acquire":    nilClient.Acquire(ctx, 1),
	}
	_, invalid["TryAcquire(1, -1s)"] = s.TryAcquire(ctx, 1, -time.Second)
	_, invalid["TryAcquire(0, 1s)"] = s.TryAcquire(ctx, 0, time.Second)
	_, invalid["TrySetPermits(-1)"] = s.TrySetPermits(ctx, -1)
	_, invalid["empty name AvailablePermits"] = empty.AvailablePermits(ctx)
	_, invalid["empty name DrainPermits"] = empty.DrainPermits(ctx)
	_, invalid["empty name Delete"] = empty.Delete(ctx)
	_, invalid["empty name TrySetPermits"] = empty.TrySetPermits(ctx, 1)
	allInvalidNothingSent(t, invalid, cc)
}

// Every call on a closed client fails with ErrClosed, and a wait in
// progress ends with it.
func TestClosed(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	s := New(c, redistest.Key(t, "sem"))
	done := async(func() error { return s.Acquire(ctx, 1) })
	eventually(t, 5*time.Second, "the waiter subscribes", func() bool { return waiters(s.h.C) == 1 })
	queued := async(func() error { return s.Acquire(ctx, 1) })
	eventually(t, 5*time.Second, "a second caller in line", func() bool { return lineLen(s.h.C, s.h.Name) == 2 })
	noErr(t, c.Close())
	for _, ch := range []<-chan result{done, queued} {
		if r := await(t, ch, 5*time.Second, "Acquire during Close"); !errors.Is(r.err, redisync.ErrClosed) {
			t.Fatalf("Acquire during Close: got %v, want ErrClosed", r.err)
		}
	}
	if err := s.Release(ctx, 1); !errors.Is(err, redisync.ErrClosed) {
		t.Fatalf("Release after Close: got %v", err)
	}
	if _, err := s.AvailablePermits(ctx); !errors.Is(err, redisync.ErrClosed) {
		t.Fatalf("AvailablePermits after Close: got %v", err)
	}
	equal(t, lineLen(s.h.C, s.h.Name), 0, "callers in line")
}

// Release runs even when ctx is already cancelled.
func TestReleaseWithCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := New(newClient(t), redistest.Key(t, "sem"))
	cancel()
	noErr(t, s.Release(ctx, 2))
	equal(t, available(t, s), 2, "available after a release with a cancelled ctx")
}

func TestWakePolicy(t *testing.T) {
	for _, tc := range []struct {
		payload string
		waiters int
		want    int
	}{
		{"3", 5, 3}, {"3", 2, 2}, {"1", 1, 1}, {"0", 4, 0}, {"-2", 4, 0}, {"x", 4, 1}, {"", 3, 1},
	} {
		equal(t, wake(tc.payload, tc.waiters), tc.want, "wake("+tc.payload+", "+strconv.Itoa(tc.waiters)+")")
	}
}

func TestKeysShareSlot(t *testing.T) {
	for _, name := range []string{"jobs", "{tenant}:jobs", "a:b:c"} {
		slot := keys.Slot(name)
		for _, k := range []string{keys.SemaphoreTimeouts(name), keys.SemaphoreChannel(name), keys.Request(name, "x:1")} {
			equal(t, keys.Slot(k), slot, k+" slot")
		}
	}
}
