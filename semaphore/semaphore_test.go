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
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

func available(t *testing.T, s *Semaphore) int64 {
	t.Helper()
	n, err := s.AvailablePermits(context.Background())
	require.NoError(t, err)
	return n
}

func TestTrySetPermits(t *testing.T) {
	ctx := context.Background()
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	ok, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok, "first TrySetPermits")
	ok, err = s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.False(t, ok, "second TrySetPermits")
	require.EqualValues(t, 3, available(t, s), "available")
	require.Equal(t, s.h.Name, s.Name(), "Name")

	zero := New(clienttest.Shared(t), redistest.Key(t, "zero"))
	ok, err = zero.TrySetPermits(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok, "TrySetPermits(0) on an unset semaphore")
	ok, err = zero.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.False(t, ok, "TrySetPermits after TrySetPermits(0)")
}

// Redisson: release on a semaphore that was never set gives 1 permit.
func TestReleaseWithoutSet(t *testing.T) {
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.Release(context.Background(), 1))
	require.EqualValues(t, 1, available(t, s), "available after release without set")
}

// Redisson: acquire on a semaphore that was never set waits.
func TestAcquireNeverSetWaits(t *testing.T) {
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	start := time.Now()
	ok, err := s.TryAcquire(context.Background(), 1, 200*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquire on an unset semaphore")
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "TryAcquire returned before its wait")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = s.Acquire(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Acquire on an unset semaphore")
	require.EqualValues(t, 0, available(t, s), "available")
}

// Redisson: acquire(4) with 2 left completes right after the second of two
// later releases.
func TestAcquireCompletesAfterSecondRelease(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := New(clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute)), name)
	other := New(clienttest.Shared(t), name)
	_, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)

	done := async(func() error { return s.Acquire(ctx, 4) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
	require.NoError(t, other.Release(ctx, 1))
	pending(t, done, 300*time.Millisecond, "Acquire(4) with 3 available")
	require.NoError(t, other.Release(ctx, 1))
	released := time.Now()
	r := await(t, done, 3*time.Second, "Acquire(4) after the second release")
	require.NoError(t, r.err)
	t.Logf("acquired %v after the second release", r.at.Sub(released))
	require.EqualValues(t, 0, available(t, s), "available")
}

func TestAddPermits(t *testing.T) {
	ctx := context.Background()
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.AddPermits(ctx, 2))
	require.EqualValues(t, 2, available(t, s), "after AddPermits(2) on an unset semaphore")
	require.NoError(t, s.AddPermits(ctx, -5))
	require.EqualValues(t, -3, available(t, s), "after AddPermits(-5)")
	ok, err := s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquire with -3 available")
	require.NoError(t, s.AddPermits(ctx, 4))
	ok, err = s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok, "TryAcquire with 1 available")
	require.EqualValues(t, 0, available(t, s), "available")
}

func TestDrainPermits(t *testing.T) {
	ctx := context.Background()
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	n, err := s.DrainPermits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 0, n, "drain of an unset semaphore")
	exists, err := s.h.C.Redis().Exists(ctx, s.h.Name).Result()
	require.NoError(t, err)
	require.EqualValues(t, 0, exists, "key after draining an unset semaphore")

	require.NoError(t, s.AddPermits(ctx, 7))
	n, err = s.DrainPermits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 7, n, "drained")
	require.EqualValues(t, 0, available(t, s), "available after drain")

	require.NoError(t, s.AddPermits(ctx, -2))
	n, err = s.DrainPermits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, -2, n, "drain of a negative count")
	require.EqualValues(t, 0, available(t, s), "available after draining a negative count")
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	ok, err := s.Delete(ctx)
	require.NoError(t, err)
	require.False(t, ok, "Delete of an unset semaphore")
	require.NoError(t, s.AddPermits(ctx, 3))
	ok, err = s.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok, "Delete")
	require.EqualValues(t, 0, available(t, s), "available after Delete")
	ok, err = s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "TrySetPermits after Delete")
}

// The layout is Redisson's: a string counter named name, and every release
// publishes the new count on redisson_sc:{name}.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := New(clienttest.Shared(t), name)

	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	_, err = s.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, any("2"), srv.Do(t, "GET", name), "GET name")
	require.Equal(t, any("string"), srv.Do(t, "TYPE", name), "TYPE name")
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", msg.Payload, "message of TrySetPermits")

	require.NoError(t, s.Acquire(ctx, 2))
	require.Equal(t, any("0"), srv.Do(t, "GET", name), "GET name after acquiring all")
	require.NoError(t, s.Release(ctx, 1))
	msg, err = sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "1", msg.Payload, "message of Release")

	// A count written by someone else (a Java service) is used as is.
	srv.Do(t, "SET", name, "5")
	ok, err := s.TryAcquire(ctx, 5, 0)
	require.NoError(t, err)
	require.True(t, ok, "TryAcquire(5) of a count set with SET")
}

// Redisson: 16 clients × 100 guarded sections with 1 permit give exactly
// 1600; scaled down to 8 × 25 for a busy 2-core machine.
func TestGuardedSections(t *testing.T) {
	const clients, sections = 8, 25
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	counter := redistest.Key(t, "counter")
	ok, err := New(clienttest.Shared(t), name).TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "TrySetPermits")

	sems := make([]*Semaphore, clients)
	rdbs := make([]*redis.Client, clients)
	for c := range clients {
		rdbs[c] = srv.Client(t)
		sems[c] = New(clienttest.New(t, rdbs[c]), name)
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
	require.EqualValues(t, 0, overlaps.Load(), "sections that overlapped")
	require.Equal(t, any(strconv.Itoa(clients*sections)), srv.Do(t, "GET", counter), "counter")
	require.Equal(t, any("1"), srv.Do(t, "GET", name), "permits after all sections")
}

// 6 clients × 10 sections with 2 permits never have more than 2 holders at
// once, and do reach 2.
func TestConcurrencyCap(t *testing.T) {
	const clients, sections, permits = 6, 10, 2
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	_, err := New(clienttest.Shared(t), name).TrySetPermits(ctx, permits)
	require.NoError(t, err)

	sems := make([]*Semaphore, clients)
	for c := range sems {
		sems[c] = New(clienttest.Shared(t), name)
	}
	most := mostHolders(t, clients, sections, func(c int) (func() error, error) {
		if err := sems[c].Acquire(ctx, 1); err != nil {
			return nil, err
		}
		return func() error { return sems[c].Release(ctx, 1) }, nil
	})
	require.EqualValues(t, permits, most, "most holders at once")
	require.EqualValues(t, permits, available(t, New(clienttest.Shared(t), name)), "permits after all sections")
}

// A waiter is woken by the release's message, within milliseconds: the
// re-check interval is a minute, so nothing else could wake it.
func TestWakeOnRelease(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	s := New(c, name)
	other := New(clienttest.Shared(t), name)

	var worst time.Duration
	for i := range 5 {
		done := async(func() error { return s.Acquire(ctx, 1) })
		require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
		released := time.Now()
		require.NoError(t, other.Release(ctx, 1))
		r := await(t, done, 5*time.Second, "Acquire after the release")
		require.NoError(t, r.err)
		d := r.at.Sub(released)
		t.Logf("round %d: woken %v after the release", i, d)
		worst = max(worst, d)
	}
	// Typically about a millisecond; generous for a busy machine.
	require.LessOrEqual(t, worst, time.Second, "slowest wake-up after the release")
}

// A release of n wakes up to n local waiters, not all of them.
func TestReleaseWakesUpToN(t *testing.T) {
	const waiting = 5
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	s := New(c, name)
	other := New(clienttest.Shared(t), name)

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
	require.Eventually(t, func() bool {
		return lineLen(s.h.C, name) == waiting && waiters(s.h.C) == 1
	}, 5*time.Second, redistest.Tick, "all callers wait")
	require.NoError(t, other.Release(ctx, 2))
	require.Eventually(t, func() bool { return got.Load() == 2 }, 3*time.Second, redistest.Tick, "two callers acquire")
	require.Never(t, func() bool { return got.Load() != 2 }, 300*time.Millisecond, redistest.Tick, "callers through after a release of 2")
	require.EqualValues(t, 2, got.Load(), "callers through after a release of 2")
	require.Equal(t, waiting-2, lineLen(s.h.C, name), "callers still waiting")
	require.EqualValues(t, 0, available(t, s), "available")

	require.NoError(t, other.Release(ctx, 3))
	for range waiting {
		r := await(t, results, 5*time.Second, "Acquire")
		require.NoError(t, r.err)
	}
	require.EqualValues(t, 0, lineLen(s.h.C, name), "callers left in line")
	require.Eventually(t, func() bool { return channels(s.h.C) == 0 }, 5*time.Second, redistest.Tick, "unsubscribed")
}

// A caller waiting for 3 permits is not starved by a stream of callers of
// the same client that take 1 permit at a time.
func TestLargeRequestNotStarved(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	name := redistest.Key(t, "sem")
	c := clienttest.Shared(t)
	s := New(c, name)
	_, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)

	var wg sync.WaitGroup
	var small atomic.Int64
	// As many callers as permits, each taking a permit back right after
	// releasing it, out of phase: without the local line, all three permits
	// would (almost) never be free at once.
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 7 * time.Millisecond) // out of phase, on purpose
			for ctx.Err() == nil {
				if err := s.Acquire(ctx, 1); err != nil {
					return
				}
				small.Add(1)
				time.Sleep(20 * time.Millisecond) // work while holding the permit
				_ = s.Release(ctx, 1)
			}
		}()
	}
	require.Eventually(t, func() bool { return small.Load() > 6 }, 5*time.Second, redistest.Tick, "the stream of small acquisitions runs")
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
	require.NoError(t, r.err)
	t.Logf("Acquire(3) took %v; %d Acquire(1) got through meanwhile", r.at.Sub(start), overtaken)
	// Only the three already under way when Acquire(3) arrived may finish
	// before it (without the line: hundreds, for more than a second).
	require.LessOrEqual(t, overtaken, int64(3), "Acquire(1) that overtook Acquire(3)")
	stop()
	wg.Wait()
	require.EqualValues(t, 3, available(t, New(clienttest.Shared(t), name)), "permits after the stream")
}

// TryAcquire with no wait does not overtake a caller of the same client
// that waits, even when enough permits for itself are available.
func TestTryAcquireDoesNotOvertake(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := New(clienttest.Shared(t), name)
	require.NoError(t, s.AddPermits(ctx, 1))
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	big := async(func() error { return s.Acquire(ctx2, 2) })
	require.Eventually(t, func() bool { return lineLen(s.h.C, name) == 1 && waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "Acquire(2) waits")
	ok, err := s.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquire(1) behind a waiting Acquire(2)")
	// Another client is not ordered behind it.
	ok, err = New(clienttest.Shared(t), name).TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok, "TryAcquire(1) of another client")
	cancel()
	require.ErrorIs(t, await(t, big, 5*time.Second, "cancelled Acquire(2)").err, context.Canceled, "cancelled Acquire")
}

// A lost pub/sub message (a count raised by a raw INCRBY, no PUBLISH) is
// noticed within the client's re-check interval.
func TestLostMessageRecheck(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	c := clienttest.Shared(t, redisync.WithRecheckInterval(300*time.Millisecond))
	s := New(c, name)

	done := async(func() error { return s.Acquire(ctx, 1) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
	srv.Do(t, "INCRBY", name, 1)
	raised := time.Now()
	r := await(t, done, 5*time.Second, "Acquire after a silent INCRBY")
	require.NoError(t, r.err)
	d := r.at.Sub(raised)
	t.Logf("noticed %v after the silent INCRBY", d)
	require.LessOrEqual(t, d, 2*time.Second, "noticed too late with a 300ms re-check interval")
}

// A request re-sent by go-redis after a lost reply is applied once.
func TestRetrySafety(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t)
	s := New(c, redistest.Key(t, "sem"))
	// Load every script first: a dropped NOSCRIPT reply would prove nothing.
	_, err := s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 1))
	require.NoError(t, s.Release(ctx, 1))
	require.NoError(t, s.AddPermits(ctx, 0))
	_, err = New(c, redistest.Key(t, "other")).DrainPermits(ctx)
	require.NoError(t, err)

	drop := func(what string, op func() error) {
		t.Helper()
		require.NoError(t, rdb.Ping(ctx).Err())
		before := p.Dropped()
		p.DropNextReply()
		require.NoError(t, op())
		require.Equal(t, before+1, p.Dropped(), "replies dropped during "+what)
	}
	drop("Acquire(2)", func() error { return s.Acquire(ctx, 2) })
	require.EqualValues(t, 3, available(t, s), "available after Acquire(2) with a lost reply")
	drop("Release(2)", func() error { return s.Release(ctx, 2) })
	require.EqualValues(t, 5, available(t, s), "available after Release(2) with a lost reply")
	drop("AddPermits(3)", func() error { return s.AddPermits(ctx, 3) })
	require.EqualValues(t, 8, available(t, s), "available after AddPermits(3) with a lost reply")
	var drained int64
	drop("DrainPermits", func() (err error) { drained, err = s.DrainPermits(ctx); return err })
	require.EqualValues(t, 8, drained, "DrainPermits with a lost reply")
	var deleted bool
	drop("Delete", func() (err error) { deleted, err = s.Delete(ctx); return err })
	require.True(t, deleted, "Delete with a lost reply")
	var set bool
	drop("TrySetPermits", func() (err error) { set, err = s.TrySetPermits(ctx, 4); return err })
	require.True(t, set, "TrySetPermits with a lost reply")
	require.EqualValues(t, 4, available(t, s), "available after TrySetPermits(4)")
}

// An acquisition whose reply was lost is undone: given back if it took
// place, cancelled if it had not.
func TestUndo(t *testing.T) {
	ctx := context.Background()
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.AddPermits(ctx, 3))
	led := s.h.C.Requests().Ledger()
	run := func(seq, low int64) int64 {
		t.Helper()
		r, err := lua.SemaphoreAcquireArgs{Semaphore: s.h.Name, Ledger: led.Key(s.h.Name), N: 2,
			Deadline: s.h.C.Requests().Deadline(ctx), Seq: seq, Low: low}.Run(ctx, s.h.C.Direct())
		require.NoError(t, err)
		return r
	}

	took, low := led.Begin(s.h.Name)
	require.EqualValues(t, 1, run(took, low), "acquisition")
	require.EqualValues(t, 1, available(t, s), "available after the acquisition")
	s.undo(ctx, 2, took)
	require.EqualValues(t, 3, available(t, s), "available after its undo")
	require.EqualValues(t, -1, run(took, took), "late copy of the undone acquisition")
	require.EqualValues(t, 3, available(t, s), "available after the late copy")

	never, low := led.Begin(s.h.Name)
	require.Equal(t, never, low, "the low-water mark once the undo ended")
	s.undo(ctx, 2, never)
	require.EqualValues(t, 3, available(t, s), "available after the undo of an acquisition that never ran")
	require.EqualValues(t, -1, run(never, never), "late acquisition after its undo")
	require.EqualValues(t, 3, available(t, s), "available after the late acquisition")

	// Once the client has moved on (a later request carries a higher
	// low-water mark), a copy of an earlier request is stale: it changes
	// nothing, even with its outcome dropped from the ledger.
	later, low := led.Begin(s.h.Name)
	require.EqualValues(t, 1, run(later, low), "a later acquisition")
	led.End(s.h.Name, later)
	require.NoError(t, s.Release(ctx, 2))
	fields, err := s.h.C.Redis().HKeys(ctx, led.Key(s.h.Name)).Result()
	require.NoError(t, err)
	require.NotContains(t, fields, strconv.FormatInt(took, 10), "the ledger keeps the requests in flight only")
	require.EqualValues(t, -1, run(took, took), "stale copy of an old acquisition")
	require.EqualValues(t, 3, available(t, s), "available after the stale copy")
}

// An acquisition cut off by its ctx while its script is in flight leaves
// the permits where they were.
func TestAcquireCutOff(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	s := New(c, redistest.Key(t, "sem"))
	require.NoError(t, s.AddPermits(ctx, 2))
	require.NoError(t, s.Acquire(ctx, 1)) // load the script
	require.NoError(t, s.Release(ctx, 1))
	require.NoError(t, rdb.Ping(ctx).Err())

	p.Block()
	time.AfterFunc(500*time.Millisecond, p.Unblock)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := s.Acquire(cctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Acquire cut off by its deadline")
	check := New(clienttest.Shared(t), s.h.Name)
	// A late copy of the acquisition, if any, lands after the proxy unblocks:
	// the count must stay 2 through that.
	require.Never(t, func() bool {
		n, err := check.AvailablePermits(ctx)
		return err != nil || n != 2
	}, 200*time.Millisecond, redistest.Tick, "available after the cut-off Acquire")
	require.EqualValues(t, 2, available(t, check), "available after the cut-off Acquire")
}

// A cancelled Acquire holds nothing: no permit, no subscription, no place
// in line.
func TestCancelledAcquire(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := clienttest.Shared(t)
	s := New(c, name)
	require.NoError(t, s.AddPermits(ctx, 1))

	ctx1, cancel1 := context.WithCancel(ctx)
	ctx2, cancel2 := context.WithCancel(ctx)
	first := async(func() error { return s.Acquire(ctx1, 3) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "first waiter subscribed")
	second := async(func() error { return s.Acquire(ctx2, 1) })
	require.Eventually(t, func() bool { return lineLen(s.h.C, name) == 2 }, 5*time.Second, redistest.Tick, "second caller in line")

	cancel2() // in line, not yet asking Redis
	require.ErrorIs(t, await(t, second, 5*time.Second, "cancelled second caller").err, context.Canceled, "cancelled caller in line")
	require.EqualValues(t, 1, lineLen(s.h.C, name), "callers in line")
	cancel1() // the head, subscribed
	require.ErrorIs(t, await(t, first, 5*time.Second, "cancelled first caller").err, context.Canceled, "cancelled head")
	require.EqualValues(t, 0, lineLen(s.h.C, name), "callers in line")
	require.EqualValues(t, 0, channels(s.h.C), "channels subscribed")
	require.EqualValues(t, 0, waiters(s.h.C), "pub/sub waiters")
	require.EqualValues(t, 1, available(t, s), "available")

	// A cancelled head hands its turn on.
	ctx3, cancel3 := context.WithCancel(ctx)
	head := async(func() error { return s.Acquire(ctx3, 3) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "head subscribed")
	next := async(func() error { return s.Acquire(ctx, 1) })
	pending(t, next, 200*time.Millisecond, "Acquire(1) behind Acquire(3)")
	cancel3()
	<-head
	require.NoError(t, await(t, next, 5*time.Second, "Acquire(1) after the head left").err)
	require.EqualValues(t, 0, available(t, s), "available")
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
	c := clienttest.Shared(t)
	s := New(c, redistest.Key(t, "sem"))
	done := async(func() error { return s.Acquire(ctx, 1) })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
	queued := async(func() error { return s.Acquire(ctx, 1) })
	require.Eventually(t, func() bool { return lineLen(s.h.C, s.h.Name) == 2 }, 5*time.Second, redistest.Tick, "a second caller in line")
	require.NoError(t, c.Close())
	for _, ch := range []<-chan result{done, queued} {
		require.ErrorIs(t, await(t, ch, 5*time.Second, "Acquire during Close").err, redisync.ErrClosed, "Acquire during Close")
	}
	require.ErrorIs(t, s.Release(ctx, 1), redisync.ErrClosed, "Release after Close")
	_, err := s.AvailablePermits(ctx)
	require.ErrorIs(t, err, redisync.ErrClosed, "AvailablePermits after Close")
	require.EqualValues(t, 0, lineLen(s.h.C, s.h.Name), "callers in line")
}

// Release runs even when ctx is already cancelled.
func TestReleaseWithCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := New(clienttest.Shared(t), redistest.Key(t, "sem"))
	cancel()
	require.NoError(t, s.Release(ctx, 2))
	require.EqualValues(t, 2, available(t, s), "available after a release with a cancelled ctx")
}

func TestKeysShareSlot(t *testing.T) {
	for _, name := range []string{"jobs", "{tenant}:jobs", "a:b:c"} {
		slot := keys.Slot(name)
		for _, k := range []string{keys.SemaphoreTimeouts(name), keys.SemaphoreChannel(name), keys.Request(name, "x:1")} {
			require.Equal(t, slot, keys.Slot(k), k+" slot")
		}
	}
}
