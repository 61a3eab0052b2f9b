package multilock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	var nilLock *rlock.Lock
	l := rlock.New(nil, "unused") // never reached: the MultiLock refuses first
	cases := map[string]*multilock.MultiLock{
		"no members":              multilock.New(),
		"no members (redlock)":    multilock.NewRedLock(),
		"nil member":              multilock.New(l, nil),
		"nil member (redlock)":    multilock.NewRedLock(nil, l, l),
		"typed nil":               multilock.New(l, nilLock),
		"typed nil (redlock)":     multilock.NewRedLock(nilLock),
		"nil member among nested": multilock.New(multilock.New(l), nil),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, m.Lock(ctx), redisync.ErrInvalidArgument)
			ok, err := m.TryLock(ctx, time.Second)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument)
			require.False(t, ok)
			require.ErrorIs(t, m.Unlock(ctx), redisync.ErrInvalidArgument)
		})
	}
	for _, m := range []*multilock.MultiLock{multilock.New(l), multilock.NewRedLock(l)} {
		ok, err := m.TryLock(ctx, -time.Second)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument)
		require.False(t, ok)
	}
	// A member's own bad input comes back from the member, wrapped.
	for _, m := range []*multilock.MultiLock{multilock.New(l), multilock.NewRedLock(l)} {
		ok, err := m.TryLock(ctx, 0)
		require.ErrorIs(t, err, redisync.ErrInvalidArgument)
		require.False(t, ok)
	}
}

// All or nothing: with one member held elsewhere, TryLock fails and leaves
// the other members, on two servers, free; once it is released, the
// MultiLock gets all of them, and Unlock frees all of them.
func TestAllOrNothing(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1])
	ml := multilock.New(
		rlock.New(c0, name+":a"),
		rlock.New(c1, name+":b"),
		rlock.New(c0, name+":c"),
	)
	other := holdElsewhere(t, ss[1], name+":b")

	ok, err := ml.TryLock(ctx, 0)
	require.NoError(t, err)
	require.False(t, ok)
	requireFree(t, ss[0], name+":a", name+":c")

	start := time.Now()
	ok, err = ml.TryLock(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	requireFree(t, ss[0], name+":a", name+":c")
	require.True(t, locked(t, ss[1], name+":b"), "the other holder lost its lock")

	require.NoError(t, other.Unlock(ctx))
	ok, err = ml.TryLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, locked(t, ss[0], name+":a"))
	require.True(t, locked(t, ss[1], name+":b"))
	require.True(t, locked(t, ss[0], name+":c"))

	require.NoError(t, ml.Unlock(ctx))
	requireFree(t, ss[0], name+":a", name+":c")
	requireFree(t, ss[1], name+":b")
	noWatchdogHolds(t, c0)
	noWatchdogHolds(t, c1)

	// Unlock of a MultiLock not held: the members say so.
	require.ErrorIs(t, ml.Unlock(ctx), redisync.ErrNotHeld)
}

// A waiting MultiLock gets in when the busy member is released, woken by
// that member's pub/sub wait rather than by polling.
func TestWaitingMultiLockGetsInAfterRelease(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1])
	ml := multilock.New(rlock.New(c0, name+":a"), rlock.New(c1, name+":b"))
	other := holdElsewhere(t, ss[1], name+":b")

	gotIn := lockInBackground(ctx, t, ml)
	waitForWaiters(t, c1, 1) // waiting on b alone
	require.False(t, locked(t, ss[0], name+":a"), "a is held while waiting for b")

	released := time.Now()
	require.NoError(t, other.Unlock(ctx))
	at := gotIn("the waiting MultiLock")
	t.Logf("MultiLock got in %v after the release", at.Sub(released))
	assert.Less(t, at.Sub(released), 2*time.Second)
	require.True(t, locked(t, ss[0], name+":a"))
	require.True(t, locked(t, ss[1], name+":b"))
	require.NoError(t, ml.Unlock(ctx))
	requireFree(t, ss[0], name+":a")
	requireFree(t, ss[1], name+":b")
}

// Members of different kinds: a reentrant lock and the read side of a
// read-write lock. Other readers do not keep the MultiLock out; a writer
// does, and then the reentrant lock stays free.
func TestMixedMembers(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1])
	rw := rwlock.New(c1, name+":rw")
	ml := multilock.New(rlock.New(c0, name+":lock"), rw.ReadLocker())

	reader := rwlock.New(newClient(t, ss[1]), name+":rw")
	require.NoError(t, reader.RLock(ctx))
	ok, err := ml.TryLock(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok, "another reader kept the MultiLock's read side out")
	n, err := rw.ReadHoldCount(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.NoError(t, ml.Unlock(ctx))
	require.NoError(t, reader.RUnlock(ctx))

	writer := rwlock.New(newClient(t, ss[1]), name+":rw")
	require.NoError(t, writer.Lock(ctx))
	ok, err = ml.TryLock(ctx, 100*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	requireFree(t, ss[0], name+":lock")

	done := make(chan error, 1)
	go func() { done <- ml.Lock(ctx) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, writer.Unlock(ctx))
	require.NoError(t, <-done)
	n, err = rw.ReadHoldCount(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.True(t, locked(t, ss[0], name+":lock"))
	require.NoError(t, ml.Unlock(ctx))
	requireFree(t, ss[0], name+":lock")
	requireFree(t, ss[1], name+":rw")
}

// A member's error (its server is down) ends the attempt with that error,
// and the members taken before it are released.
func TestMemberErrorAborts(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1], failFast)
	ml := multilock.New(rlock.New(c0, name+":a"), rlock.New(c1, name+":b"))
	ss[1].Stop(t)

	ok, err := ml.TryLock(ctx, time.Second)
	require.Error(t, err)
	require.False(t, ok)
	require.ErrorContains(t, err, "member 1")
	requireFree(t, ss[0], name+":a")
	require.Error(t, ml.Lock(ctx))
	requireFree(t, ss[0], name+":a")
}

// Owners: one MultiLock shared by goroutines that each carry their own
// owner in ctx excludes them from one another; the same owner re-enters.
func TestOwnersInContext(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1])
	ml := multilock.New(rlock.New(c0, name+":a"), rlock.New(c1, name+":b"))

	alice, bob := redisync.WithOwner(ctx), redisync.WithOwner(ctx)
	require.NoError(t, ml.Lock(alice))
	require.NoError(t, ml.Lock(alice)) // re-entered
	ok, err := ml.TryLock(bob, 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.ErrorIs(t, ml.Unlock(bob), redisync.ErrNotHeld)
	require.NoError(t, ml.Unlock(alice))
	ok, err = ml.TryLock(bob, 0)
	require.NoError(t, err)
	require.False(t, ok, "alice's second hold is gone after one Unlock")
	require.NoError(t, ml.Unlock(alice))
	ok, err = ml.TryLock(bob, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, ml.Unlock(bob))

	// Many owners through one shared MultiLock: never two inside.
	var inside, entries atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx := redisync.WithOwner(ctx)
			for range 10 {
				if err := ml.Lock(octx); err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					t.Error("two owners inside the MultiLock")
				}
				entries.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := ml.Unlock(octx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 40, entries.Load())
	requireFree(t, ss[0], name+":a")
	requireFree(t, ss[1], name+":b")
}

// Unlock after the caller's ctx was cancelled still releases every member.
func TestUnlockWithCancelledContext(t *testing.T) {
	ss := startServers(t, 2)
	name := redistest.Key(t)
	c0, c1 := newClient(t, ss[0]), newClient(t, ss[1])
	for _, ml := range []*multilock.MultiLock{
		multilock.New(rlock.New(c0, name+":a"), rlock.New(c1, name+":b")),
		multilock.NewRedLock(rlock.New(c0, name+":a"), rlock.New(c1, name+":b")),
	} {
		ctx, cancel := context.WithCancel(testCtx(t))
		require.NoError(t, ml.Lock(ctx))
		cancel()
		require.NoError(t, ml.Unlock(ctx))
		requireFree(t, ss[0], name+":a")
		requireFree(t, ss[1], name+":b")
	}
}

// A cancelled Lock, and one whose ctx deadline passes, return ctx's error
// and leave no member held, no waiter and no goroutine behind.
func TestCancelledLockLeavesNothing(t *testing.T) {
	for _, red := range []bool{false, true} {
		t.Run(map[bool]string{false: "multilock", true: "redlock"}[red], func(t *testing.T) {
			ctx := testCtx(t)
			ss := startServers(t, 3)
			name := redistest.Key(t)
			cs := []*redisync.Client{newClient(t, ss[0]), newClient(t, ss[1]), newClient(t, ss[2])}
			members := []redisync.Locker{rlock.New(cs[0], name), rlock.New(cs[1], name), rlock.New(cs[2], name)}
			ml := multilock.New(members...)
			if red {
				ml = multilock.NewRedLock(members...)
			}
			// Taken elsewhere: the second member, and for the RedLock also
			// the third, so that no majority is free.
			others := []*rlock.Lock{holdElsewhere(t, ss[1], name)}
			if red {
				others = append(others, holdElsewhere(t, ss[2], name))
			}
			// Start the clients' pub/sub loops (one goroutine per client,
			// until Close) before taking the goroutine snapshot. The wait is
			// long enough for the members' first calls (a dial and a script
			// load each) on a busy machine: a RedLock member that does not
			// answer within the wait counts as failed, not as busy.
			ok, err := ml.TryLock(ctx, time.Second)
			require.NoError(t, err)
			require.False(t, ok)
			ignore := goleak.IgnoreCurrent()

			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- ml.Lock(cctx) }()
			waitForWaiters(t, cs[1], 1)
			cancel()
			err = <-errc
			require.ErrorIs(t, err, context.Canceled)

			dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer dcancel()
			err = ml.Lock(dctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)

			requireFree(t, ss[0], name)
			for i, c := range cs {
				noWatchdogHolds(t, c)
				eventually(t, 5*time.Second, "no waiters", func() error {
					if n := waitersOf(c); n != 0 {
						return fmt.Errorf("%d waiters left on member %d's client", n, i)
					}
					return nil
				})
			}
			goleak.VerifyNone(t, ignore)
			for _, o := range others {
				require.NoError(t, o.Unlock(ctx))
			}
			require.ErrorIs(t, ml.Unlock(ctx), redisync.ErrNotHeld)
		})
	}
}

// Transfers in both directions over the same two accounts, members on two
// servers: MultiLocks listing the same locks in opposite orders exclude
// each other and all get through (no deadlock: none waits while holding).
func TestOppositeOrders(t *testing.T) {
	ctx := testCtx(t)
	ss := startServers(t, 2)
	name := redistest.Key(t)
	var inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := rlock.New(newClient(t, ss[0]), name+":a")
			b := rlock.New(newClient(t, ss[1]), name+":b")
			ml := multilock.New(a, b)
			if w%2 == 1 {
				ml = multilock.New(b, a)
			}
			for range 25 {
				if err := ml.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(200 * time.Microsecond)
				inside.Add(-1)
				if err := ml.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("100 transfers in opposite orders in %v", time.Since(start))
	require.Zero(t, overlaps.Load())
	requireFree(t, ss[0], name+":a")
	requireFree(t, ss[1], name+":b")
}
