package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
)

// Issue 16: when the next caller waiting for the lock is in the same
// client, Unlock hands the lock over in one script (no PUBLISH, no waiter
// woken to try), and the caller holds it with its own hold. A late copy of
// that script changes nothing.
func TestUnlockHandsOverInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	c, rec := clienttest.Recorded(t, s)
	name := redistest.Key(t)
	a, b := rlock.New(c, name, rlock.WithFencing()), rlock.New(c, name, rlock.WithFencing())
	// Both wait behind another client, so that b waits already when a's
	// hold begins a chain of handoffs.
	other := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, other.Lock(ctx))
	gotA := make(chan error, 1)
	go func() { gotA <- a.Lock(ctx) }()
	require.Eventually(t, func() bool { return lockLineLen(c, name) == 1 }, 5*time.Second, time.Millisecond)
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	require.Eventually(t, func() bool { return lockLineLen(c, name) == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, other.Unlock(ctx))
	require.NoError(t, <-gotA)

	// b, now at the head of the line, takes a moment to get ready for a
	// handoff (its turn, its offer): until then the unlock would publish.
	require.Eventually(t, func() bool {
		return (*core.Client)(c).Lines().HeadAccepts(core.LockLine("rlock", name))
	}, 5*time.Second, time.Millisecond, "b ready for a handoff")
	rec.Reset()
	require.NoError(t, a.Unlock(ctx))
	handoff := rec.Last()
	require.True(t, clienttest.ScriptIs(handoff, lua.LockHandoff), "the unlock was not a handoff: %v", handoff)
	require.NoError(t, <-got)
	held, err := b.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "b holds the lock in Redis")
	assert.Greater(t, b.FencingToken(), a.FencingToken(), "the handed hold has a newer fencing token")
	assert.NoError(t, b.Err())
	select {
	case <-a.Done():
	default:
		t.Fatal("a's hold did not end")
	}
	require.NoError(t, b.Unlock(ctx))

	direct := s.Client(t)
	require.NoError(t, direct.Do(ctx, handoff...).Err(), "a copy within the record's lifetime")
	assert.Zero(t, direct.Exists(ctx, name).Val(), "a copy of the handoff took the lock again")
}

// Issue 16: handoffs keep mutual exclusion between handles of one client
// and other clients, and a chain of handoffs does not starve another
// process: its waiter gets the lock while this client's goroutines keep
// asking for it.
func TestHandoffsExcludeAndLetOthersIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	busy := clienttest.New(t, s.Client(t))
	var x clienttest.Exclusion
	stop := clienttest.Hammer(t, ctx, 4, func() redisync.Locker { return rlock.New(busy, name) }, &x)
	require.Eventually(t, func() bool { return x.Total() > 50 }, 10*time.Second, time.Millisecond)

	other := rlock.New(clienttest.New(t, s.Client(t)), name)
	for range 3 {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := other.Lock(wctx)
		cancel()
		require.NoError(t, err, "another process starved by a chain of handoffs")
		x.Pass()
		require.NoError(t, other.Unlock(ctx))
	}
	stop()
	assert.EqualValues(t, 1, x.Most(), "two holders at once")
}

// Issue 16: a waiter whose wait ends (ctx) while the lock is being handed
// to it either returns holding it or holds nothing: no hold is left behind
// in Redis or in the client.
func TestHandoffRacingCancelLeavesNothing(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	a, b := rlock.New(c, name), rlock.New(c, name)
	clienttest.HandoffRacingCancel(t, context.Background(), c, a, b,
		func() int { return lockLineLen(c, name) }, a.IsLocked)
}

// Issue 16: a caller waiting behind a hold of its own client does not ask
// Redis meanwhile; when that hold is lost instead of released (nothing is
// published), it is woken at once, not at the re-check interval.
func TestLostLocalHoldWakesTheLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute))
	name := redistest.Key(t)
	holder := rlock.New(c, name, rlock.WithLease(300*time.Millisecond))
	require.NoError(t, holder.Lock(ctx)) // and never unlocked: the lease runs out
	waiter := rlock.New(c, name)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, waiter.Lock(wctx))
	assert.Less(t, time.Since(start), 15*time.Second, "woken by the re-check, not by the loss")
	require.NoError(t, waiter.Unlock(ctx))
	<-holder.Done()
	require.ErrorIs(t, holder.Err(), redisync.ErrLockLost)
}
