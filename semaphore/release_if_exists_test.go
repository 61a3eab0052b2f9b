package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// ReleaseIfExists releases only a semaphore that exists: on a missing one
// it returns false and leaves no key at all (Release would create it).
func TestReleaseIfExists(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t)
	rdb := c.Redis()
	name := redistest.Key(t, "sem")
	s := New(c, name)

	ok, err := s.ReleaseIfExists(ctx, 2)
	require.NoError(t, err)
	require.False(t, ok, "a semaphore never set")
	for _, k := range []string{name, keys.SemaphoreChannel(name), s.h.C.Requests().Ledger().Key(name)} {
		n, err := rdb.Exists(ctx, k).Result()
		require.NoError(t, err)
		require.Zero(t, n, "%s created", k)
	}

	_, err = s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 1))
	ok, err = s.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 1, available(t, s))

	_, err = s.Delete(ctx)
	require.NoError(t, err)
	ok, err = s.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	require.False(t, ok, "a deleted semaphore")
	n, err := rdb.Exists(ctx, name).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the deleted semaphore came back")
}

// A waiter is woken by ReleaseIfExists as by Release (the same channel and
// message), and a reply lost on the way back is applied once.
func TestReleaseIfExistsWakesAndIsAppliedOnce(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	waiting := New(clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute)), name)
	c, rdb, p := proxied(t)
	s := New(c, name)
	_, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 1))

	done := async(func() error { return waiting.Acquire(ctx, 1) })
	require.Eventually(t, func() bool { return waiters(waiting.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
	ok, err := s.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, await(t, done, 10*time.Second, "Acquire after ReleaseIfExists").err)
	require.EqualValues(t, 0, available(t, s))

	require.NoError(t, rdb.Ping(ctx).Err())
	before := p.Dropped()
	p.DropNextReply()
	ok, err = s.ReleaseIfExists(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, before+1, p.Dropped(), "the reply was dropped")
	require.EqualValues(t, 2, available(t, s), "applied once")
}

// Bad input sends nothing.
func TestReleaseIfExistsBadInput(t *testing.T) {
	ctx := context.Background()
	c, cc := countedClient(t)
	s := New(c, redistest.Key(t, "sem"))
	invalid := map[string]error{}
	_, invalid["ReleaseIfExists(0)"] = s.ReleaseIfExists(ctx, 0)
	_, invalid["ReleaseIfExists(-1)"] = s.ReleaseIfExists(ctx, -1)
	_, invalid["ReleaseIfExists(2^53+1)"] = s.ReleaseIfExists(ctx, maxPermits+1)
	_, invalid["empty name ReleaseIfExists"] = New(c, "").ReleaseIfExists(ctx, 1)
	_, invalid["nil client ReleaseIfExists"] = New(nil, "x").ReleaseIfExists(ctx, 1)
	allInvalidNothingSent(t, invalid, cc)
}

// A key of another type fails ReleaseIfExists with ErrWrongType and
// changes nothing.
func TestReleaseIfExistsWrongType(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t)
	name := redistest.Key(t, "sem")
	for _, set := range []func() error{
		func() error { return c.Redis().HSet(ctx, name, "f", "1").Err() },
		func() error { return c.Redis().Set(ctx, name, "x", 0).Err() },
	} {
		require.NoError(t, c.Redis().Del(ctx, name).Err())
		require.NoError(t, set())
		before := redistest.Snapshot(t, c.Redis(), name)
		_, err := New(c, name).ReleaseIfExists(ctx, 1)
		require.ErrorIs(t, err, redisync.ErrWrongType)
		require.Equal(t, before, redistest.Snapshot(t, c.Redis(), name))
	}
}
