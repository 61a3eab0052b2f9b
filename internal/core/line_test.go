package core

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineClient returns a Client for tests of its local lines and owner locks,
// which never talk to Redis: without a Redis client it is invalid for every
// operation, but its lines and Close work.
func lineClient(t *testing.T) *Client {
	t.Helper()
	c := NewClient(nil, Options{})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// atHead reports whether turn is at the head of its line, without waiting.
func atHead(t *testing.T, turn *Turn) bool {
	t.Helper()
	ok, err := turn.Await(context.Background(), false, 0)
	require.NoError(t, err)
	return ok
}

func TestLineOrder(t *testing.T) {
	c := lineClient(t)
	a := c.lines.Join("r", false)
	b := c.lines.Join("r", false)
	d := c.lines.Join("r", false)
	require.Equal(t, 3, c.lines.Len("r"))
	assert.True(t, atHead(t, a), "the first caller is at the head at once")
	assert.False(t, atHead(t, b))
	assert.False(t, atHead(t, d))
	assert.Nil(t, c.lines.Join("r", true), "onlyIfEmpty joined a line with callers")

	// A caller behind the head leaves: the head stays, the line shortens.
	b.Leave()
	assert.Equal(t, 2, c.lines.Len("r"))
	assert.True(t, atHead(t, a))
	assert.False(t, atHead(t, d))
	b.Leave() // idempotent
	assert.Equal(t, 2, c.lines.Len("r"))

	// The head leaves: the next caller becomes the head, and a waiting
	// Await returns.
	got := make(chan bool, 1)
	go func() {
		ok, _ := d.Await(context.Background(), true, 0)
		got <- ok
	}()
	a.Leave()
	select {
	case ok := <-got:
		assert.True(t, ok)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the next caller did not reach the head")
	}
	d.Leave()
	assert.Zero(t, c.lines.Len("r"))
	c.lines.mu.Lock()
	assert.Empty(t, c.lines.m, "an empty line is deleted")
	c.lines.mu.Unlock()

	e := c.lines.Join("r", true)
	require.NotNil(t, e, "onlyIfEmpty on an empty line")
	assert.True(t, atHead(t, e))
	e.Leave()
}

// Lines are per resource and per Client.
func TestLinesApart(t *testing.T) {
	c, other := lineClient(t), lineClient(t)
	a := c.lines.Join("r", false)
	assert.True(t, atHead(t, c.lines.Join("s", false)), "another resource's line")
	assert.True(t, atHead(t, other.lines.Join("r", false)), "another Client's line")
	assert.True(t, atHead(t, a))
}

// Await waits as long as allowed: its wait, ctx, or the Client's life.
func TestLineAwaitEnds(t *testing.T) {
	c := lineClient(t)
	head := c.lines.Join("r", false)
	defer head.Leave()
	turn := c.lines.Join("r", false)

	start := time.Now()
	ok, err := turn.Await(context.Background(), false, 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "Await while another caller is at the head")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = turn.Await(ctx, true, 0)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, c.lines.Len("r"), "Await does not leave the line")

	require.NoError(t, c.Close())
	_, err = turn.Await(context.Background(), true, 0)
	require.ErrorIs(t, err, errs.ErrClosed)
	turn.Leave()
}

// The owner locks serialize one owner's operations on one lock, and only
// those; an entry lives while someone holds or waits for it.
func TestOwnerLocks(t *testing.T) {
	var o ownerLocks
	ctx := context.Background()
	lock := func(k HoldKey) func() {
		ol, err := o.lock(ctx, k)
		require.NoError(t, err)
		return func() { o.unlock(k, ol) }
	}
	k := HoldKey{Key: "lock", Field: "id:1"}
	unlock := lock(k)

	got := make(chan struct{})
	go func() {
		defer close(got)
		ol, err := o.lock(ctx, k)
		if assert.NoError(t, err) {
			o.unlock(k, ol)
		}
	}()
	require.Never(t, func() bool {
		select {
		case <-got:
			return true
		default:
			return false
		}
	}, 50*time.Millisecond, time.Millisecond, "the same owner and lock went through")
	// Another owner, or another lock, is not held up.
	lock(HoldKey{Key: "lock", Field: "id:2"})()
	lock(HoldKey{Key: "other", Field: "id:1"})()
	// A wait for a held owner lock ends with its ctx, holding nothing.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := o.lock(cctx, k)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	unlock()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the waiting operation did not get the lock")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Empty(t, o.m, "entries left after every unlock")
}

// A subscription handed to the head of a line passes to the next caller
// when the head leaves, and is closed when nobody follows (issue 16).
func TestLineHandsSubscriptionOn(t *testing.T) {
	c := sharedClient(t, Options{})
	ctx := context.Background()
	first := c.lines.Join("r", false)
	second := c.lines.Join("r", false)
	w, err := c.Mux().Subscribe(ctx, "line-handoff", nil)
	require.NoError(t, err)
	first.passOn(w, nil)
	first.Leave()
	ok, err := second.Await(ctx, false, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, w, second.passedOn(), "the next caller gets the subscription")
	assert.Equal(t, 1, c.Mux().Stats().Waiters)

	second.passOn(w, nil)
	second.Leave() // nobody follows
	assert.Equal(t, 0, c.Mux().Stats().Waiters, "closed when nobody follows")
}
