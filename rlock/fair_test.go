package rlock_test

import (
	"context"
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

// The fair lock's keys and channels, spelled out as Redisson names them.
func fairQueueKey(name string) string    { return "redisson_lock_queue:{" + name + "}" }
func fairTimeoutsKey(name string) string { return "redisson_lock_timeout:{" + name + "}" }
func fairChannel(name, owner string) string {
	return "redisson_lock__channel:{" + name + "}:" + owner
}

// fairQueue returns the owners queued for the fair lock, head first.
func fairQueue(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	q, err := rdb.LRange(context.Background(), fairQueueKey(name), 0, -1).Result()
	require.NoError(t, err)
	return q
}

// waitQueued waits until n owners are queued for the fair lock and returns
// them, head first.
func waitQueued(t *testing.T, rdb *redis.Client, name string, n int) []string {
	t.Helper()
	var q []string
	require.Eventually(t, func() bool {
		var err error
		q, err = rdb.LRange(context.Background(), fairQueueKey(name), 0, -1).Result()
		return err == nil && len(q) == n
	}, 10*time.Second, 2*time.Millisecond, "waiting for %d queued owners", n)
	return q
}

// requireNoQueue checks that the fair lock's queue and timeouts are gone.
func requireNoQueue(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	n, err := rdb.Exists(context.Background(), fairQueueKey(name), fairTimeoutsKey(name)).Result()
	require.NoError(t, err)
	require.Zero(t, n, "queue or timeouts left behind: %v", fairQueue(t, rdb, name))
}

// serverMillis returns the Redis server's time in epoch milliseconds.
func serverMillis(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	return now.UnixMilli()
}

// lockInGoroutine starts l.Lock(ctx) in a goroutine; the returned channel
// gets its error once the call returns. On success the goroutine then
// reports i on order (if not nil) and unlocks.
func lockInGoroutine(t *testing.T, ctx context.Context, l redisync.Locker, i int, order chan<- int) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := l.Lock(ctx)
		if err == nil && order != nil {
			order <- i
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	return done
}

func receive[T any](t *testing.T, c <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(within):
		t.Fatalf("%s: nothing within %v", what, within)
	}
	var zero T
	return zero
}

// fairFixture is what most fair-lock tests start from: a context, the
// shared server, a client of it, and a fresh lock name.
type fairFixture struct {
	t    *testing.T
	ctx  context.Context
	s    *redistest.Server
	rdb  *redis.Client
	name string
}

func newFairFixture(t *testing.T) *fairFixture {
	s := redistest.Shared(t)
	return &fairFixture{t: t, ctx: context.Background(), s: s, rdb: s.Client(t), name: redistest.Key(t)}
}

// client returns a new client of the shared server.
func (f *fairFixture) client() *redisync.Client { return clienttest.New(f.t, f.s.Client(f.t)) }

// fair returns a fair lock of the fixture's name on a new client.
func (f *fairFixture) fair(opts ...rlock.Option) *rlock.FairLock {
	return rlock.NewFair(f.client(), f.name, opts...)
}

// holder returns a fair lock on a new client that holds the lock.
func (f *fairFixture) holder(opts ...rlock.Option) *rlock.FairLock {
	h := f.fair(opts...)
	require.NoError(f.t, h.Lock(f.ctx))
	return h
}

// queue starts l.Lock in a goroutine (see lockInGoroutine) and waits until
// n owners are queued.
func (f *fairFixture) queue(ctx context.Context, l redisync.Locker, i int, order chan<- int, n int) <-chan error {
	done := lockInGoroutine(f.t, ctx, l, i, order)
	waitQueued(f.t, f.rdb, f.name, n)
	return done
}

// settledWaiter starts the Lock of a fair lock on a counting client (which
// unlocks once it gets in when order is not nil), waits until n owners are
// queued and the waiter has made its attempt after subscribing, and returns
// the lock, its Lock's result and the queue.
func (f *fairFixture) settledWaiter(order chan<- int, n int, opts ...rlock.Option) (*rlock.FairLock, <-chan error, []string) {
	c, runs := countingClient(f.t, f.s)
	l := rlock.NewFair(c, f.name, opts...)
	done := lockInGoroutine(f.t, f.ctx, l, 0, order)
	q := waitQueued(f.t, f.rdb, f.name, n)
	waitSettled(f.t, runs)
	return l, done, q
}

// addQueued puts owner in the queue with a deadline d milliseconds after
// the server's now, as a Redisson client does.
func (f *fairFixture) addQueued(owner string, d int64) {
	f.t.Helper()
	require.NoError(f.t, f.rdb.RPush(f.ctx, fairQueueKey(f.name), owner).Err())
	require.NoError(f.t, f.rdb.ZAdd(f.ctx, fairTimeoutsKey(f.name), redis.Z{Score: float64(serverMillis(f.t, f.rdb) + d), Member: owner}).Err())
}

// requireNoQueue checks that the fair lock's queue and timeouts are gone.
func (f *fairFixture) requireNoQueue() {
	f.t.Helper()
	requireNoQueue(f.t, f.rdb, f.name)
}

// receiveAll waits for each of done and returns what order received, in
// the order it received it.
func receiveAll(t *testing.T, done []<-chan error, order chan int) []int {
	t.Helper()
	for i := range done {
		require.NoError(t, receive(t, done[i], 20*time.Second, "waiter"))
	}
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	return got
}

// Five waiters on five clients get the lock in the order they asked for it.
func TestFairFIFOAcrossClients(t *testing.T) {
	f := newFairFixture(t)
	holder := f.holder()

	order := make(chan int, 5)
	var done []<-chan error
	for i := range 5 {
		done = append(done, f.queue(f.ctx, f.fair(), i, order, i+1))
	}
	require.NoError(t, holder.Unlock(f.ctx))
	got := receiveAll(t, done, order)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got)
	f.requireNoQueue()
}

// Within one client, waiters acting for different owners (separate
// handles, or context owners on one handle) are served in arrival order
// too; goroutines of one handle without a context owner line up at the
// handle and take one place in the queue.
func TestFairFIFOWithinOneClient(t *testing.T) {
	for _, mode := range []string{"handles", "owners", "shared handle"} {
		t.Run(mode, func(t *testing.T) {
			f := newFairFixture(t)
			ctx, name := f.ctx, f.name
			c := f.client()
			holder := f.holder()
			shared := rlock.NewFair(c, name)
			order := make(chan int, 5)
			var done []<-chan error
			for i := range 5 {
				switch mode {
				case "handles":
					done = append(done, f.queue(ctx, rlock.NewFair(c, name), i, order, i+1))
				case "owners":
					done = append(done, f.queue(redisync.WithOwner(ctx), shared, i, order, i+1))
				default:
					// Only the first is in the queue; the others wait at the
					// handle's gate, in arrival order (a caller that reaches
					// the gate cannot be told apart from one about to, so
					// this one checks exclusion and the single entry).
					done = append(done, f.queue(ctx, shared, i, order, 1))
				}
			}
			if mode == "shared handle" {
				assert.Len(t, fairQueue(t, f.rdb, name), 1, "one handle takes one place in the queue")
			}
			require.NoError(t, holder.Unlock(ctx))
			got := receiveAll(t, done, order)
			if mode == "shared handle" {
				assert.ElementsMatch(t, []int{0, 1, 2, 3, 4}, got)
			} else {
				assert.Equal(t, []int{0, 1, 2, 3, 4}, got)
			}
			f.requireNoQueue()
		})
	}
}

// A release publishes one message, "0", on the channel of the waiter at the
// head of the queue and nowhere else; the last release, with nobody
// queued, publishes nothing.
func TestFairOneMessagePerReleaseToTheHead(t *testing.T) {
	f := newFairFixture(t)
	ctx, rdb, name := f.ctx, f.rdb, f.name
	ps := rdb.PSubscribe(ctx, "redisson_lock__channel:{"+name+"}*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	msgs := ps.Channel()

	holder := f.holder()
	var done []<-chan error
	for i := range 3 {
		done = append(done, f.queue(ctx, f.fair(), i, make(chan int, 1), i+1))
	}
	owners := fairQueue(t, rdb, name)
	require.NoError(t, holder.Unlock(ctx))
	for _, d := range done {
		require.NoError(t, receive(t, d, 20*time.Second, "waiter"))
	}
	// A marker published after everything: once it arrives, every message
	// published before it has arrived too.
	end := fairChannel(name, "end")
	require.NoError(t, rdb.Publish(ctx, end, "end").Err())
	var got []string
	for {
		m := receive(t, msgs, 10*time.Second, "messages")
		if m.Channel == end {
			break
		}
		assert.Equal(t, "0", m.Payload)
		got = append(got, m.Channel)
	}
	want := []string{fairChannel(name, owners[0]), fairChannel(name, owners[1]), fairChannel(name, owners[2])}
	assert.Equal(t, want, got)
	f.requireNoQueue()
}

// A waiter that gives up — TryLock's wait runs out, a single TryLock
// attempt, its context ends, its client closes — leaves no queue entry, no
// deadline and no subscription behind.
func TestFairGiveUpLeavesNothing(t *testing.T) {
	f := newFairFixture(t)
	ctx, name := f.ctx, f.name
	holder := f.holder()
	wc := f.client()

	ok, err := rlock.NewFair(wc, name).TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	f.requireNoQueue()

	ok, err = rlock.NewFair(wc, name).TryLock(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, ok)
	f.requireNoQueue()

	cctx, cancel := context.WithCancel(ctx)
	errc := f.queue(cctx, rlock.NewFair(wc, name), 0, nil, 1)
	cancel()
	require.ErrorIs(t, receive(t, errc, 10*time.Second, "cancelled waiter"), context.Canceled)
	f.requireNoQueue()

	// Regression: Close returned before its waiters had left the queue, so
	// a process exiting right after Close left a dead entry (the next
	// waiter waited out its deadline) and the queue keys without a TTL.
	// Close now waits for the give-ups: the queue is empty when it returns.
	closing := redisync.New(f.s.Client(t))
	errc = f.queue(ctx, rlock.NewFair(closing, name), 0, nil, 1)
	require.NoError(t, closing.Close())
	f.requireNoQueue()
	require.ErrorIs(t, receive(t, errc, 10*time.Second, "waiter of a closed client"), redisync.ErrClosed)

	assert.Equal(t, 0, (*core.Client)(wc).Mux().Stats().Waiters)
	require.NoError(t, holder.Unlock(ctx))
}

// slowClient is a client whose waiters re-check only when a message comes
// (or after a minute): what wakes them within seconds is a message.
func slowClient(t *testing.T, s *redistest.Server) *redisync.Client {
	return clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute))
}

// scriptRuns is a go-redis hook that counts the scripts a client ran to
// completion (EVALSHA or EVAL answered without an error): a waiter has made
// its attempt after subscribing once its client ran two.
type scriptRuns struct{ n atomic.Int64 }

func (h *scriptRuns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && err == nil {
			h.n.Add(1)
		}
		return err
	}
}

// ProcessPipelineHook counts the scripts of a pipeline (the Client's
// script pipeline sends its batches so).
func (h *scriptRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if n := cmd.Name(); (n == "evalsha" || n == "eval") && cmd.Err() == nil {
				h.n.Add(1)
			}
		}
		return err
	}
}

// countingClient is slowClient with a scriptRuns hook.
func countingClient(t *testing.T, s *redistest.Server) (*redisync.Client, *scriptRuns) {
	rdb := s.Client(t)
	h := &scriptRuns{}
	rdb.AddHook(h)
	c := redisync.New(rdb, redisync.WithRecheckInterval(time.Minute))
	t.Cleanup(func() { _ = c.Close() })
	return c, h
}

// waitSettled waits until a waiter of a counting client has made its
// attempt after subscribing: from then on only a message, or its re-check
// timer, makes it try again.
func waitSettled(t *testing.T, h *scriptRuns) {
	t.Helper()
	require.Eventually(t, func() bool { return h.n.Load() >= 2 }, 10*time.Second, 2*time.Millisecond)
}

// A waiter at the head of the queue that gives up while the lock is free
// wakes the waiter behind it.
func TestFairLeavingHeadWakesTheNext(t *testing.T) {
	f := newFairFixture(t)
	ctx, rdb, name := f.ctx, f.rdb, f.name
	f.holder(rlock.WithLease(time.Minute))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := f.queue(cctx, rlock.NewFair(slowClient(t, f.s), name, rlock.WithWaiterTimeout(time.Minute)), 0, nil, 1)
	_, second, _ := f.settledWaiter(make(chan int, 1), 2, rlock.WithWaiterTimeout(time.Minute))

	// The lock vanishes without a message (deleted from outside); the head
	// then gives up, which must hand the turn on at once.
	require.NoError(t, rdb.Del(ctx, name).Err())
	cancel()
	require.ErrorIs(t, receive(t, first, 10*time.Second, "cancelled head"), context.Canceled)
	start := time.Now()
	require.NoError(t, receive(t, second, 10*time.Second, "second waiter"))
	t.Logf("the second waiter got the lock %v after the head left", time.Since(start))
	assert.Less(t, time.Since(start), 5*time.Second)
	f.requireNoQueue()
}

// A waiter whose process died at the head of the queue (its entry and a
// deadline 1.5s ahead, as a crashed client leaves them) holds up the next
// waiter until that deadline, and not much longer.
func TestFairDeadWaiterAtHead(t *testing.T) {
	f := newFairFixture(t)
	ctx, rdb, name := f.ctx, f.rdb, f.name
	dead := "00000000-dead-4000-8000-000000000000:1"
	deadline := serverMillis(t, rdb) + 1500
	start := time.Now()
	require.NoError(t, rdb.RPush(ctx, fairQueueKey(name), dead).Err())
	require.NoError(t, rdb.ZAdd(ctx, fairTimeoutsKey(name), redis.Z{Score: float64(deadline), Member: dead}).Err())

	l := f.fair()
	ok, err := l.TryLock(ctx, 20*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	waited := time.Since(start)
	t.Logf("the next waiter got the lock %v after the dead waiter's entry was written with a 1.5s deadline", waited)
	assert.Greater(t, waited, 1200*time.Millisecond, "a waiter jumped the queue")
	assert.Less(t, waited, 4*time.Second, "a dead waiter held up the queue past its deadline")
	f.requireNoQueue()

	// The same behind a holder: the release finds the dead head still
	// within its deadline; the next waiter goes in when the deadline passes.
	f.addQueued(dead, 1500)
	start = time.Now()
	next := f.queue(ctx, f.fair(), 0, make(chan int, 1), 2)
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, receive(t, next, 20*time.Second, "next waiter"))
	t.Logf("behind a holder: %v", time.Since(start))
	assert.Less(t, time.Since(start), 4*time.Second)
	f.requireNoQueue()
}

// A live waiter that waits much longer than the waiter timeout keeps its
// place: it is never dropped as dead, and is served in its turn (Redisson
// drops it and then never notifies it).
func TestFairLiveWaiterOutlastsWaiterTimeout(t *testing.T) {
	f := newFairFixture(t)
	ctx, rdb, name := f.ctx, f.rdb, f.name
	opt := rlock.WithWaiterTimeout(time.Second)
	holder := f.holder(opt)
	order := make(chan int, 2)
	first := f.queue(ctx, rlock.NewFair(slowClient(t, f.s), name, opt), 0, order, 1)
	second := lockInGoroutine(t, ctx, rlock.NewFair(slowClient(t, f.s), name, opt), 1, order)
	queued := waitQueued(t, rdb, name, 2)

	// 3.5 waiter timeouts pass; both keep their places and fresh deadlines.
	assert.Never(t, func() bool {
		q, err := rdb.LRange(ctx, fairQueueKey(name), 0, -1).Result()
		return err != nil || len(q) != 2 || q[0] != queued[0] || q[1] != queued[1]
	}, 3500*time.Millisecond, 20*time.Millisecond, "a live waiter lost its place")
	now := serverMillis(t, rdb)
	for _, owner := range queued {
		score, err := rdb.ZScore(ctx, fairTimeoutsKey(name), owner).Result()
		require.NoError(t, err)
		assert.Greater(t, int64(score), now, "deadline of %s not refreshed", owner)
		assert.LessOrEqual(t, int64(score), now+1000, "deadline of %s beyond now + the waiter timeout", owner)
	}

	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, receive(t, first, 10*time.Second, "first waiter"))
	require.NoError(t, receive(t, second, 10*time.Second, "second waiter"))
	assert.Equal(t, 0, <-order)
	assert.Equal(t, 1, <-order)
	f.requireNoQueue()
}

// A lock key deleted from outside publishes nothing; the head of the queue
// still gets in at its next re-check, within a third of the waiter timeout
// (5s by default), not after the client's re-check interval (a minute here).
func TestFairExternalDelete(t *testing.T) {
	f := newFairFixture(t)
	f.holder(rlock.WithLease(time.Minute))
	_, waiter, _ := f.settledWaiter(make(chan int, 1), 1)
	start := time.Now()
	require.NoError(t, f.rdb.Del(f.ctx, f.name).Err())
	require.NoError(t, receive(t, waiter, 20*time.Second, "waiter"))
	t.Logf("the head got in %v after the lock key was deleted", time.Since(start))
	assert.Greater(t, time.Since(start), 500*time.Millisecond, "woken by what? nothing was published")
	assert.Less(t, time.Since(start), 4*time.Second)
	f.requireNoQueue()
}

// Mutual exclusion: 4 clients, each with one handle shared by 4 goroutines,
// × 20 guarded read-modify-write increments give exactly 320.
func TestFairHammer(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t, "lock")
	counter := redistest.Key(t, "counter")
	var lockers []redisync.Locker
	for range 4 {
		lockers = append(lockers, rlock.NewFair(clienttest.New(t, s.Client(t)), name))
	}
	n := hammer(t, ctx, rdb, counter, lockers, 4, 20)
	assert.Equal(t, 320, n)
	requireNoQueue(t, rdb, name)
}

// An owner that holds the lock re-enters it at once, however many wait.
func TestFairReentrantNeverQueues(t *testing.T) {
	f := newFairFixture(t)
	ctx := redisync.WithOwner(f.ctx)
	l := f.fair()
	require.NoError(t, l.Lock(ctx))
	waiter := f.queue(f.ctx, f.fair(), 0, make(chan int, 1), 1)
	ok, err := l.TryLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := l.HoldCount(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	assert.Len(t, fairQueue(t, f.rdb, f.name), 1)
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, receive(t, waiter, 10*time.Second, "waiter"))
}

// ForceUnlock deletes the lock, ends local holds and wakes the head of the
// queue at once.
func TestFairForceUnlock(t *testing.T) {
	f := newFairFixture(t)
	ctx, name := f.ctx, f.name
	c := f.client()
	holder := rlock.NewFair(c, name)
	require.NoError(t, holder.Lock(ctx))
	waiter, got, _ := f.settledWaiter(nil, 1, rlock.WithWaiterTimeout(time.Minute))

	existed, err := rlock.NewFair(c, name).ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, existed)
	require.NoError(t, receive(t, got, 5*time.Second, "waiter woken by ForceUnlock"))
	<-holder.Done()
	assert.ErrorIs(t, holder.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, holder.Unlock(ctx), redisync.ErrNotHeld)
	require.NoError(t, waiter.Unlock(ctx))
	existed, err = waiter.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, existed)
	f.requireNoQueue()
}

// A Java waiter in Redisson's layout (a queue entry, a deadline, listening
// on its own channel) queues in the same line as Go waiters: a Go release
// wakes it when its turn comes, a Go waiter behind it does not jump ahead,
// and its release message wakes the Go waiter behind it.
func TestFairRedissonWaiterInLine(t *testing.T) {
	f := newFairFixture(t)
	ctx, rdb, name := f.ctx, f.rdb, f.name
	java := "8c1a1f47-3a4b-4d5e-9f60-7182a3b4c5d6:57"
	sub := rdb.Subscribe(ctx, fairChannel(name, java))
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	holder := f.holder()
	firstGot, firstGo := make(chan int, 1), make(chan struct{})
	first := f.fair()
	firstDone := make(chan error, 1)
	go func() {
		err := first.Lock(ctx)
		if err == nil {
			firstGot <- 0
			<-firstGo
			err = first.Unlock(ctx)
		}
		firstDone <- err
	}()
	waitQueued(t, rdb, name, 1)
	// Redisson's waiter joins: its entry, and a deadline its client
	// computed (the previous waiter's plus fairLockWaitTimeout, 5 min).
	f.addQueued(java, 300_000)
	_, second, q := f.settledWaiter(make(chan int, 1), 3, rlock.WithWaiterTimeout(time.Minute))
	require.Equal(t, java, q[1])

	require.NoError(t, holder.Unlock(ctx))
	receive(t, firstGot, 10*time.Second, "first Go waiter")
	close(firstGo)
	require.NoError(t, receive(t, firstDone, 10*time.Second, "first Go waiter's unlock"))
	msg := receive(t, sub.Channel(), 10*time.Second, "the Java waiter's wake-up")
	assert.Equal(t, "0", msg.Payload)

	// What Redisson's acquire does for the head of the queue: it takes the
	// lock only if it is free and the waiter is at the head. That it
	// succeeds shows the Go waiter behind did not take the free lock.
	const javaAcquire = `
if redis.call('exists', KEYS[1]) == 0 and redis.call('lindex', KEYS[2], 0) == ARGV[1] then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[1])
  redis.call('hset', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], 30000)
  return 1
end
return 0`
	got, err := rdb.Eval(ctx, javaAcquire, []string{name, fairQueueKey(name), fairTimeoutsKey(name)}, java).Int()
	require.NoError(t, err)
	require.Equal(t, 1, got, "the Java waiter's turn was taken")
	// What Redisson's unlock does: delete the lock, publish 0 to the head.
	const javaRelease = `
redis.call('del', KEYS[1])
local head = redis.call('lindex', KEYS[2], 0)
if head then
  redis.call('publish', KEYS[3] .. ':' .. head, '0')
end
return head`
	released := time.Now()
	head, err := rdb.Eval(ctx, javaRelease, []string{name, fairQueueKey(name), "redisson_lock__channel:{" + name + "}"}).Text()
	require.NoError(t, err)
	assert.Equal(t, q[2], head)
	require.NoError(t, receive(t, second, 10*time.Second, "Go waiter behind the Java one"))
	t.Logf("the Go waiter got the lock %v after the Java release", time.Since(released))
	assert.Less(t, time.Since(released), 5*time.Second)
	f.requireNoQueue()
}

// The fair lock is the lock: the same hash and owner fields, so a Lock and
// a FairLock of one name exclude each other; queued owners are
// "<client id>:<token>" with deadlines on the server's clock.
func TestFairLayout(t *testing.T) {
	fx := newFairFixture(t)
	ctx, rdb, name := fx.ctx, fx.rdb, fx.name
	plain := rlock.New(fx.client(), name)
	require.NoError(t, plain.Lock(ctx))
	c := fx.client()
	f := rlock.NewFair(c, name)
	ok, err := f.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a Lock of the same name must block the FairLock")

	errc := lockInGoroutine(t, ctx, f, 0, nil)
	owner := waitQueued(t, rdb, name, 1)[0]
	assert.Regexp(t, "^"+c.ID()+`:\d+$`, owner)
	score, err := rdb.ZScore(ctx, fairTimeoutsKey(name), owner).Result()
	require.NoError(t, err)
	now := serverMillis(t, rdb)
	assert.InDelta(t, float64(now+5000), score, 2000, "deadline: the server's now + 5s")
	require.NoError(t, plain.Unlock(ctx))
	require.NoError(t, receive(t, errc, 10*time.Second, "fair waiter"))
	count, err := rdb.HGet(ctx, name, owner).Result()
	require.NoError(t, err)
	assert.Equal(t, "1", count)
	require.NoError(t, f.Unlock(ctx))
	fx.requireNoQueue()
}

// Invalid arguments are rejected before anything is sent.
func TestFairInvalidArgumentsSendNothing(t *testing.T) {
	rdb, dials := undiallable(t)
	ctx := context.Background()
	c := redisync.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	cases := map[string]func() error{
		"empty name":             func() error { return rlock.NewFair(c, "").Lock(ctx) },
		"negative wait":          func() error { _, err := rlock.NewFair(c, "x").TryLock(ctx, -time.Second); return err },
		"zero lease":             func() error { return rlock.NewFair(c, "x", rlock.WithLease(0)).Lock(ctx) },
		"backoff":                func() error { return rlock.NewFair(c, "x", rlock.WithBackoff(time.Millisecond, time.Second)).Lock(ctx) },
		"zero waiter timeout":    func() error { return rlock.NewFair(c, "x", rlock.WithWaiterTimeout(0)).Lock(ctx) },
		"negative wait timeout":  func() error { return rlock.NewFair(c, "x", rlock.WithWaiterTimeout(-time.Second)).Lock(ctx) },
		"waiter timeout on Lock": func() error { return rlock.New(c, "x", rlock.WithWaiterTimeout(time.Second)).Lock(ctx) },
		"waiter timeout on spin": func() error { return rlock.NewSpin(c, "x", rlock.WithWaiterTimeout(time.Second)).Lock(ctx) },
		"force no name":          func() error { _, err := rlock.NewFair(c, "").ForceUnlock(ctx); return err },
		"zero owner": func() error {
			_, err := rlock.NewFair(c, "x").TryLock(redisync.WithOwnerToken(ctx, 0), 0)
			return err
		},
	}
	requireInvalidSendNothing(t, cases, dials)
}

// go-redis re-sends a script whose reply was lost: an acquisition, a queued
// attempt and a release each take effect once (no double count, no second
// queue entry).
func TestFairRetriedScriptsApplyOnce(t *testing.T) {
	ctx := redisync.WithOwner(context.Background()) // it re-enters
	s := redistest.Shared(t)
	direct := s.Client(t)
	c, proxy := clienttest.Proxied(t, s, redis.Options{PoolSize: 1})
	name := redistest.Key(t)
	l := rlock.NewFair(c, name)
	count := func() int64 {
		n, err := l.HoldCount(ctx)
		require.NoError(t, err)
		return n
	}

	require.NoError(t, l.Lock(ctx)) // loads the scripts, opens the connection
	require.NoError(t, l.Unlock(ctx))
	proxy.DropNextReply()
	require.NoError(t, l.Lock(ctx))
	require.Equal(t, 1, proxy.Dropped())
	assert.EqualValues(t, 1, count())
	require.NoError(t, l.Lock(ctx))
	proxy.DropNextReply()
	require.NoError(t, l.Lock(ctx))
	require.Equal(t, 2, proxy.Dropped())
	assert.EqualValues(t, 3, count())
	proxy.DropNextReply()
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, 3, proxy.Dropped())
	assert.EqualValues(t, 2, count())
	require.NoError(t, l.Unlock(ctx))
	proxy.DropNextReply()
	require.NoError(t, l.Unlock(ctx), "a re-sent final release must report success")
	assert.EqualValues(t, 0, count())

	// A queued attempt whose reply is lost, run twice, queues the owner once.
	holder := rlock.NewFair(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(context.Background()))
	dropped := proxy.Dropped()
	proxy.DropNextReply()
	got := lockInGoroutine(t, ctx, l, 0, make(chan int, 1))
	require.Eventually(t, func() bool { return proxy.Dropped() > dropped }, 10*time.Second, 2*time.Millisecond)
	waitQueued(t, direct, name, 1)
	require.NoError(t, holder.Unlock(context.Background()))
	require.NoError(t, receive(t, got, 10*time.Second, "waiter"))
	requireNoQueue(t, direct, name)
}
