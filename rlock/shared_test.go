package rlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Regression (issue 12): one handle shared by the goroutines of a process,
// as a sync.Mutex in a struct field is, let every goroutine in (120 guarded
// increments gave 87, with up to 14 inside at once). Now 8 goroutines on
// each of 2 clients, sharing one handle per client, exclude each other.
func TestSharedHandleExcludes(t *testing.T) {
	const (
		clients    = 2
		goroutines = 8
		increments = 12
	)
	ctx := context.Background()
	s := redistest.Shared(t)
	name, counter := redistest.Key(t), redistest.Key(t, "counter")
	rdb := s.Client(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		l := rlock.New(clienttest.New(t, s.Client(t)), name) // one handle, shared
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range increments {
					if !assert.NoError(t, l.Lock(ctx)) {
						return
					}
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					v, err := rdb.Get(ctx, counter).Int()
					if err != nil && err != redis.Nil {
						assert.NoError(t, err)
					}
					assert.NoError(t, rdb.Set(ctx, counter, v+1, 0).Err())
					inside.Add(-1)
					assert.NoError(t, l.Unlock(ctx))
				}
			}()
		}
	}
	wg.Wait()
	v, err := rdb.Get(ctx, counter).Int()
	require.NoError(t, err)
	assert.Equal(t, clients*goroutines*increments, v, "guarded increments")
	assert.EqualValues(t, 1, most.Load(), "goroutines inside at once")
}

// A handle used without a context owner is not reentrant, as sync.Mutex:
// TryLock on a held handle fails, even in the goroutine that holds it, and
// any goroutine may Unlock it.
func TestPlainHandleNotReentrant(t *testing.T) {
	ctx := context.Background()
	l := rlock.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	ok, err := l.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "TryLock through the holding handle")
	ok, err = l.TryLock(ctx, 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, ok, "TryLock with a wait through the holding handle")
	assert.EqualValues(t, 1, holdCount(t, l, ctx))

	got := make(chan error, 1)
	go func() { got <- l.Lock(ctx) }() // waits locally for the Unlock below
	done := make(chan error, 1)
	go func() { done <- l.Unlock(ctx) }() // from another goroutine
	require.NoError(t, <-done)
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Lock did not get in after the Unlock")
	}
	require.NoError(t, l.Unlock(ctx))
	assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld, "an Unlock more than Locks")
}

// Regression (issue 12): a release that failed on the network ended the
// hold locally and left the count in Redis; a new Lock through the same
// handle added to that stale count (2), the caller's single Unlock left 1,
// and the watchdog renewed it for as long as the client lived. Now the new
// hold starts from the client's own count: its Unlock frees the lock and
// nothing is renewed.
func TestRelockAfterFailedUnlock(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c, proxy := clienttest.Proxied(t, s, cutOptions, redisync.WithWatchdogTimeout(3*time.Second))
	name := redistest.Key(t)
	l := rlock.New(c, name)

	require.NoError(t, l.Lock(ctx))
	clienttest.FailWhileCut(t, proxy, func() error { return l.Unlock(ctx) })
	direct := s.Client(t)
	require.EqualValues(t, 1, direct.Exists(ctx, name).Val(), "test setup: the failed release left the hold in Redis")

	require.NoError(t, l.Lock(ctx))
	assert.EqualValues(t, 1, holdCount(t, l, ctx), "the new hold does not adopt the stale count")
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, direct.Exists(ctx, name).Val(), "the lock is free after the last Unlock")
	assert.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "nothing is renewed")
	other := rlock.New(clienttest.New(t, s.Client(t)), name)
	ok, err := other.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "another owner gets the lock")
	require.NoError(t, other.Unlock(ctx))
}

// cutOptions are go-redis options for a client whose network gets cut:
// short timeouts, no go-redis retries.
var cutOptions = redis.Options{MaxRetries: -1,
	ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond}
