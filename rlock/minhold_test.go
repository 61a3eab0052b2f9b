package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// An Unlock within the minimum hold ends the hold but leaves the lock to
// expire at acquisition + d: another client's TryLock fails until then,
// and a waiter gets it soon after, woken by its re-check at the expiry.
func TestMinHoldKeepsLockUntilMinimum(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	for _, kind := range []string{"lock", "fair", "owner"} {
		t.Run(kind, func(t *testing.T) {
			name := redistest.Key(t)
			c := clienttest.New(t, s.Client(t))
			other := clienttest.New(t, s.Client(t))
			const d = 1500 * time.Millisecond
			var a, b redisync.Locker
			actx := ctx
			switch kind {
			case "lock":
				a, b = rlock.New(c, name, rlock.WithMinHold(d)), rlock.New(other, name)
			case "fair":
				a, b = rlock.NewFair(c, name, rlock.WithMinHold(d)), rlock.NewFair(other, name)
			case "owner": // a context owner: the record-based release
				a, b = rlock.New(c, name, rlock.WithMinHold(d)), rlock.New(other, name)
				actx = redisync.WithOwner(ctx)
			}
			start := time.Now()
			require.NoError(t, a.Lock(actx))
			require.NoError(t, a.Unlock(actx))
			ok, err := b.TryLock(ctx, 0)
			require.NoError(t, err)
			assert.False(t, ok, "the lock was free right after an Unlock within the minimum hold")
			ttl, err := rlock.New(other, name).TTL(ctx)
			require.NoError(t, err)
			assert.LessOrEqual(t, ttl, d)
			assert.Greater(t, ttl, d/2)
			// A second Unlock: the hold is over in the client.
			assert.ErrorIs(t, a.Unlock(actx), redisync.ErrNotHeld)
			ok, err = b.TryLock(ctx, 5*time.Second)
			require.NoError(t, err)
			require.True(t, ok)
			took := time.Since(start)
			t.Logf("the other client got the lock %v after the acquisition (minimum hold %v)", took, d)
			assert.GreaterOrEqual(t, took, d-50*time.Millisecond)
			assert.Less(t, took, d+time.Second, "the waiter re-checks at the expiry")
			require.NoError(t, b.Unlock(ctx))
		})
	}
}

// An Unlock after the minimum hold deletes the lock at once and wakes the
// waiter, as without the option.
func TestMinHoldOverReleasesAtOnce(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name, rlock.WithMinHold(200*time.Millisecond))
	b := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, a.Lock(ctx))
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, a.Unlock(ctx))
	ok, err := b.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, b.Unlock(ctx))
}

// A fixed lease shorter than the minimum hold is the minimum hold: a
// holder that never unlocks keeps the lock for d.
func TestMinHoldLengthensShortLease(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	a := rlock.New(clienttest.New(t, s.Client(t)), name, rlock.WithLease(100*time.Millisecond), rlock.WithMinHold(2*time.Second))
	require.NoError(t, a.Lock(ctx))
	ttl, err := a.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Second)
}

// Two handles of one client: the second caller is not handed the lock by a
// release within the minimum hold.
func TestMinHoldNoHandoff(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	const d = time.Second
	a := rlock.New(c, name, rlock.WithMinHold(d))
	b := rlock.New(c, name, rlock.WithMinHold(d))
	start := time.Now()
	require.NoError(t, a.Lock(ctx))
	got := make(chan time.Duration, 1)
	go func() {
		if err := b.Lock(ctx); err == nil {
			got <- time.Since(start)
			_ = b.Unlock(ctx)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, a.Unlock(ctx))
	select {
	case took := <-got:
		assert.GreaterOrEqual(t, took, d-50*time.Millisecond)
		assert.Less(t, took, d+time.Second, "the waiter re-checks at the expiry")
	case <-time.After(8 * time.Second):
		t.Fatal("the waiter never got the lock")
	}
}

func TestMinHoldInvalid(t *testing.T) {
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	for _, d := range []time.Duration{0, -time.Second} {
		err := rlock.New(c, redistest.Key(t), rlock.WithMinHold(d)).Lock(context.Background())
		assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
	}
}

// A handle's own watchdog lease: its holds are renewed on it, and a
// holder whose Client closes frees the lock within it, while the Client's
// lease stays 30 s.
func TestWatchdogTimeoutPerHandle(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	dead := redisync.New(s.Client(t))
	t.Cleanup(func() { _ = dead.Close() })
	a := rlock.New(dead, name, rlock.WithWatchdogTimeout(600*time.Millisecond))
	require.NoError(t, a.Lock(ctx))
	time.Sleep(time.Second) // renewed meanwhile
	ttl, err := a.TTL(ctx)
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, 600*time.Millisecond)
	require.NoError(t, a.Err())
	require.NoError(t, dead.Close())
	start := time.Now()
	b := rlock.New(clienttest.New(t, s.Client(t)), name)
	ok, err := b.TryLock(ctx, 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Less(t, time.Since(start), 1500*time.Millisecond)
	require.NoError(t, b.Unlock(ctx))
	err = rlock.New(clienttest.New(t, s.Client(t)), name, rlock.WithWatchdogTimeout(-time.Second)).Lock(ctx)
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}
