package rlock_test

import (
	"context"
	"runtime"
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

// Issue 40 item 6 (the Redisson habit): rlock.New(c, "orders:7").Lock(ctx)
// then rlock.New(c, "orders:7").Unlock(ctx) returned ErrNotHeld, and the
// hold was renewed for the life of the process while every other process
// waited. Without a context owner, the handles of one name on one Client
// are one mutex: any of them releases the hold, and each one's Hold, Done
// and Err are that hold's. For every lock kind.
func TestHandlesOfOneNameAreOneMutex(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	other := clienttest.New(t, s.Client(t))
	ctx := context.Background()
	for _, kind := range []string{"lock", "fair lock", "spin lock"} {
		t.Run(kind, func(t *testing.T) {
			name := redistest.Key(t)
			newLock := func(c *redisync.Client) lockKind {
				switch kind {
				case "fair lock":
					return rlock.NewFair(c, name, rlock.WithFencing())
				case "spin lock":
					return rlock.NewSpin(c, name, rlock.WithFencing())
				}
				return rlock.New(c, name, rlock.WithFencing())
			}
			a := newLock(c)
			require.NoError(t, a.Lock(ctx))
			b := newLock(c) // a handle made where the release is
			hold := b.Hold(ctx)
			require.NotNil(t, hold, "the new handle does not see the name's hold")
			assert.Same(t, a.Hold(ctx), hold)
			assert.Equal(t, a.FencingToken(), b.FencingToken())
			assert.Positive(t, b.FencingToken())
			assert.NoError(t, b.Err())
			select {
			case <-b.Done():
				t.Fatal("the new handle's Done is closed while the name is held")
			default:
			}
			ok, err := b.TryLock(ctx, 0)
			require.NoError(t, err)
			assert.False(t, ok, "a second caller without a context owner entered the held mutex")

			require.NoError(t, b.Unlock(ctx), "a handle of the name releases its hold")
			<-a.Done()
			assert.ErrorIs(t, a.Err(), redisync.ErrNotHeld)
			assert.ErrorIs(t, a.Unlock(ctx), redisync.ErrNotHeld, "released once")
			o := newLock(other)
			ok, err = o.TryLock(ctx, 0)
			require.NoError(t, err)
			assert.True(t, ok, "another process waits for a lock released through another handle")
			require.NoError(t, o.Unlock(ctx))
		})
	}
}

// A handle dropped while it holds leaves the hold reachable from its
// Client: a new handle of the name releases it, so no hold is renewed that
// nothing can release.
func TestHoldOfACollectedHandleIsReleasable(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t), redisync.WithWatchdogTimeout(time.Second))
	ctx := context.Background()
	name := redistest.Key(t)
	func() {
		require.NoError(t, rlock.New(c, name).Lock(ctx))
	}()
	runtime.GC()
	runtime.GC()
	time.Sleep(500 * time.Millisecond) // a renewal or so
	l := rlock.New(c, name)
	require.NoError(t, l.Unlock(ctx))
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.Zero(t, (*core.Client)(c).Holds().Len(), "a hold is left for the watchdog to renew")
}
