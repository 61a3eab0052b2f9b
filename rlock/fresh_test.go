package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Fresh holds: a handle used without a context owner takes an owner of its
// own for every hold (see internal/core's "Fresh holds").

// onlyField returns the one field of the lock hash name, failing the test
// unless there is exactly one.
func onlyField(t *testing.T, rdb *redis.Client, name string) (field, count string) {
	t.Helper()
	fields, err := rdb.HGetAll(context.Background(), name).Result()
	require.NoError(t, err)
	require.Len(t, fields, 1, "lock hash %s: %v", name, fields)
	for f, n := range fields {
		return f, n
	}
	panic("unreachable")
}

// Each hold through a handle without a context owner has an owner of its
// own, "<client id>:<token>" with a new token; IsHeld and HoldCount report
// the current hold's; the release leaves the mark "released" under the
// hold's request key, past the request lifetime.
func TestFreshHoldsHaveOwnersOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	l := rlock.New(c, name)

	require.NoError(t, l.Lock(ctx))
	first, count := onlyField(t, rdb, name)
	assert.True(t, strings.HasPrefix(first, c.ID()+":"), "owner field %q", first)
	assert.Equal(t, "1", count)
	assert.EqualValues(t, 1, holdCount(t, l, ctx))
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Zero(t, rdb.Exists(ctx, keys.Request(name, first)).Val(), "no record while the hold lasts")
	require.NoError(t, l.Unlock(ctx))

	assert.Zero(t, rdb.Exists(ctx, name).Val(), "the lock is free")
	assert.EqualValues(t, 0, holdCount(t, l, ctx))
	mark := keys.Request(name, first)
	assert.Equal(t, "released", rdb.Get(ctx, mark).Val())
	ttl := rdb.PTTL(ctx, mark).Val()
	assert.Greater(t, ttl, 5*time.Second, "the mark outlives the release's own request lifetime")
	assert.LessOrEqual(t, ttl, 5*time.Minute+time.Second)

	require.NoError(t, l.Lock(ctx))
	second, _ := onlyField(t, rdb, name)
	assert.NotEqual(t, first, second, "a new hold, a new owner")
	assert.True(t, strings.HasPrefix(second, c.ID()+":"), "owner field %q", second)
	require.NoError(t, l.Unlock(ctx))

	spin := rlock.NewSpin(c, name)
	require.NoError(t, spin.Lock(ctx))
	third, _ := onlyField(t, rdb, name)
	assert.NotContains(t, []string{first, second}, third, "the spin lock takes fresh holds too")
	require.NoError(t, spin.Unlock(ctx))
	assert.Zero(t, rdb.Exists(ctx, name).Val())
}

// go-redis re-sends a script whose reply was lost: the fresh acquisition
// takes the lock once (one field, one fencing token), and the re-sent
// release answers as the first did (no ErrNotHeld).
func TestFreshRetriedScriptsApplyOnce(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c, proxy := clienttest.Proxied(t, s, redis.Options{PoolSize: 1})
	name := redistest.Key(t)
	l := rlock.New(c, name, rlock.WithFencing())
	direct := s.Client(t)
	counter := keys.FenceCounter(name)

	// Load the scripts and open the pooled connection.
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	calls := func() int64 { return evalshaCalls(t, direct) }
	token := func() int64 {
		v, err := direct.Get(ctx, counter).Int64()
		require.NoError(t, err)
		return v
	}

	// A counter above the server's clock in microseconds, so that each
	// token is the one before plus one and a second INCR shows.
	require.NoError(t, direct.Set(ctx, counter, int64(8e15), 0).Err())
	before, tokens := calls(), token()
	proxy.DropNextReply()
	require.NoError(t, l.Lock(ctx))
	require.Equal(t, 1, proxy.Dropped(), "the acquisition's reply was not dropped")
	assert.Equal(t, before+2, calls(), "the acquisition should have run twice on the server")
	_, count := onlyField(t, direct, name)
	assert.Equal(t, "1", count)
	assert.Equal(t, tokens+1, token(), "the re-sent acquisition took a second fencing token")
	assert.Equal(t, tokens+1, l.FencingToken(), "the re-sent acquisition answered another token")

	proxy.DropNextReply()
	require.NoError(t, l.Unlock(ctx), "a re-sent release must report success, not not-held")
	require.Equal(t, 2, proxy.Dropped())
	assert.Zero(t, direct.Exists(ctx, name).Val(), "the lock is free")
	assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld)

	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, tokens+2, l.FencingToken())
	require.NoError(t, l.Unlock(ctx))
}

// A hold lost without a release (its lease ran out, it was force-unlocked)
// makes Unlock return ErrNotHeld and change nothing; a copy of its
// acquisition delivered afterwards does not take the lock again.
func TestFreshUnlockOfLostHold(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	wrapped := s.Client(t)
	rec := &redistest.Recorder{}
	wrapped.AddHook(rec)
	c := clienttest.New(t, wrapped)

	t.Run("lease ran out", func(t *testing.T) {
		// A lease shorter than the request lifetime: the acquisition
		// records itself, since the hold may end before its copies are
		// refused.
		name := redistest.Key(t)
		l := rlock.New(c, name, rlock.WithLease(300*time.Millisecond))
		rec.Reset()
		require.NoError(t, l.Lock(ctx))
		acquire := rec.Last()
		field, _ := onlyField(t, rdb, name)
		assert.Equal(t, "1:0", rdb.Get(ctx, keys.Request(name, field)).Val(), "a short lease's acquisition records itself")
		<-l.Done()
		assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
		redistest.Eventually(t, 5*time.Second, "the lease ends in Redis", func() error {
			if rdb.Exists(ctx, name).Val() != 0 {
				return assert.AnError
			}
			return nil
		})
		res, err := rdb.Do(ctx, acquire...).Int64Slice()
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 1, 0}, res, "a copy finds the record")
		assert.Zero(t, rdb.Exists(ctx, name).Val(), "a copy of the acquisition took the lock again")
		assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld)
		assert.Zero(t, rdb.Exists(ctx, name).Val())
	})

	t.Run("force-unlocked", func(t *testing.T) {
		name := redistest.Key(t)
		l := rlock.New(c, name)
		rec.Reset()
		require.NoError(t, l.Lock(ctx))
		acquire := rec.Last()
		field, _ := onlyField(t, rdb, name)
		existed, err := rlock.New(clienttest.New(t, s.Client(t)), name).ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, existed)
		mark := keys.Request(name, field)
		assert.Equal(t, "cancelled", rdb.Get(ctx, mark).Val(), "the force unlock marks the fresh hold")
		assert.Greater(t, rdb.PTTL(ctx, mark).Val(), 5*time.Minute-time.Minute)

		res, err := rdb.Do(ctx, acquire...).Int64Slice()
		require.NoError(t, err)
		assert.Equal(t, []int64{0, -3}, res)
		assert.Zero(t, rdb.Exists(ctx, name).Val(), "a copy of the acquisition took the lock again")
		assert.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld)
		assert.Zero(t, rdb.Exists(ctx, name).Val())
		assert.Equal(t, "cancelled", rdb.Get(ctx, mark).Val(), "a not-held release changed the mark")
	})
}

// A copy of a fresh acquisition that arrives while its hold lasts answers
// "acquired" and changes nothing; a copy of a release that arrives after the
// next hold was taken leaves that hold alone.
func TestFreshCopiesWhileHeld(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	wrapped := s.Client(t)
	rec := &redistest.Recorder{}
	wrapped.AddHook(rec)
	name := redistest.Key(t)
	l := rlock.New(clienttest.New(t, wrapped), name, rlock.WithLease(time.Minute))

	rec.Reset()
	require.NoError(t, l.Lock(ctx))
	acquire := rec.Last()
	field, _ := onlyField(t, rdb, name)
	require.NoError(t, rdb.PExpire(ctx, name, 40*time.Second).Err())
	res, err := rdb.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 1, 0}, res, "a re-sent acquisition answers as the first")
	got, count := onlyField(t, rdb, name)
	assert.Equal(t, field, got)
	assert.Equal(t, "1", count)
	assert.Less(t, rdb.PTTL(ctx, name).Val(), 41*time.Second, "a copy of the acquisition set the lease again")

	rec.Reset()
	require.NoError(t, l.Unlock(ctx))
	release := rec.Last()
	require.NoError(t, l.Lock(ctx))
	next, _ := onlyField(t, rdb, name)
	n, err := rdb.Do(ctx, release...).Int64()
	require.NoError(t, err)
	assert.Zero(t, n, "a re-sent release answers as the first")
	got, _ = onlyField(t, rdb, name)
	assert.Equal(t, next, got, "a copy of the previous release touched the next hold")
	require.NoError(t, l.Unlock(ctx))
}

// An acquisition whose reply never came (the network failed, ctx ended) is
// undone: whether it reached Redis before the undo or reaches it after, the
// lock ends up free and the acquisition marked cancelled.
func TestFreshUndo(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	// No replica acknowledgement: a primary without replicas has its
	// count read again every second in the background, and that read's
	// reply could be the one the proxy drops.
	c, proxy := clienttest.Proxied(t, s, redis.Options{PoolSize: 1, MaxRetries: -1, ContextTimeoutEnabled: true},
		redisync.WithReplicaSync(0, 0))
	l := rlock.New(c, redistest.Key(t, "warm"))
	require.NoError(t, l.Lock(ctx)) // load the scripts, open the connection
	require.NoError(t, l.Unlock(ctx))

	// cancelled waits until a request key of the lock name holds
	// "cancelled", and returns it.
	cancelled := func(t *testing.T, name string) string {
		var mark string
		redistest.Eventually(t, 10*time.Second, "the interrupted acquisition undone", func() error {
			ks, err := rdb.Keys(ctx, keys.Request(name, "*")).Result()
			if err != nil {
				return err
			}
			for _, k := range ks {
				if rdb.Get(ctx, k).Val() == "cancelled" {
					mark = k
					return nil
				}
			}
			return assert.AnError
		})
		return mark
	}

	t.Run("applied before the undo", func(t *testing.T) {
		name := redistest.Key(t)
		l := rlock.New(c, name)
		// The acquisition runs; its reply is lost.
		require.Error(t, proxy.LoseReplyOf(t, nil, func() error { return l.Lock(ctx) }, func() error { return l.Unlock(ctx) }))
		cancelled(t, name)
		assert.Zero(t, rdb.Exists(ctx, name).Val(), "the undone acquisition left the lock held")
		require.NoError(t, l.Lock(ctx), "the next Lock")
		require.NoError(t, l.Unlock(ctx))
	})

	t.Run("delivered after the undo", func(t *testing.T) {
		name := redistest.Key(t)
		l := rlock.New(c, name)
		proxy.Stall(time.Second) // the acquisition reaches Redis a second late
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := l.Lock(cctx)
		cancel()
		require.Error(t, err) // ctx's, or the read's timeout
		cancelled(t, name)    // the undo runs on a new connection, before the copy
		time.Sleep(1500 * time.Millisecond)
		assert.Zero(t, rdb.Exists(ctx, name).Val(), "the acquisition delivered after its undo took the lock")
		require.NoError(t, l.Lock(ctx), "the next Lock")
		require.NoError(t, l.Unlock(ctx))
	})
}

// Fresh holds also work on miniredis, the demo's embedded server
// (gopher-lua): lock, exclusion, unlock, the spin lock, force unlock.
func TestFreshOnMiniredis(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	for _, name := range []string{"lock", "a{b}c"} {
		l, other := rlock.New(c, name), rlock.New(c, name, rlock.WithFencing())
		require.NoError(t, l.Lock(ctx), name)
		ok, err := other.TryLock(ctx, 0)
		require.NoError(t, err, name)
		require.False(t, ok, "%s: another handle got a held lock", name)
		require.NoError(t, l.Unlock(ctx), name)
		require.False(t, mr.Exists(name), "%s: the lock is left after Unlock", name)
		require.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld, name)

		require.NoError(t, other.Lock(ctx), name)
		require.Positive(t, other.FencingToken(), name)
		existed, err := l.ForceUnlock(ctx)
		require.NoError(t, err, name)
		require.True(t, existed, name)
		require.ErrorIs(t, other.Unlock(ctx), redisync.ErrNotHeld, name)

		spin := rlock.NewSpin(c, name)
		require.NoError(t, spin.Lock(ctx), name)
		require.NoError(t, spin.Unlock(ctx), name)
		require.False(t, mr.Exists(name), name)
	}
}
