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
	"github.com/redisync/redisync/rlock"
)

// lockLineLen returns how many callers of c line up for the lock name.
func lockLineLen(c *redisync.Client, name string) int {
	return (*core.Client)(c).Lines().Len(core.LockLine("rlock", name))
}

// Issue 16: the waiters of one client line up locally; only the head waits
// in Redis. A single attempt does not overtake the line, an owner that
// holds the lock re-enters past it, and a cancelled waiter leaves it and
// passes its turn on.
func TestLockWaitersLineUp(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	other := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, other.Lock(ctx)) // another client holds it
	c := clienttest.New(t, s.Client(t))

	holder := redisync.WithOwner(ctx) // an owner of c that will hold it
	first := make(chan error, 1)
	go func() { first <- rlock.New(c, name).Lock(holder) }()
	require.Eventually(t, func() bool { return lockLineLen(c, name) == 1 }, 5*time.Second, time.Millisecond)

	// A second owner lines up behind; a cancelled third leaves the line.
	next := redisync.WithOwner(ctx)
	second := make(chan error, 1)
	go func() { second <- rlock.New(c, name).Lock(next) }()
	cctx, cancel := context.WithCancel(redisync.WithOwner(ctx))
	third := make(chan error, 1)
	go func() { third <- rlock.New(c, name).Lock(cctx) }()
	require.Eventually(t, func() bool { return lockLineLen(c, name) == 3 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return (*core.Client)(c).Mux().Stats().Waiters == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, (*core.Client)(c).Mux().Stats().Waiters, "only the head subscribes")
	cancel()
	require.ErrorIs(t, <-third, context.Canceled)
	assert.Equal(t, 2, lockLineLen(c, name))

	// A single attempt does not overtake the waiters.
	ok, err := rlock.New(c, name).TryLock(redisync.WithOwner(ctx), 0)
	require.NoError(t, err)
	assert.False(t, ok)

	require.NoError(t, other.Unlock(ctx))
	require.NoError(t, <-first)
	// The holder re-enters while the second owner waits in line behind it.
	ok, err = rlock.New(c, name).TryLock(holder, time.Second)
	require.NoError(t, err)
	require.True(t, ok, "a holder re-enters past the line")
	h := rlock.New(c, name)
	require.NoError(t, h.Unlock(holder))
	require.NoError(t, h.Unlock(holder))
	select {
	case err := <-second:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the next in line did not get the lock")
	}
	require.NoError(t, h.Unlock(next))
	assert.Equal(t, 0, lockLineLen(c, name), "the line is gone once empty")
}
