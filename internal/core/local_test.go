package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	shared    = true
	exclusive = false
)

// gateEntry is a caller entering a gate in the background.
type gateEntry struct {
	name string
	done chan error // enter's error, or nil once admitted
}

// enterInBackground makes a caller enter g (waiting forever, unless ctx
// ends or closing closes) and returns once it is queued, so that callers
// started one after the other queue in that order.
func enterInBackground(ctx context.Context, t *testing.T, g *Gate, name string, kind bool, closing <-chan struct{}) *gateEntry {
	t.Helper()
	before := g.queued()
	e := &gateEntry{name: name, done: make(chan error, 1)}
	go func() {
		ok, err := g.Enter(ctx, kind, true, 0, closing)
		if err == nil && !ok {
			err = errors.New("a forever wait at the gate returned false without an error")
		}
		e.done <- err
	}()
	require.Eventually(t, func() bool { return g.queued() == before+1 }, 5*time.Second, time.Millisecond, "%s queued", name)
	return e
}

func (e *gateEntry) admitted(t *testing.T) {
	t.Helper()
	select {
	case err := <-e.done:
		require.NoError(t, err, "%s", e.name)
	case <-time.After(5 * time.Second):
		require.FailNowf(t, "not admitted", "%s was not admitted", e.name)
	}
}

// waiting checks that e is still queued a short while from now.
func (e *gateEntry) waiting(t *testing.T) {
	t.Helper()
	require.Never(t, func() bool { return len(e.done) > 0 }, 50*time.Millisecond, time.Millisecond, "%s passed the gate", e.name)
}

// enterNow is one attempt without waiting.
func enterNow(t *testing.T, g *Gate, kind bool) bool {
	t.Helper()
	ok, err := g.Enter(context.Background(), kind, false, 0, nil)
	require.NoError(t, err)
	return ok
}

func TestGateSharedAndExclusive(t *testing.T) {
	var g Gate
	require.True(t, enterNow(t, &g, shared))
	require.True(t, enterNow(t, &g, shared), "readers share")
	require.False(t, enterNow(t, &g, exclusive), "a writer among readers")
	assert.True(t, g.Holds(shared))
	assert.False(t, g.Holds(exclusive))
	require.True(t, g.Leave(shared))
	require.True(t, g.Leave(shared))
	require.False(t, g.Leave(shared), "leaving without a reader inside")
	require.False(t, g.Leave(exclusive), "leaving without a writer inside")

	require.True(t, enterNow(t, &g, exclusive))
	require.False(t, enterNow(t, &g, exclusive), "a second writer")
	require.False(t, enterNow(t, &g, shared), "a reader while a writer is inside")
	assert.True(t, g.Holds(exclusive))
	require.True(t, g.Leave(exclusive))
	assert.Zero(t, g.queued(), "a refused attempt without a wait queued")
}

// Waiting callers pass in arrival order.
func TestGateFIFO(t *testing.T) {
	var g Gate
	ctx := context.Background()
	require.True(t, enterNow(t, &g, exclusive))
	a := enterInBackground(ctx, t, &g, "writer a", exclusive, nil)
	b := enterInBackground(ctx, t, &g, "writer b", exclusive, nil)
	c := enterInBackground(ctx, t, &g, "writer c", exclusive, nil)
	require.True(t, g.Leave(exclusive))
	a.admitted(t)
	b.waiting(t)
	require.True(t, g.Leave(exclusive))
	b.admitted(t)
	c.waiting(t)
	require.True(t, g.Leave(exclusive))
	c.admitted(t)
	require.True(t, g.Leave(exclusive))
	assert.Zero(t, g.queued())
}

// A waiting writer keeps later readers out, even while readers are inside;
// when it leaves, the readers queued behind it pass together, up to the
// next writer.
func TestGateWriterBlocksLaterReaders(t *testing.T) {
	var g Gate
	ctx := context.Background()
	require.True(t, enterNow(t, &g, shared))
	w := enterInBackground(ctx, t, &g, "writer", exclusive, nil)
	require.False(t, enterNow(t, &g, shared), "a reader overtook a waiting writer")
	r1 := enterInBackground(ctx, t, &g, "reader 1", shared, nil)
	r2 := enterInBackground(ctx, t, &g, "reader 2", shared, nil)
	w2 := enterInBackground(ctx, t, &g, "writer 2", exclusive, nil)
	r3 := enterInBackground(ctx, t, &g, "reader 3", shared, nil)
	r1.waiting(t)

	require.True(t, g.Leave(shared)) // the first reader leaves: the writer passes
	w.admitted(t)
	r1.waiting(t)
	require.True(t, g.Leave(exclusive)) // readers 1 and 2 pass together
	r1.admitted(t)
	r2.admitted(t)
	w2.waiting(t)
	r3.waiting(t)
	require.True(t, g.Leave(shared))
	w2.waiting(t)
	require.True(t, g.Leave(shared))
	w2.admitted(t)
	require.True(t, g.Leave(exclusive))
	r3.admitted(t)
	require.True(t, g.Leave(shared))
	assert.Zero(t, g.queued())
}

// A waiter that gives up (ctx, Close, its wait running out) leaves the
// queue holding nothing, and the callers behind it pass if they now can.
func TestGateWaiterGivesUp(t *testing.T) {
	t.Run("cancelled writer unblocks readers behind it", func(t *testing.T) {
		var g Gate
		require.True(t, enterNow(t, &g, shared))
		ctx, cancel := context.WithCancel(context.Background())
		w := enterInBackground(ctx, t, &g, "writer", exclusive, nil)
		r := enterInBackground(context.Background(), t, &g, "reader", shared, nil)
		r.waiting(t)
		cancel()
		select {
		case err := <-w.done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the cancelled writer did not return")
		}
		r.admitted(t)
		assert.False(t, g.Holds(exclusive), "the cancelled writer holds the gate")
		require.True(t, g.Leave(shared))
		require.True(t, g.Leave(shared))
		assert.Zero(t, g.queued())
	})
	t.Run("closing", func(t *testing.T) {
		var g Gate
		closing := make(chan struct{})
		require.True(t, enterNow(t, &g, exclusive))
		w := enterInBackground(context.Background(), t, &g, "writer", exclusive, closing)
		close(closing)
		select {
		case err := <-w.done:
			require.ErrorIs(t, err, errs.ErrClosed)
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the waiter did not return on closing")
		}
		assert.Zero(t, g.queued())
		require.True(t, g.Leave(exclusive))
		assert.False(t, g.Holds(exclusive))
	})
	t.Run("wait runs out", func(t *testing.T) {
		var g Gate
		require.True(t, enterNow(t, &g, exclusive))
		start := time.Now()
		ok, err := g.Enter(context.Background(), exclusive, false, 50*time.Millisecond, nil)
		require.NoError(t, err)
		require.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
		assert.Zero(t, g.queued())
		require.True(t, g.Leave(exclusive))
		require.True(t, enterNow(t, &g, exclusive), "the gate after a wait ran out")
	})
}
