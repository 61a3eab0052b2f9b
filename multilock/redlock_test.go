package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// lockedCount is the number of servers where the lock exists.
func (m *masters) lockedCount(t *testing.T) int {
	t.Helper()
	n := 0
	for _, l := range m.locked(t) {
		if l {
			n++
		}
	}
	return n
}

// eventuallyFree waits until the lock exists on none of the servers i. A
// member that answered an attempt too late is released by the goroutine
// that asked it, a moment after the call returned.
func (m *masters) eventuallyFree(t *testing.T, servers ...int) {
	t.Helper()
	redistest.Eventually(t, 5*time.Second, "members released", func() error {
		for _, i := range servers {
			if locked(t, m.ss[i], m.name) {
				return fmt.Errorf("member %d still locked", i)
			}
		}
		return nil
	})
}

// locked reports, for each server, whether the lock exists there.
func (m *masters) locked(t *testing.T) []bool {
	t.Helper()
	out := make([]bool, len(m.ss))
	for i, s := range m.ss {
		out[i] = locked(t, s, m.name)
	}
	return out
}

func TestRedLockWinsWithTwoOfThreeFree(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, _ := m.redLock()
	other := holdElsewhere(t, m.ss[2], m.name)

	require.True(t, tryLock(ctx, t, rl, 0))
	require.Equal(t, []bool{true, true, true}, m.locked(t))
	require.NoError(t, rl.Unlock(ctx))
	require.Equal(t, []bool{false, false, true}, m.locked(t), "the other holder's lock must stay")
	require.NoError(t, other.Unlock(ctx))

	// With all three free it takes every one that answers in time (all
	// three, unless this machine is very busy), not just a majority.
	require.NoError(t, rl.Lock(ctx))
	n := m.lockedCount(t)
	t.Logf("%d of 3 members taken", n)
	require.GreaterOrEqual(t, n, 2)
	require.NoError(t, rl.Unlock(ctx))
	m.eventuallyFree(t, 0, 1, 2)
}

func TestRedLockLosesWithTwoOfThreeTaken(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, _ := m.redLock()
	holdElsewhere(t, m.ss[0], m.name)
	holdElsewhere(t, m.ss[2], m.name)

	require.False(t, tryLock(ctx, t, rl, 0))
	m.eventuallyFree(t, 1)

	start := time.Now()
	require.False(t, tryLock(ctx, t, rl, 400*time.Millisecond))
	took := time.Since(start)
	t.Logf("TryLock(400ms) gave up after %v", took)
	assert.GreaterOrEqual(t, took, 350*time.Millisecond)
	assert.Less(t, took, 3*time.Second)
	m.eventuallyFree(t, 1)
	require.ErrorIs(t, rl.Unlock(ctx), redisync.ErrNotHeld)
}

// A stopped server costs its member and no more: the RedLock is taken with
// the other two, in about the time their answers take.
func TestRedLockServerStopped(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, _ := m.redLock()
	m.ss[1].Stop(t)

	for _, try := range []func() (bool, error){
		func() (bool, error) { return rl.TryLock(ctx, 0) },
		func() (bool, error) { return rl.TryLock(ctx, 3*time.Second) },
		func() (bool, error) { return true, rl.Lock(ctx) },
	} {
		start := time.Now()
		ok, err := try()
		took := time.Since(start)
		require.NoError(t, err)
		require.True(t, ok)
		t.Logf("acquired with one server stopped in %v", took)
		assert.Less(t, took, time.Second, "the stopped server stalled the attempt")
		require.True(t, locked(t, m.ss[0], m.name))
		require.True(t, locked(t, m.ss[2], m.name))
		start = time.Now()
		require.NoError(t, rl.Unlock(ctx)) // the stopped member was not taken: not touched
		assert.Less(t, time.Since(start), time.Second)
		requireFree(t, m.ss[0], m.name)
		requireFree(t, m.ss[2], m.name)
	}
}

// A paused (SIGSTOPped) server answers nothing, and go-redis would wait for
// its read timeout; the RedLock goes on without it, within the member's
// share of the wait.
func TestRedLockServerPaused(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, _ := m.redLock()
	m.ss[2].Pause(t)
	t.Cleanup(func() { m.ss[2].Resume(t) })

	const wait = 3 * time.Second // share: 1 s
	start := time.Now()
	ok, err := rl.TryLock(ctx, wait)
	took := time.Since(start)
	require.NoError(t, err)
	require.True(t, ok)
	t.Logf("acquired with one server paused in %v", took)
	assert.Less(t, took, wait/3, "the paused server held the attempt beyond its share")
	require.True(t, locked(t, m.ss[0], m.name))
	require.True(t, locked(t, m.ss[1], m.name))
	require.NoError(t, rl.Unlock(ctx))
	requireFree(t, m.ss[0], m.name)
	requireFree(t, m.ss[1], m.name)

	// Two paused: no majority can answer. Each attempt waits its share for
	// them, and the call ends about when the wait does, with an error
	// naming them; the member it took is released.
	m.ss[1].Pause(t)
	t.Cleanup(func() { m.ss[1].Resume(t) })
	start = time.Now()
	ok, err = rl.TryLock(ctx, 600*time.Millisecond) // share: 200 ms
	took = time.Since(start)
	require.False(t, ok)
	require.Error(t, err)
	require.NotErrorIs(t, err, redisync.ErrInvalidArgument)
	t.Logf("gave up with two servers paused after %v: %v", took, err)
	assert.Less(t, took, 2*time.Second)
	requireFree(t, m.ss[0], m.name)

	// Resumed, the servers answer again; the abandoned tries either failed
	// or released what they got, so the RedLock can be taken in full.
	m.ss[1].Resume(t)
	m.ss[2].Resume(t)
	redistest.Eventually(t, 20*time.Second, "all three members taken after the resume", func() error {
		ok, err := rl.TryLock(ctx, time.Second)
		if err != nil || !ok {
			return errors.Join(errors.New("not acquired"), err)
		}
		got := m.locked(t)
		if err := rl.Unlock(ctx); err != nil {
			return err
		}
		if got[0] && got[1] && got[2] {
			return nil
		}
		return errors.New("not every member was taken")
	})
}

func TestRedLockTooManyServersDown(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, _ := m.redLock()
	m.ss[0].Stop(t)
	m.ss[2].Stop(t)

	ok, err := rl.TryLock(ctx, 500*time.Millisecond)
	require.False(t, ok)
	require.Error(t, err)
	require.ErrorContains(t, err, "out of reach")
	requireFree(t, m.ss[1], m.name)

	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = rl.Lock(cctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "out of reach")
	requireFree(t, m.ss[1], m.name)
}

// Unlock releases the members its acquisition took and ignores the others;
// without a record of the acquisition (another MultiLock value, another
// process, acting for the same context owner) it releases every member,
// ignoring those not held. Fewer than a majority still held means the
// RedLock was lost: ErrNotHeld.
func TestRedLockUnlock(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	rl, members := m.redLock()
	other := holdElsewhere(t, m.ss[1], m.name)

	require.NoError(t, rl.Lock(ctx))
	require.NoError(t, rl.Unlock(ctx))
	require.Equal(t, []bool{false, true, false}, m.locked(t))

	owner := redisync.WithOwner(ctx)
	require.NoError(t, rl.Lock(owner))
	// Another MultiLock value holds nothing without an owner in ctx (each
	// holds its members for an owner of its own); for the same context
	// owner, it releases every member.
	again := multilock.NewRedLock(members...)
	require.ErrorIs(t, again.Unlock(ctx), redisync.ErrNotHeld)
	require.NoError(t, again.Unlock(owner))
	require.Equal(t, []bool{false, true, false}, m.locked(t))
	err := rl.Unlock(owner) // its record: members 0 and 2, released already
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	require.NoError(t, other.Unlock(ctx))

	// Reentrant: the same (context) owner twice, free after two Unlocks.
	octx := redisync.WithOwner(ctx)
	require.NoError(t, rl.Lock(octx))
	require.NoError(t, rl.Lock(octx))
	require.NoError(t, rl.Unlock(octx))
	require.GreaterOrEqual(t, m.lockedCount(t), 2, "one Unlock of two freed the RedLock")
	require.NoError(t, rl.Unlock(octx))
	m.eventuallyFree(t, 0, 1, 2)

	// Lost: two members force-unlocked behind its back.
	require.NoError(t, rl.Lock(ctx))
	for _, i := range []int{0, 2} {
		_, err := rlock.New(memberClient(t, m.ss[i]), m.name).ForceUnlock(ctx)
		require.NoError(t, err)
	}
	require.ErrorIs(t, rl.Unlock(ctx), redisync.ErrNotHeld)
	m.eventuallyFree(t, 0, 1, 2)
}

// A RedLock waiting for a majority held by another RedLock gets in when it
// is released, woken through a member's pub/sub wait.
func TestRedLockWaitsForRelease(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 3)
	holder := m.redLockElsewhere(t)
	rl, _ := m.redLock()
	require.NoError(t, holder.Lock(ctx))

	waiting := lockInBackground(ctx, t, rl, "the waiting RedLock")
	waiting.requireWaitingOn(m.cs[0]) // waiting for the first member
	waiting.requireWokenBy(func() { require.NoError(t, holder.Unlock(ctx)) })
	require.GreaterOrEqual(t, m.lockedCount(t), 2)
	require.NoError(t, rl.Unlock(ctx))
	m.eventuallyFree(t, 0, 1, 2)
}

// redLockElsewhere returns a RedLock on m's servers and lock name through
// clients of its own: another process's RedLock on the same lock.
func (m *masters) redLockElsewhere(t *testing.T) *multilock.MultiLock {
	var members []redisync.Locker
	for _, s := range m.ss {
		members = append(members, rlock.New(memberClient(t, s), m.name))
	}
	return multilock.NewRedLock(members...)
}

// Mutual exclusion through RedLock across three servers, with four clients
// per server: workers with their own RedLock over their own handles, and
// workers sharing one RedLock value, each with its own owner in ctx. Half
// way through, one server is stopped: the other two still make a majority,
// and exclusion holds.
func TestRedLockHammer(t *testing.T) {
	const (
		servers   = 3
		clients   = 4 // per server
		workers   = 8
		entries   = 160 // in all
		stopAfter = entries / 2
	)
	ctx := testCtx(t)
	ss := startServers(t, servers)
	name := redistest.Key(t)
	var cs [servers][clients]*redisync.Client
	for s := range servers {
		for k := range clients {
			cs[s][k] = memberClient(t, ss[s], failFast)
		}
	}
	redLock := func(k int) *multilock.MultiLock {
		var members []redisync.Locker
		for s := range servers {
			members = append(members, rlock.New(cs[s][k], name))
		}
		return multilock.NewRedLock(members...)
	}
	shared := redLock(clients - 1)

	var inside, done, overlaps atomic.Int64
	var stopOnce sync.Once
	stopped := make(chan time.Time, 1)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rl, wctx := redLock(w%(clients-1)), ctx
			if w >= workers/2 {
				rl, wctx = shared, redisync.WithOwner(ctx)
			}
			for done.Load() < entries {
				if !assert.NoError(t, rl.Lock(wctx), "worker %d: Lock", w) {
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(500 * time.Microsecond) // work inside, for others to overlap with
				inside.Add(-1)
				if done.Add(1) == stopAfter {
					stopOnce.Do(func() {
						ss[servers-1].Stop(t)
						stopped <- time.Now()
					})
				}
				// After the stop, a holder whose acquisition took the
				// stopped server's member cannot release it: an error, but
				// not ErrNotHeld, since the other two were released.
				assert.NotErrorIs(t, rl.Unlock(wctx), redisync.ErrNotHeld, "worker %d: Unlock", w)
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	require.Zero(t, overlaps.Load(), "two RedLock holders at once")
	require.GreaterOrEqual(t, done.Load(), int64(entries))
	require.Len(t, stopped, 1, "the server was not stopped")
	at := <-stopped
	t.Logf("%d entries: %d before the stop in %v, the rest after it in %v",
		done.Load(), stopAfter, at.Sub(start), end.Sub(at))
	requireFree(t, ss[0], name)
	requireFree(t, ss[1], name)
}
