package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Issue 40 item 6 for both sides of a read-write lock: without a context
// owner, the handles of one name on one Client are one sync.RWMutex. A
// write hold taken through one handle is released through another; read
// holds taken through two handles are released through a third; a writer
// through any handle waits for them.
func TestHandlesOfOneNameAreOneRWMutex(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	other := clienttest.New(t, s.Client(t))
	ctx := context.Background()
	name := redistest.Key(t)

	require.NoError(t, rwlock.New(c, name).Lock(ctx))
	w := rwlock.New(c, name)
	require.NotNil(t, w.WriteHold(ctx), "a new handle does not see the name's write hold")
	require.NoError(t, w.Unlock(ctx), "a handle of the name releases the write hold")
	locked, err := w.IsWriteLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)

	require.NoError(t, rwlock.New(c, name).RLock(ctx))
	require.NoError(t, rwlock.New(c, name).RLock(ctx))
	ok, err := rwlock.New(c, name).TryLock(ctx, 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, ok, "a writer without a context owner entered beside the read holds")
	r := rwlock.New(c, name)
	require.NotNil(t, r.ReadHold(ctx), "a third handle does not see the name's read holds")
	require.NoError(t, r.RUnlock(ctx))
	require.NoError(t, r.RUnlock(ctx))
	assert.ErrorIs(t, r.RUnlock(ctx), redisync.ErrNotHeld)

	o := rwlock.New(other, name)
	ok, err = o.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "another process waits for read holds released through another handle")
	require.NoError(t, o.Unlock(ctx))
}
