package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Regression (issue 25): with WithFencing every re-entry incremented the
// counter, so the outer scope's token became stale as soon as a nested
// call re-entered the lock, and a fenced store rejected the outer scope's
// own writes. A re-entry now keeps the hold's token; the next hold, by any
// owner, gets a larger one.
func TestReentryKeepsFencingToken(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	for _, kind := range []string{"lock", "fair lock", "spin lock"} {
		t.Run(kind, func(t *testing.T) {
			ctx := redisync.WithOwner(context.Background())
			name := redistest.Key(t)
			newLock := func() lockKind {
				switch kind {
				case "fair lock":
					return rlock.NewFair(c, name, rlock.WithFencing())
				case "spin lock":
					return rlock.NewSpin(c, name, rlock.WithFencing())
				}
				return rlock.New(c, name, rlock.WithFencing())
			}
			outer, inner := newLock(), newLock() // two handles, one owner
			store := &fencedStore{}

			require.NoError(t, outer.Lock(ctx))
			hold := outer.Hold(ctx)
			require.NotNil(t, hold)
			token := hold.FencingToken()
			require.Positive(t, token)
			require.NoError(t, store.Write(token, "outer 1"))

			require.NoError(t, inner.Lock(ctx)) // a nested call re-enters
			assert.Same(t, hold, inner.Hold(ctx), "a re-entry belongs to the same hold")
			assert.Equal(t, token, inner.FencingToken(), "a re-entry keeps the hold's token")
			require.NoError(t, store.Write(inner.Hold(ctx).FencingToken(), "inner"))
			// The re-entry's request record, which a re-sent copy
			// returns, carries the hold's token too.
			reqs, err := s.Client(t).Keys(ctx, keys.RequestPrefix(name)+"*").Result()
			require.NoError(t, err)
			records := map[string]bool{}
			for _, k := range reqs {
				v, err := s.Client(t).Get(ctx, k).Result()
				require.NoError(t, err)
				records[v] = true
			}
			assert.Equal(t, map[string]bool{fmt.Sprintf("1:%d", token): true, fmt.Sprintf("2:%d", token): true}, records)
			require.NoError(t, inner.Unlock(ctx))

			require.NoError(t, store.Write(outer.FencingToken(), "outer 2"), "the outer scope's writes are accepted after the nested call")
			assert.Equal(t, token, hold.FencingToken())
			select {
			case <-hold.Done():
				t.Fatal("the hold ended with the nested Unlock")
			default:
			}
			require.NoError(t, outer.Unlock(ctx))
			<-hold.Done()

			v, err := s.Client(t).Get(ctx, "redisson_lock_token:{"+name+"}").Int64()
			require.NoError(t, err)
			assert.Equal(t, token, v, "one increment per hold")

			next := newLock()
			require.NoError(t, next.Lock(context.Background())) // another owner
			assert.Greater(t, next.FencingToken(), token)
			require.NoError(t, store.Write(next.FencingToken(), "next"))
			assert.ErrorContains(t, store.Write(token, "stale"), "stale fencing token")
			require.NoError(t, next.Unlock(context.Background()))
		})
	}
}

// lockKind is what the tests use of a Lock, FairLock or SpinLock.
type lockKind interface {
	redisync.Locker
	Hold(ctx context.Context) *redisync.Hold
	FencingToken() int64
	Done() <-chan struct{}
	Err() error
	ForceUnlock(ctx context.Context) (bool, error)
}

// A Hold lasts from the acquisition that takes it to the release that ends
// it or its loss; its Context ends with it, with Err as the cause; Hold
// returns nil when the owner holds nothing, and sends nothing.
func TestHold(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	l := rlock.New(c, name)
	bg := context.Background()
	owner := redisync.WithOwner(bg)

	assert.Nil(t, l.Hold(bg), "nothing taken through the handle")
	assert.Nil(t, l.Hold(owner))
	var none *redisync.Hold
	assert.ErrorIs(t, none.Err(), redisync.ErrNotHeld)
	<-none.Done()
	<-none.Context().Done()

	// Without a context owner: the handle's hold.
	require.NoError(t, l.Lock(bg))
	h := l.Hold(bg)
	require.NotNil(t, h)
	assert.Nil(t, l.Hold(owner), "a context owner holds nothing")
	hctx := h.Context()
	assert.NoError(t, hctx.Err())
	assert.NoError(t, h.Err())
	require.NoError(t, l.Unlock(bg))
	<-hctx.Done()
	assert.ErrorIs(t, h.Err(), redisync.ErrNotHeld)
	assert.Equal(t, h.Err(), context.Cause(hctx))
	assert.Nil(t, l.Hold(bg))
	assert.ErrorIs(t, h.Context().Err(), context.Canceled, "a context asked for after the end is done")

	// A context owner's hold, re-entered through another handle, ends
	// with its loss.
	require.NoError(t, l.Lock(owner))
	h = l.Hold(owner)
	require.NotNil(t, h)
	other := rlock.New(c, name)
	require.NoError(t, other.Lock(owner))
	assert.Same(t, h, other.Hold(owner))
	hctx = h.Context()
	_, err := other.ForceUnlock(bg)
	require.NoError(t, err)
	<-hctx.Done()
	assert.ErrorIs(t, context.Cause(hctx), redisync.ErrLockLost)
	assert.True(t, errors.Is(h.Err(), redisync.ErrLockLost))
	assert.Nil(t, l.Hold(owner))
}

// Two owners sharing one handle: the handle's Done follows the latest
// acquisition, each owner's Hold follows its own.
func TestHoldPerOwnerOnASharedHandle(t *testing.T) {
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	l := rlock.NewFair(c, redistest.Key(t))
	a := redisync.WithOwner(context.Background())
	require.NoError(t, l.Lock(a))
	ha := l.Hold(a)
	require.NoError(t, l.Unlock(a))
	<-ha.Done()
	b := redisync.WithOwner(context.Background())
	require.NoError(t, l.Lock(b))
	hb := l.Hold(b)
	assert.NotSame(t, ha, hb)
	assert.NoError(t, l.Err())
	assert.NoError(t, hb.Err())
	require.NoError(t, l.Unlock(b))
	assert.ErrorIs(t, hb.Err(), redisync.ErrNotHeld)
}
