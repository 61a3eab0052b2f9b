package rwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Regression (issue 25): two context owners sharing an rwlock handle; when
// B released its read hold, the handle's Done closed and Err said "not
// held" while A still held its read hold, so A's loss detection fired. The
// handle's Done still follows the latest acquisition; A's ReadHold follows
// A's hold alone and stays open.
func TestReleaseOfOneOwnerLeavesAnothersReadHold(t *testing.T) {
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	rw := rwlock.New(c, redistest.Key(t))
	a := redisync.WithOwner(context.Background())
	b := redisync.WithOwner(context.Background())

	assert.Nil(t, rw.ReadHold(a))
	require.NoError(t, rw.RLock(a))
	ha := rw.ReadHold(a)
	require.NotNil(t, ha)
	actx := ha.Context()
	require.NoError(t, rw.RLock(b))
	hb := rw.ReadHold(b)
	require.NotNil(t, hb)
	assert.NotSame(t, ha, hb)
	require.NoError(t, rw.RLock(a)) // a re-entry: the same hold
	assert.Same(t, ha, rw.ReadHold(a))
	assert.Same(t, ha, rwlock.New(c, rw.Name()).ReadHold(a), "any handle of the Client finds the owner's hold")

	require.NoError(t, rw.RUnlock(b))
	<-hb.Done()
	assert.ErrorIs(t, hb.Err(), redisync.ErrNotHeld)
	assert.Nil(t, rw.ReadHold(b))
	select {
	case <-ha.Done():
		t.Fatal("B's release closed A's ReadHold().Done()")
	case <-actx.Done():
		t.Fatal("B's release ended A's hold context")
	default:
	}
	assert.NoError(t, ha.Err())
	assert.Nil(t, rw.WriteHold(a))

	require.NoError(t, rw.RUnlock(a))
	assert.NoError(t, ha.Err(), "one read hold left")
	require.NoError(t, rw.RUnlock(a))
	<-actx.Done()
	assert.ErrorIs(t, context.Cause(actx), redisync.ErrNotHeld)
	assert.Nil(t, rw.ReadHold(a))
}

// WriteHold is the owner's write hold: a context owner's across re-entries,
// or without one the handle's; a downgrade's read hold is a hold of its own.
func TestWriteHold(t *testing.T) {
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	rw := rwlock.New(c, redistest.Key(t))
	bg := context.Background()
	assert.Nil(t, rw.ReadHold(bg))
	require.NoError(t, rw.RLock(bg)) // the handle's own read hold
	r0 := rw.ReadHold(bg)
	require.NotNil(t, r0)
	require.NoError(t, rw.RUnlock(bg))
	<-r0.Done()
	assert.Nil(t, rw.WriteHold(bg))
	require.NoError(t, rw.Lock(bg))
	w := rw.WriteHold(bg)
	require.NotNil(t, w)
	assert.Nil(t, rw.ReadHold(bg))
	require.NoError(t, rw.Unlock(bg))
	<-w.Done()
	assert.Nil(t, rw.WriteHold(bg))

	owner := redisync.WithOwner(bg)
	require.NoError(t, rw.Lock(owner))
	w = rw.WriteHold(owner)
	require.NoError(t, rw.Lock(owner))
	assert.Same(t, w, rw.WriteHold(owner))
	require.NoError(t, rw.RLock(owner)) // downgrade
	r := rw.ReadHold(owner)
	require.NotNil(t, r)
	require.NoError(t, rw.Unlock(owner))
	require.NoError(t, rw.Unlock(owner))
	<-w.Done()
	assert.NoError(t, r.Err(), "the read hold outlives the write hold")
	require.NoError(t, rw.RUnlock(owner))
	<-r.Done()
}
