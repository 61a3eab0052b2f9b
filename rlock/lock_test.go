package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

func holdCount(t *testing.T, l *rlock.Lock, ctx context.Context) int64 {
	t.Helper()
	n, err := l.HoldCount(ctx)
	require.NoError(t, err)
	return n
}

// Redisson: hold count 0,1,0,2,1,0.
func TestHoldCount(t *testing.T) {
	ctx := redisync.WithOwner(context.Background()) // reentrancy needs a context owner
	l := rlock.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	assert.EqualValues(t, 0, holdCount(t, l, ctx))
	require.NoError(t, l.Lock(ctx))
	assert.EqualValues(t, 1, holdCount(t, l, ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.EqualValues(t, 0, holdCount(t, l, ctx))
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Lock(ctx))
	assert.EqualValues(t, 2, holdCount(t, l, ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.EqualValues(t, 1, holdCount(t, l, ctx))
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, l.Unlock(ctx))
	assert.EqualValues(t, 0, holdCount(t, l, ctx))
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

// Redisson: a lock with a 2 s lease is taken by another owner soon after it
// runs out, and the first owner's unlock then fails with not-held.
func TestFixedLeaseExpires(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name, rlock.WithLease(time.Second))
	b := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, a.Lock(ctx))
	start := time.Now()
	ok, err := b.TryLock(ctx, 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	waited := time.Since(start)
	t.Logf("second owner got the lock %v after the first took it with a 1s lease", waited)
	assert.Greater(t, waited, 700*time.Millisecond)
	assert.Less(t, waited, 3*time.Second)
	err = a.Unlock(ctx)
	assert.ErrorIs(t, err, redisync.ErrNotHeld)
	select {
	case <-a.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done not closed after the fixed lease ran out")
	}
	assert.ErrorIs(t, a.Err(), redisync.ErrLockLost)
	assert.EqualValues(t, 1, holdCount(t, b, ctx), "the failed unlock must not touch the new holder")
	require.NoError(t, b.Unlock(ctx))
}

// Redisson: TTL after lock(1h) is about 1h; after unlock the lock is gone;
// with the watchdog about the watchdog timeout.
func TestTTL(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)

	l := rlock.New(c, name, rlock.WithLease(time.Hour))
	require.NoError(t, l.Lock(ctx))
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 5)
	require.NoError(t, l.Unlock(ctx))
	ttl, err = l.TTL(ctx)
	require.NoError(t, err)
	assert.Zero(t, ttl)

	w := rlock.New(c, name)
	require.NoError(t, w.Lock(ctx))
	ttl, err = w.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, core.DefaultWatchdogTimeout.Seconds(), ttl.Seconds(), 2)
	require.NoError(t, w.Unlock(ctx))
}

// The watchdog keeps a lock alive across many leases.
func TestWatchdogRenews(t *testing.T) {
	ctx := context.Background()
	c := clienttest.New(t, redistest.Shared(t).Client(t), redisync.WithWatchdogTimeout(600*time.Millisecond))
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	time.Sleep(2 * time.Second) // more than three leases
	ttl, err := l.TTL(ctx)
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.NoError(t, l.Err())
	assert.EqualValues(t, 1, holdCount(t, l, ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.ErrorIs(t, l.Err(), redisync.ErrNotHeld)
	assert.Eventually(t, func() bool { return (*core.Client)(c).Holds().Stats().Holds == 0 }, time.Second, 10*time.Millisecond)
}

// Redisson: a client that stops without unlocking frees its locks within
// one watchdog timeout.
func TestClosedClientFreesWithinWatchdogTimeout(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	dead := redisync.New(s.Client(t), redisync.WithWatchdogTimeout(time.Second))
	a := rlock.New(dead, name)
	require.NoError(t, a.Lock(ctx))
	time.Sleep(700 * time.Millisecond) // one renewal happens
	require.NoError(t, dead.Close())
	assert.ErrorIs(t, a.Err(), redisync.ErrLockLost, "closing a client ends its holds")
	assert.ErrorIs(t, a.Unlock(ctx), redisync.ErrClosed)

	b := rlock.New(clienttest.New(t, s.Client(t)), name)
	start := time.Now()
	require.NoError(t, b.Lock(ctx))
	waited := time.Since(start)
	t.Logf("lock of the closed client freed after %v", waited)
	assert.Less(t, waited, 2500*time.Millisecond)
	require.NoError(t, b.Unlock(ctx))
}

// Redisson: tryLock with a wait on a held lock returns false after the wait.
func TestTryLockWaitRunsOut(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, a.Lock(ctx))
	b := rlock.New(clienttest.New(t, s.Client(t)), name)

	ok, err := b.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok)

	start := time.Now()
	ok, err = b.TryLock(ctx, time.Second)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, elapsed, time.Second)
	assert.Less(t, elapsed, 3*time.Second)
	require.NoError(t, a.Unlock(ctx))
}

// Mutual exclusion: 8 clients × 25 guarded read-modify-write increments of a
// Redis key give exactly 200.
func TestHammer(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "lock")
	counter := redistest.Key(t, "counter")
	rdb := s.Client(t)
	var lockers []redisync.Locker
	for i := 0; i < 8; i++ {
		lockers = append(lockers, rlock.New(clienttest.New(t, s.Client(t)), name))
	}
	n := hammer(t, ctx, rdb, counter, lockers, 1, 25)
	assert.Equal(t, 200, n)
}

// hammer runs, in goroutines goroutines sharing each of lockers, increments
// guarded read-modify-write increments of counter each, reports every error
// and two holders inside at once, and returns the counter's final value.
func hammer(t *testing.T, ctx context.Context, rdb *redis.Client, counter string, lockers []redisync.Locker, goroutines, increments int) int {
	t.Helper()
	var inside atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(lockers)*goroutines)
	for _, l := range lockers {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range increments {
					if err := l.Lock(ctx); err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						errs <- errors.New("two holders inside the critical section")
					}
					v, _ := rdb.Get(ctx, counter).Int()
					if err := rdb.Set(ctx, counter, v+1, 0).Err(); err != nil {
						errs <- err
					}
					inside.Add(-1)
					if err := l.Unlock(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := rdb.Get(ctx, counter).Int()
	require.NoError(t, err)
	return n
}

// A waiter is woken by the release message, not by the holder's lease (30 s)
// nor by the re-check interval (1 min here).
func TestWaiterWokenByRelease(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name)
	b := rlock.New(clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute)), name)
	require.NoError(t, a.Lock(ctx))
	got := make(chan time.Time, 1)
	go func() {
		if err := b.Lock(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	waitForWaiters(t, s, name, 1)
	released := time.Now()
	require.NoError(t, a.Unlock(ctx))
	select {
	case at := <-got:
		t.Logf("waiter held the lock %v after the release", at.Sub(released))
		assert.Less(t, at.Sub(released), time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by the release")
	}
	require.NoError(t, b.Unlock(ctx))
}

// waitForWaiters waits until n clients are subscribed to the lock's channel.
func waitForWaiters(t *testing.T, s *redistest.Server, name string, n int64) {
	t.Helper()
	rdb := s.Client(t)
	ch := "redisson_lock__channel:{" + name + "}"
	require.Eventually(t, func() bool {
		m, err := rdb.PubSubNumSub(context.Background(), ch).Result()
		return err == nil && m[ch] >= n
	}, 5*time.Second, 5*time.Millisecond)
}

// Redisson: after all waiters are done no lock channel is left subscribed.
// And: 200 waiters of one client on 50 locks share one pub/sub connection;
// they line up locally, so only the head of each lock's line subscribes.
func TestWaitersShareOneConnectionAndLeaveNoSubscription(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	holder := clienttest.New(t, s.Client(t))
	waiting := clienttest.New(t, s.Client(t))
	rdb := s.Client(t)
	var names []string
	var held []*rlock.Lock
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("%s:%d", redistest.Key(t), i)
		names = append(names, name)
		l := rlock.New(holder, name)
		require.NoError(t, l.Lock(ctx))
		held = append(held, l)
	}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := rlock.New(waiting, names[i%50])
			if err := l.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wc := (*core.Client)(waiting)
	require.Eventually(t, func() bool {
		for _, name := range names {
			if wc.Lines().Len(core.LockLine("rlock", name)) != 4 {
				return false
			}
		}
		return wc.Mux().Stats().Waiters == 50
	}, 10*time.Second, 10*time.Millisecond)
	// each lock's waiters listen on the client's own channel of the lock,
	// and, while the holder is one the lock's queue did not record (it took
	// the lock while nobody waited), on the lock's channel too
	assert.LessOrEqual(t, wc.Mux().Stats().Channels, 100)
	conns := pubsubConnections(t, rdb)
	t.Logf("pub/sub connections with 200 waiters on 50 locks: %d", conns)
	assert.LessOrEqual(t, conns, 2)
	for _, l := range held {
		require.NoError(t, l.Unlock(ctx))
	}
	wg.Wait()
	assert.Eventually(t, func() bool {
		chans, err := rdb.PubSubChannels(ctx, "redis*_lock_*").Result()
		return err == nil && len(chans) == 0
	}, 5*time.Second, 10*time.Millisecond, "lock channels left subscribed")
	assert.Equal(t, pubsub0, (*core.Client)(waiting).Mux().Stats().Waiters)
}

const pubsub0 = 0

func pubsubConnections(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	list, err := rdb.ClientList(context.Background()).Result()
	require.NoError(t, err)
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
			n++
		}
	}
	return n
}

// A cancelled Lock returns an error wrapping ctx.Err() and leaves no hold, no
// subscription and no goroutine (goleak in TestMain).
func TestCancelledLockLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name)
	wc := clienttest.New(t, s.Client(t))
	b := rlock.New(wc, name)
	require.NoError(t, a.Lock(ctx))

	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- b.Lock(cctx) }()
	waitForWaiters(t, s, name, 1)
	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)

	dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer dcancel()
	err = b.Lock(dctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	assert.Equal(t, 0, (*core.Client)(wc).Mux().Stats().Waiters)
	assert.EqualValues(t, 0, holdCount(t, b, ctx))
	assert.Equal(t, 0, (*core.Client)(wc).Holds().Stats().Holds)
	require.NoError(t, a.Unlock(ctx))
	locked, err := a.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

// A Lock whose context is already cancelled sends nothing it could leave
// behind, and reports the context's error.
func TestLockWithDoneContext(t *testing.T) {
	s := redistest.Shared(t)
	l := rlock.New(clienttest.New(t, s.Client(t)), redistest.Key(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.Lock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	locked, err := l.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

// go-redis re-sends a script whose reply was lost; the acquisition and the
// release must each change the hold count once.
func TestRetriedScriptsApplyOnce(t *testing.T) {
	ctx := redisync.WithOwner(context.Background()) // it re-enters
	s := redistest.Shared(t)
	c, proxy := clienttest.Proxied(t, s, redis.Options{PoolSize: 1})
	name := redistest.Key(t)
	l := rlock.New(c, name)
	direct := s.Client(t)

	// Load the scripts and open the pooled connection.
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))

	calls := func() int64 { return evalshaCalls(t, direct) }

	// The client's background reads go through the proxy too (its first
	// sample of the server's clock follows the first acquisition): when
	// the reply dropped was one of theirs, the acquisition ran once, and
	// it is released and tried again.
	for try := 1; ; try++ {
		before, dropped := calls(), proxy.Dropped()
		proxy.DropNextReply()
		require.NoError(t, l.Lock(ctx))
		require.Equal(t, dropped+1, proxy.Dropped(), "no reply was dropped")
		if calls() == before+2 {
			break // the acquisition ran twice on the server: its reply was the one lost
		}
		require.Less(t, try, 5, "the acquisition's reply was never the one dropped")
		require.NoError(t, l.Unlock(ctx))
	}
	assert.EqualValues(t, 1, holdCount(t, l, ctx))
	base := proxy.Dropped()

	require.NoError(t, l.Lock(ctx)) // reentrant: 2
	proxy.DropNextReply()
	require.NoError(t, l.Lock(ctx)) // re-sent reentrant acquisition: 3, not 4
	require.Equal(t, base+1, proxy.Dropped())
	assert.EqualValues(t, 3, holdCount(t, l, ctx))

	proxy.DropNextReply()
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, base+2, proxy.Dropped())
	assert.EqualValues(t, 2, holdCount(t, l, ctx))
	require.NoError(t, l.Unlock(ctx))
	proxy.DropNextReply()
	require.NoError(t, l.Unlock(ctx), "a re-sent final release must report success, not not-held")
	assert.EqualValues(t, 0, holdCount(t, l, ctx))
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}

func evalshaCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_evalsha:") {
			var calls int64
			_, err := fmt.Sscanf(strings.TrimPrefix(line, "cmdstat_evalsha:"), "calls=%d", &calls)
			require.NoError(t, err)
			return calls
		}
	}
	return 0
}

// A Java service's Redisson lock (a hash field "<uuid>:<thread id>") blocks a
// Go owner, and its unlock message wakes a Go waiter; a Go hold looks like a
// Redisson hold.
func TestRedissonWireCompatibility(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	javaOwner := "8c1a1f47-3a4b-4d5e-9f60-7182a3b4c5d6:57"
	require.NoError(t, rdb.HSet(ctx, name, javaOwner, 1).Err())
	require.NoError(t, rdb.PExpire(ctx, name, 30*time.Second).Err())

	c := clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute))
	l := rlock.New(c, name)
	ok, err := l.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a Java holder must block Go")

	got := make(chan time.Time, 1)
	go func() {
		if err := l.Lock(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	waitForWaiters(t, s, name, 1)
	// What Redisson's unlock does: delete the hash, publish 0.
	released := time.Now()
	require.NoError(t, rdb.Del(ctx, name).Err())
	require.NoError(t, rdb.Publish(ctx, "redisson_lock__channel:{"+name+"}", "0").Err())
	select {
	case at := <-got:
		t.Logf("Go waiter got the lock %v after the Java unlock message", at.Sub(released))
	case <-time.After(5 * time.Second):
		t.Fatal("Java unlock message did not wake the Go waiter")
	}

	fields, err := rdb.HGetAll(ctx, name).Result()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	for owner, count := range fields {
		assert.True(t, strings.HasPrefix(owner, c.ID()+":"), "owner field %q", owner)
		assert.Equal(t, "1", count)
	}
	ttl, err := rdb.PTTL(ctx, name).Result()
	require.NoError(t, err)
	assert.InDelta(t, 30, ttl.Seconds(), 2)

	// Java waiters subscribe to the channel: a Go release publishes 0 there.
	sub := rdb.Subscribe(ctx, "redisson_lock__channel:{"+name+"}")
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0", msg.Payload)
}

// The key deleted out of band closes Done with ErrLockLost.
func TestLossSignalled(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t), redisync.WithWatchdogTimeout(900*time.Millisecond))
	name := redistest.Key(t)
	l := rlock.New(c, name)

	select {
	case <-l.Done():
	default:
		t.Fatal("Done must be closed before the first acquisition")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrNotHeld)

	require.NoError(t, l.Lock(ctx))
	assert.NoError(t, l.Err())
	require.NoError(t, s.Client(t).Del(ctx, name).Err())
	select {
	case <-l.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("loss not signalled")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld)
}

// When no renewal succeeds within the lease (Redis unreachable), the hold is
// lost; and Unlock stops renewal even when its release fails.
func TestRenewalFailureLosesHoldAfterLease(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	proxy := redistest.NewProxy(t, s.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(time.Second))
	t.Cleanup(func() { _ = c.Close() })

	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	proxy.Block()
	proxy.CutAll()
	select {
	case <-l.Done():
		t.Logf("hold lost: %v", l.Err())
	case <-time.After(4 * time.Second):
		t.Fatal("hold not lost while Redis was unreachable for more than its lease")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)

	proxy.Unblock()
	l2 := rlock.New(c, redistest.Key(t))
	require.NoError(t, l2.Lock(ctx))
	proxy.Block()
	proxy.CutAll()
	err := l2.Unlock(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, l2.Err(), redisync.ErrNotHeld)
	assert.Equal(t, 0, (*core.Client)(c).Holds().Stats().Holds, "Unlock must stop renewal even when the release fails")
	proxy.Unblock()
}

// Owners: handles are their own owners in Redis, and without a context
// owner the handles of one name are one mutex (API.md's rule change,
// issue 40 item 6): any of them releases the name's hold; a context owner
// is shared by every handle; a token hands a hold over.
func TestOwners(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	a, b := rlock.New(c, name), rlock.New(c, name)

	require.NoError(t, a.Lock(ctx))
	ok, err := b.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "two handles, one mutex")
	require.NoError(t, b.Unlock(ctx), "a handle of the name releases its hold")
	assert.EqualValues(t, 0, holdCount(t, a, ctx))
	assert.ErrorIs(t, a.Unlock(ctx), redisync.ErrNotHeld, "released once")

	octx := redisync.WithOwner(ctx)
	require.NoError(t, a.Lock(octx))
	ok, err = b.TryLock(octx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "a context owner re-enters through any handle")
	assert.EqualValues(t, 2, holdCount(t, a, octx))
	assert.EqualValues(t, 0, holdCount(t, a, ctx), "the handle's own owner holds nothing")

	token, ok := redisync.OwnerToken(octx)
	require.True(t, ok)
	done := make(chan error, 1)
	go func() {
		hctx := redisync.WithOwnerToken(context.Background(), token)
		if err := a.Unlock(hctx); err != nil {
			done <- err
			return
		}
		done <- b.Unlock(hctx)
	}()
	require.NoError(t, <-done)
	locked, err := a.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)

	_, err = a.TryLock(redisync.WithOwnerToken(ctx, 0), 0)
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}

// Invalid arguments are rejected before anything is sent.
func TestInvalidArgumentsSendNothing(t *testing.T) {
	rdb, dials := undiallable(t)
	ctx := context.Background()
	good := redisync.New(rdb)
	t.Cleanup(func() { _ = good.Close() })
	badOpt := redisync.New(rdb, redisync.WithWatchdogTimeout(-time.Second))
	badID := redisync.New(rdb, redisync.WithID(""))
	badRecheck := redisync.New(rdb, redisync.WithRecheckInterval(0))

	cases := map[string]func() error{
		"empty name":       func() error { return rlock.New(good, "").Lock(ctx) },
		"negative wait":    func() error { _, err := rlock.New(good, "x").TryLock(ctx, -time.Second); return err },
		"zero lease":       func() error { return rlock.New(good, "x", rlock.WithLease(0)).Lock(ctx) },
		"negative lease":   func() error { return rlock.New(good, "x", rlock.WithLease(-time.Second)).Lock(ctx) },
		"bad watchdog":     func() error { return rlock.New(badOpt, "x").Lock(ctx) },
		"empty id":         func() error { return rlock.New(badID, "x").Lock(ctx) },
		"bad recheck":      func() error { return rlock.New(badRecheck, "x").Lock(ctx) },
		"nil client":       func() error { return rlock.New(nil, "x").Lock(ctx) },
		"nil redis":        func() error { return rlock.New(redisync.New(nil), "x").Lock(ctx) },
		"unlock no name":   func() error { return rlock.New(good, "").Unlock(ctx) },
		"force no name":    func() error { _, err := rlock.New(good, "").ForceUnlock(ctx); return err },
		"ttl no name":      func() error { _, err := rlock.New(good, "").TTL(ctx); return err },
		"count zero owner": func() error { _, err := rlock.New(good, "x").HoldCount(redisync.WithOwnerToken(ctx, 0)); return err },
	}
	requireInvalidSendNothing(t, cases, dials)
}

// undiallable returns a go-redis client whose every dial fails, and the
// count of its dials.
func undiallable(t *testing.T) (*redis.Client, *atomic.Int32) {
	dials := new(atomic.Int32)
	rdb := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("dialled")
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, dials
}

// requireInvalidSendNothing runs each case in a subtest, expecting
// ErrInvalidArgument, and checks that none of them dialled.
func requireInvalidSendNothing(t *testing.T, cases map[string]func() error, dials *atomic.Int32) {
	t.Helper()
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, f(), redisync.ErrInvalidArgument)
		})
	}
	assert.Zero(t, dials.Load(), "nothing may be sent for an invalid argument")
}

// Unlock runs even when the caller's context is already cancelled.
func TestUnlockWithCancelledContext(t *testing.T) {
	l := rlock.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, l.Lock(ctx))
	cancel()
	require.NoError(t, l.Unlock(ctx))
	locked, err := l.IsLocked(context.Background())
	require.NoError(t, err)
	assert.False(t, locked)
}

// After Close every call returns ErrClosed, and waits in progress end.
func TestClose(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(ctx))

	c := redisync.New(s.Client(t))
	l := rlock.New(c, name)
	errc := make(chan error, 1)
	go func() { errc <- l.Lock(ctx) }()
	waitForWaiters(t, s, name, 1)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.ErrorIs(t, <-errc, redisync.ErrClosed)

	_, err := l.TryLock(ctx, 0)
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrClosed)
	_, err = l.IsLocked(ctx)
	assert.ErrorIs(t, err, redisync.ErrClosed)
	require.NoError(t, holder.Unlock(ctx))
}

// ForceUnlock frees a lock whoever holds it, wakes waiters and ends the
// local holder's hold.
func TestForceUnlock(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	holder := rlock.New(c, name)
	require.NoError(t, holder.Lock(ctx))
	waiter := rlock.New(clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute)), name)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	waitForWaiters(t, s, name, 1)

	existed, err := rlock.New(c, name).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, existed)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ForceUnlock did not wake the waiter")
	}
	<-holder.Done()
	assert.ErrorIs(t, holder.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, holder.Unlock(ctx), redisync.ErrNotHeld)

	require.NoError(t, waiter.Unlock(ctx))
	existed, err = waiter.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, existed)
}

// Fencing tokens grow with every acquisition, reentrant ones included, and
// survive unlock.
func TestFencing(t *testing.T) {
	ctx := redisync.WithOwner(context.Background()) // it re-enters
	s := redistest.Shared(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	l := rlock.New(c, name, rlock.WithFencing())
	assert.Zero(t, l.FencingToken())
	require.NoError(t, l.Lock(ctx))
	t1 := l.FencingToken()
	require.NoError(t, l.Lock(ctx))
	t2 := l.FencingToken()
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Lock(ctx))
	t3 := l.FencingToken()
	require.NoError(t, l.Unlock(ctx))
	assert.Positive(t, t1)
	assert.Equal(t, t1, t2, "a re-entry keeps the hold's token")
	assert.Less(t, t2, t3)
	v, err := s.Client(t).Get(ctx, "redisson_lock_token:{"+name+"}").Int64()
	require.NoError(t, err)
	assert.Equal(t, t3, v)

	plain := rlock.New(c, name)
	require.NoError(t, plain.Lock(ctx))
	assert.Zero(t, plain.FencingToken(), "no token without WithFencing")
	require.NoError(t, plain.Unlock(ctx))
}

// Scripts keep working after SCRIPT FLUSH (EVALSHA falls back to EVAL).
func TestScriptFlush(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	l := rlock.New(clienttest.New(t, s.Client(t)), redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, s.Client(t).ScriptFlush(ctx).Err())
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
}

// A restarted server (all locks and scripts gone) ends the watchdog's holds
// and the lock can be taken again.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := clienttest.New(t, s.Client(t), redisync.WithWatchdogTimeout(900*time.Millisecond))
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	s.Restart(t)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("loss after restart not signalled")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	// As with sync.Mutex, a Lock through a plain handle is paired with its
	// Unlock, even after the hold was lost: the Unlock reports the loss.
	assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld)
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
}

// The watchdog renews the holds of a client due together in one round, at
// most 100 holds per script call, sent together through the client's
// script pipeline.
func TestWatchdogBatches(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := clienttest.New(t, s.Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
	var locks []*rlock.Lock
	for i := 0; i < 250; i++ {
		l := rlock.New(c, fmt.Sprintf("%s:%d", redistest.Key(t), i))
		require.NoError(t, l.Lock(ctx))
		locks = append(locks, l)
	}
	direct := s.Client(t)
	wd := func() core.WatchdogStats { return (*core.Client)(c).Holds().Stats() }
	// The first tick on a fresh server also loads the script (NOSCRIPT, then
	// EVAL): measure the ticks after it.
	// Holds acquired over more than half an interval are renewed in
	// rounds of their own at first, which come together within a few.
	require.Eventually(t, func() bool { return wd().Ticks >= 4 }, 10*time.Second, 10*time.Millisecond)
	first := wd()
	calls0 := evalshaCalls(t, direct)
	require.Eventually(t, func() bool { return wd().Ticks >= first.Ticks+2 }, 5*time.Second, 10*time.Millisecond)
	st := wd()
	ticks := st.Ticks - first.Ticks
	t.Logf("per renewal tick with 250 holds: %d script calls", (st.Calls-first.Calls)/ticks)
	assert.Equal(t, 3*ticks, st.Calls-first.Calls, "250 holds take 3 calls of ≤100")
	assert.InDelta(t, 3*ticks, evalshaCalls(t, direct)-calls0, 3, "Redis saw the batched calls")
	assert.Equal(t, 250, st.Holds)
	for _, l := range locks {
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Equal(t, 0, wd().Holds)
}

// Regression (issue 25): an Unlock through a handle that took nothing
// without a context owner read `rlock "x": side not locked through this
// handle`; a lock has no sides.
func TestUnlockNotLockedWording(t *testing.T) {
	ctx := context.Background()
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	for _, tc := range []struct {
		kind string // as errors name it
		l    interface {
			redisync.Locker
			Name() string
		}
	}{
		{"rlock", rlock.New(c, redistest.Key(t))},
		{"fair lock", rlock.NewFair(c, redistest.Key(t))},
		{"spin lock", rlock.NewSpin(c, redistest.Key(t))},
	} {
		err := tc.l.Unlock(ctx)
		require.ErrorIs(t, err, redisync.ErrNotHeld, tc.kind)
		assert.Equal(t, tc.kind+` "`+tc.l.Name()+`": not locked through this handle: redisync: not held`, err.Error())
	}
}
