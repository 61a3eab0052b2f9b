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
	"github.com/redisync/redisync/internal/clienttest"
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
	m := startMasters(t, 2)
	a, b, c := m.name+":a", m.name+":b", m.name+":c"
	ml := multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b), rlock.New(m.cs[0], c))
	other := holdElsewhere(t, m.ss[1], b)

	require.False(t, tryLock(ctx, t, ml, 0))
	requireFree(t, m.ss[0], a, c)

	start := time.Now()
	require.False(t, tryLock(ctx, t, ml, 300*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	requireFree(t, m.ss[0], a, c)
	require.True(t, locked(t, m.ss[1], b), "the other holder lost its lock")

	require.NoError(t, other.Unlock(ctx))
	require.True(t, tryLock(ctx, t, ml, 0))
	unlockFrees(ctx, t, ml, map[*redistest.Server][]string{m.ss[0]: {a, c}, m.ss[1]: {b}})
	noWatchdogHolds(t, m.cs[0])
	noWatchdogHolds(t, m.cs[1])

	// Unlock of a MultiLock not held: the members say so.
	require.ErrorIs(t, ml.Unlock(ctx), redisync.ErrNotHeld)
}

// A waiting MultiLock gets in when the busy member is released, woken by
// that member's pub/sub wait rather than by polling.
func TestWaitingMultiLockGetsInAfterRelease(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	ml := multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b))
	other := holdElsewhere(t, m.ss[1], b)

	waiting := lockInBackground(ctx, t, ml, "the waiting MultiLock")
	waiting.requireWaitingOn(m.cs[1]) // waiting on b alone
	require.False(t, locked(t, m.ss[0], a), "a is held while waiting for b")
	waiting.requireWokenBy(func() { require.NoError(t, other.Unlock(ctx)) })
	unlockFrees(ctx, t, ml, map[*redistest.Server][]string{m.ss[0]: {a}, m.ss[1]: {b}})
}

// Members of different kinds: a reentrant lock and the read side of a
// read-write lock. Other readers do not keep the MultiLock out; a writer
// does, and then the reentrant lock stays free until the writer is gone.
func TestMixedMembers(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2)
	lockName, rwName := m.name+":lock", m.name+":rw"
	rw := rwlock.New(m.cs[1], rwName)
	ml := multilock.New(rlock.New(m.cs[0], lockName), rw.ReadLocker())
	// The MultiLock holds its members for an owner of its own, not the
	// member handle's: the read side is held when the hash is read-locked.
	readLocked := func() bool {
		t.Helper()
		ok, err := rw.IsReadLocked(ctx)
		require.NoError(t, err)
		return ok
	}

	reader := rwlock.New(memberClient(t, m.ss[1]), rwName)
	require.NoError(t, reader.RLock(ctx))
	require.True(t, tryLock(ctx, t, ml, 0), "another reader kept the MultiLock's read side out")
	require.NoError(t, reader.RUnlock(ctx))
	require.True(t, readLocked(), "the MultiLock's read hold")
	require.NoError(t, ml.Unlock(ctx))
	require.False(t, readLocked())

	writer := rwlock.New(memberClient(t, m.ss[1]), rwName)
	require.NoError(t, writer.Lock(ctx))
	require.False(t, tryLock(ctx, t, ml, 100*time.Millisecond))
	requireFree(t, m.ss[0], lockName)

	waiting := lockInBackground(ctx, t, ml, "the MultiLock waiting for the writer")
	waiting.requireWaitingOn(m.cs[1]) // on the read side, having let go of the lock
	requireFree(t, m.ss[0], lockName)
	waiting.requireWokenBy(func() { require.NoError(t, writer.Unlock(ctx)) })
	require.True(t, readLocked())
	unlockFrees(ctx, t, ml, map[*redistest.Server][]string{m.ss[0]: {lockName}, m.ss[1]: {rwName}})
}

// A member's error (its server is down) ends the attempt with that error,
// and the members taken before it are released.
func TestMemberErrorAborts(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2, failFast)
	a := m.name + ":a"
	ml := multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], m.name+":b"))
	m.ss[1].Stop(t)

	ok, err := ml.TryLock(ctx, time.Second)
	require.Error(t, err)
	require.False(t, ok)
	require.ErrorContains(t, err, "member 1")
	requireFree(t, m.ss[0], a)
	require.Error(t, ml.Lock(ctx))
	requireFree(t, m.ss[0], a)
}

// Owners: one MultiLock shared by goroutines that each carry their own
// owner in ctx excludes them from one another; the same owner re-enters.
func TestOwnersInContext(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	ml := multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b))

	alice, bob := redisync.WithOwner(ctx), redisync.WithOwner(ctx)
	require.NoError(t, ml.Lock(alice))
	require.NoError(t, ml.Lock(alice)) // re-entered
	require.False(t, tryLock(bob, t, ml, 0))
	require.ErrorIs(t, ml.Unlock(bob), redisync.ErrNotHeld)
	require.NoError(t, ml.Unlock(alice))
	require.False(t, tryLock(bob, t, ml, 0), "alice's second hold is gone after one Unlock")
	require.NoError(t, ml.Unlock(alice))
	require.True(t, tryLock(bob, t, ml, 0))
	require.NoError(t, ml.Unlock(bob))

	// Many owners through one shared MultiLock: never two inside.
	require.EqualValues(t, 40, hammer(ctx, t, ml, 4, 10, redisync.WithOwner))
	requireFree(t, m.ss[0], a)
	requireFree(t, m.ss[1], b)
}

// Unlock after the caller's ctx was cancelled still releases every member.
func TestUnlockWithCancelledContext(t *testing.T) {
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	for _, ml := range []*multilock.MultiLock{
		multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b)),
		multilock.NewRedLock(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b)),
	} {
		ctx, cancel := context.WithCancel(testCtx(t))
		require.NoError(t, ml.Lock(ctx))
		cancel()
		unlockFrees(ctx, t, ml, map[*redistest.Server][]string{m.ss[0]: {a}, m.ss[1]: {b}})
	}
}

// A cancelled Lock, and one whose ctx deadline passes, return ctx's error
// and leave no member held, no waiter and no goroutine behind.
func TestCancelledLockLeavesNothing(t *testing.T) {
	for _, red := range []bool{false, true} {
		t.Run(map[bool]string{false: "multilock", true: "redlock"}[red], func(t *testing.T) {
			ctx := testCtx(t)
			m := startMasters(t, 3)
			ml := multilock.New(m.members()...)
			if red {
				ml, _ = m.redLock()
			}
			// Taken elsewhere: the second member, and for the RedLock also
			// the third, so that no majority is free.
			others := []*rlock.Lock{holdElsewhere(t, m.ss[1], m.name)}
			if red {
				others = append(others, holdElsewhere(t, m.ss[2], m.name))
			}
			// Start the clients' pub/sub loops (one goroutine per client,
			// until Close) before taking the goroutine snapshot. The wait is
			// long enough for the members' first calls (a dial and a script
			// load each) on a busy machine: a RedLock member that does not
			// answer within the wait counts as failed, not as busy.
			require.False(t, tryLock(ctx, t, ml, time.Second))
			ignore := goleak.IgnoreCurrent()

			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- ml.Lock(cctx) }()
			clienttest.WaitWaiters(t, 1, m.cs[1])
			cancel()
			require.ErrorIs(t, <-errc, context.Canceled)

			dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer dcancel()
			require.ErrorIs(t, ml.Lock(dctx), context.DeadlineExceeded)

			requireFree(t, m.ss[0], m.name)
			for i, c := range m.cs {
				noWatchdogHolds(t, c)
				redistest.Eventually(t, 5*time.Second, "no waiters", func() error {
					if n := clienttest.Stats(c).Waiters; n != 0 {
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
			a := rlock.New(memberClient(t, ss[0]), name+":a")
			b := rlock.New(memberClient(t, ss[1]), name+":b")
			ml := multilock.New(a, b)
			if w%2 == 1 {
				ml = multilock.New(b, a)
			}
			for range 25 {
				if !assert.NoError(t, ml.Lock(ctx)) {
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(200 * time.Microsecond) // work inside, for others to overlap with
				inside.Add(-1)
				if !assert.NoError(t, ml.Unlock(ctx)) {
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

// Issue 12/16: goroutines sharing one MultiLock without an owner in ctx
// exclude each other (each member handle is a distributed sync.Mutex).
func TestSharedWithoutOwnerExcludes(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	ml := multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b))
	noOwner := func(c context.Context) context.Context { return c }
	require.EqualValues(t, 20, hammer(ctx, t, ml, 4, 5, noOwner))
	requireFree(t, m.ss[0], a)
	requireFree(t, m.ss[1], b)
}

// hammer has goroutines goroutines lock and unlock ml rounds times each,
// with the context ctxFor derives from ctx for each of them, holding it a millisecond, and
// fails if two are ever inside at once. It returns the entries made.
func hammer(ctx context.Context, t *testing.T, ml *multilock.MultiLock, goroutines, rounds int, ctxFor func(context.Context) context.Context) int64 {
	t.Helper()
	var inside, entries atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx := ctxFor(ctx)
			for range rounds {
				if !assert.NoError(t, ml.Lock(octx)) {
					return
				}
				assert.EqualValues(t, 1, inside.Add(1), "two callers inside the MultiLock")
				entries.Add(1)
				time.Sleep(time.Millisecond) // work inside, for others to overlap with
				inside.Add(-1)
				if !assert.NoError(t, ml.Unlock(octx)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	return entries.Load()
}
