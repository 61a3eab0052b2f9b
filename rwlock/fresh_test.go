package rwlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Fresh write holds (issue 16): a handle used without a context owner takes
// the write side with an owner of its own for every hold (see
// internal/core's "Fresh holds").

// writerField returns the writer field of the rwlock hash name, failing the
// test unless the hash is Redisson's write mode with exactly one writer:
// "mode" = "write" and one "<owner>:write" = "1".
func writerField(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	h, err := rdb.HGetAll(context.Background(), name).Result()
	require.NoError(t, err)
	require.Len(t, h, 2, "rwlock hash %s: %v", name, h)
	require.Equal(t, "write", h["mode"], "rwlock hash %s: %v", name, h)
	for f, n := range h {
		if f != "mode" {
			require.True(t, strings.HasSuffix(f, ":write"), "rwlock hash %s: %v", name, h)
			require.Equal(t, "1", n, "rwlock hash %s: %v", name, h)
			return f
		}
	}
	panic("unreachable")
}

// Redisson's layout: a fresh write hold is mode=write and one field
// "<client id>:<token>:write" = 1, with a new token per hold (not the
// handle's); WriteHoldCount reports the current hold's; no record while the
// hold lasts; the release deletes the hash and leaves the mark "released"
// under the hold's request key, past the request lifetime. Read holds
// without a context owner stay the handle's own.
func TestFreshWriteHoldLayout(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	require.NoError(t, rw.Lock(ctx))
	first := writerField(t, rdb, name)
	owner := strings.TrimSuffix(first, ":write")
	assert.True(t, strings.HasPrefix(owner, c.ID()+":"), "writer field %q", first)
	ttl := rdb.PTTL(ctx, name).Val()
	assert.Greater(t, ttl, 20*time.Second, "the lease is the watchdog timeout")
	n, err := rw.WriteHoldCount(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "WriteHoldCount of the fresh hold")
	assert.Zero(t, rdb.Exists(ctx, keys.Request(name, first)).Val(), "no record while the hold lasts")
	require.NoError(t, rw.Unlock(ctx))

	assert.Zero(t, rdb.Exists(ctx, name).Val(), "the lock is free")
	mark := keys.Request(name, first)
	assert.Equal(t, "released", rdb.Get(ctx, mark).Val())
	ttl = rdb.PTTL(ctx, mark).Val()
	assert.Greater(t, ttl, 5*time.Second, "the mark outlives the release's own request lifetime")
	assert.LessOrEqual(t, ttl, 5*time.Minute+time.Second)
	n, err = rw.WriteHoldCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "WriteHoldCount after Unlock")
	assert.ErrorIs(t, rw.Unlock(ctx), redisync.ErrNotHeld)

	require.NoError(t, rw.Lock(ctx))
	second := writerField(t, rdb, name)
	assert.NotEqual(t, first, second, "a new hold, a new owner")
	require.NoError(t, rw.Unlock(ctx))

	// The read side keeps the handle's own owner.
	require.NoError(t, rw.RLock(ctx))
	h := rdb.HGetAll(ctx, name).Val()
	assert.Equal(t, "read", h["mode"])
	assert.Len(t, h, 2, "one reader: %v", h)
	assert.NotContains(t, h, owner, "the reader is the fresh writer's owner")
	n, err = rw.ReadHoldCount(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "ReadHoldCount after a fresh write hold")
	require.NoError(t, rw.RUnlock(ctx))
	assert.Zero(t, rdb.Exists(ctx, name).Val())
}

// A fresh write hold excludes readers and writers of other clients, as the
// recorded one does, and its release wakes them.
func TestFreshWriteHoldExcludes(t *testing.T) {
	ctx := testCtx(t)
	c, other := clienttest.Shared(t), clienttest.Shared(t)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)
	require.NoError(t, rw.Lock(ctx))
	ok, err := rwlock.New(other, name).TryRLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a reader got in beside a fresh writer")
	ok, err = rwlock.New(other, name).TryLock(redisync.WithOwner(ctx), 0)
	require.NoError(t, err)
	assert.False(t, ok, "a context owner's writer got in beside a fresh writer")
	reader := rwlock.New(other, name)
	wokenBy(t, other, func() error { return reader.RLock(ctx) }, func() {
		require.NoError(t, rw.Unlock(ctx))
	}, "the fresh write release did not wake the reader")
	require.NoError(t, reader.RUnlock(ctx))
}

// A context owner that holds read holds is refused the write side at once
// (ErrUpgrade), also while a writer of its client waits in the local line
// for those very read holds to go: it does not line up behind that writer.
func TestUpgradeRefusedPastTheLine(t *testing.T) {
	ctx := testCtx(t)
	c := clienttest.Shared(t)
	name := redistest.Key(t, "rw")
	octx := redisync.WithOwner(ctx)
	rw := rwlock.New(c, name)
	require.NoError(t, rw.RLock(octx))
	writer := rwlock.New(c, name)
	got := make(chan error, 1)
	go func() { got <- writer.Lock(ctx) }()
	require.Eventually(t, func() bool { return writerLineLen(c, name) == 1 }, 5*time.Second, time.Millisecond)

	lctx, cancel := context.WithTimeout(octx, 5*time.Second)
	defer cancel()
	require.ErrorIs(t, rw.Lock(lctx), redisync.ErrUpgrade)
	require.NoError(t, rw.RUnlock(octx))
	require.NoError(t, <-got)
	require.NoError(t, writer.Unlock(ctx))
}

// A copy of a fresh write acquisition that arrives while its hold lasts
// answers "acquired" and changes nothing; after the Unlock it finds the mark
// and changes nothing; a copy of the release delivered after the next hold
// was taken leaves that hold alone.
func TestFreshWriteCopies(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c, rec := clienttest.Recorded(t, s)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name, rwlock.WithLease(time.Minute))

	rec.Reset()
	require.NoError(t, rw.Lock(ctx))
	acquire := rec.Last()
	field := writerField(t, rdb, name)
	require.NoError(t, rdb.PExpire(ctx, name, 40*time.Second).Err())
	res, err := rdb.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 1}, res, "a re-sent acquisition answers as the first")
	assert.Equal(t, field, writerField(t, rdb, name))
	assert.Less(t, rdb.PTTL(ctx, name).Val(), 41*time.Second, "a copy of the acquisition set the lease again")

	rec.Reset()
	require.NoError(t, rw.Unlock(ctx))
	release := rec.Last()
	res, err = rdb.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{0, -3}, res, "a copy after the release")
	assert.Zero(t, rdb.Exists(ctx, name).Val(), "a copy of the acquisition took the lock again")

	require.NoError(t, rw.Lock(ctx))
	next := writerField(t, rdb, name)
	n, err := rdb.Do(ctx, release...).Int64()
	require.NoError(t, err)
	assert.Zero(t, n, "a re-sent release answers as the first")
	assert.Equal(t, next, writerField(t, rdb, name), "a copy of the previous release touched the next hold")
	require.NoError(t, rw.Unlock(ctx))
}

// ForceUnlock marks the request key of the fresh write hold it deletes, so
// that a copy of its acquisition delivered afterwards does not take the
// lock again; the holder's Unlock then reports ErrNotHeld and changes
// nothing.
func TestFreshWriteForceUnlockThenLateCopy(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c, rec := clienttest.Recorded(t, s)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	rec.Reset()
	require.NoError(t, rw.Lock(ctx))
	acquire := rec.Last()
	field := writerField(t, rdb, name)
	existed, err := rwlock.New(clienttest.New(t, s.Client(t)), name).ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, existed)
	mark := keys.Request(name, field)
	assert.Equal(t, "cancelled", rdb.Get(ctx, mark).Val(), "the force unlock marks the fresh write hold")
	assert.Greater(t, rdb.PTTL(ctx, mark).Val(), 4*time.Minute)

	res, err := rdb.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{0, -3}, res)
	assert.Zero(t, rdb.Exists(ctx, name).Val(), "a copy of the acquisition took the lock again")
	assert.ErrorIs(t, rw.Unlock(ctx), redisync.ErrNotHeld)
	assert.Zero(t, rdb.Exists(ctx, name).Val())
	assert.Equal(t, "cancelled", rdb.Get(ctx, mark).Val(), "a not-held release changed the mark")
}
