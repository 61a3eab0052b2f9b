package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// fakeSide is a Side whose scripts are Go (fakeScripts): every
// acquisition succeeds and every release frees the hold. It counts the
// acquisitions sent.
func fakeSide(acquired *atomic.Int64) *Side {
	return &Side{Kind: "test", Scripts: &fakeScripts{acquired: acquired}}
}

type fakeScripts struct{ acquired *atomic.Int64 }

func (f *fakeScripts) Field(owner string) string { return owner }
func (f *fakeScripts) RunAcquire(context.Context, *Request) (Outcome, error) {
	f.acquired.Add(1)
	return Outcome{Acquired: true}, nil
}
func (f *fakeScripts) RunRelease(_ context.Context, req *Request) (int64, error) {
	return req.Count, nil
}
func (f *fakeScripts) Renewal(*Request) *RenewSpec { return nil }
func (f *fakeScripts) Waiting(req *Request) Waiting {
	return Waiting{PubSub: &PubSub{Channel: req.Name, Wake: pubsub.WakeOne}}
}

// Callers of a handle without a context owner exclude each other at its
// gate, before anything is sent: the gate in use through Lock.Acquire.
func TestGateInLock(t *testing.T) {
	c := sharedClient(t, Options{})
	l := NewLock(c, "test", redistest.Key(t, "lock"))
	var acquired atomic.Int64
	s := fakeSide(&acquired)
	ok, err := l.Acquire(context.Background(), s, false, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, l.gate.Holds(s.Shared))
	ok, err = l.Acquire(context.Background(), s, false, 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "a second caller through the handle")
	assert.EqualValues(t, 1, acquired.Load(), "acquisitions sent: the second caller must wait at the gate")
	assert.Zero(t, l.gate.queued())
	require.NoError(t, l.Release(context.Background(), s))
	assert.False(t, l.gate.Holds(s.Shared))
	require.ErrorIs(t, l.Release(context.Background(), s), errs.ErrNotHeld, "a release through the handle with nothing taken")
	assert.Equal(t, pubsub.Stats{}, c.Mux().Stats(), "the gate's waiter subscribed")
}
