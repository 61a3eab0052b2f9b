package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// holdUp waits, as a copy of the recorded request held up in the network
// would, until the server's clock is past the request's deadline (the
// largest epoch-milliseconds argument) and its record's second more.
func holdUp(t *testing.T, rdb *redis.Client, args []any) {
	t.Helper()
	holdUpFor(t, rdb, args, 1100*time.Millisecond)
}

// holdUpFor waits until the server's clock is past the request's deadline
// and extra more.
func holdUpFor(t *testing.T, rdb *redis.Client, args []any, extra time.Duration) {
	t.Helper()
	var deadline int64
	for _, a := range args {
		if n, err := strconv.ParseInt(fmt.Sprint(a), 10, 64); err == nil && n > 1e12 && n > deadline {
			deadline = n
		}
	}
	require.NotZero(t, deadline, "no deadline among the request's arguments")
	for {
		now, err := rdb.Time(context.Background()).Result()
		require.NoError(t, err)
		left := time.Duration(deadline-now.UnixMilli())*time.Millisecond + extra
		if left <= 0 {
			return
		}
		time.Sleep(left) // the time a held-up copy spends in the network
	}
}

// quickClient returns a go-redis client on addr that gives up on a reply
// after 200ms and never re-sends (poolSize 0: go-redis's default pool).
func quickClient(t *testing.T, addr string, poolSize int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: poolSize,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// recordingClient returns a redisync client on s whose script calls are
// recorded, and the go-redis client to deliver copies with.
func recordingClient(t *testing.T, s *redistest.Server) (*redisync.Client, *redistest.Recorder, *redis.Client) {
	t.Helper()
	rdb := quickClient(t, s.Addr(), 0)
	rec := &redistest.Recorder{}
	rdb.AddHook(rec)
	return clienttest.New(t, rdb), rec, s.Client(t)
}

// Regression (issue 13): a copy of a release delivered after its request
// record expired was applied again: semaphore.Semaphore.Release(1) took the permits
// 3 → 4, then → 5 when the stalled copy arrived. Now a copy within the
// record's lifetime returns the record, and a later one is refused (for
// the counted semaphore: answered from the client's ledger).
func TestLateReleaseChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	c, rec, direct := recordingClient(t, s)
	sem := semaphore.New(c, redistest.Key(t, "sem"))
	_, err := sem.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))

	rec.Reset()
	require.NoError(t, sem.Release(ctx, 1))
	release := rec.Last()
	require.NotNil(t, release)
	available := func() int64 {
		n, err := sem.AvailablePermits(ctx)
		require.NoError(t, err)
		return n
	}
	require.EqualValues(t, 3, available())

	require.NoError(t, direct.Do(ctx, release...).Err(), "a copy within the record's lifetime")
	assert.EqualValues(t, 3, available(), "a copy within the record's lifetime changed the permits")

	// The counted semaphore keeps its requests' outcomes in the client's
	// ledger (lua/prelude_ledger.lua), not in a record that expires: a
	// copy past the deadline still finds it, and one after the client
	// moved on is stale. Neither changes anything.
	holdUp(t, direct, release)
	require.NoError(t, direct.Do(ctx, release...).Err(), "a copy past the deadline")
	assert.EqualValues(t, 3, available(), "a late copy changed the permits")
	require.NoError(t, sem.Acquire(ctx, 1)) // moves the client's low-water mark on
	require.NoError(t, direct.Do(ctx, release...).Err(), "a stale copy")
	assert.EqualValues(t, 2, available(), "a stale copy changed the permits")
}

// Regression (issue 13): a Lock whose first copy stalled returned through
// its retry; after the Unlock, the late copy took the lock again for an
// owner nobody knew of. Now the late copy is refused and the lock stays
// free.
func TestLateAcquisitionChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := redisync.WithOwner(context.Background())
	s := redistest.Shared(t)
	c, rec, direct := recordingClient(t, s)
	name := redistest.Key(t, "lock")
	l := rlock.New(c, name)

	rec.Reset()
	require.NoError(t, l.Lock(ctx))
	acquire := rec.Last()
	require.NotNil(t, acquire)
	require.NoError(t, l.Unlock(ctx))

	require.NoError(t, direct.Do(ctx, acquire...).Err(), "a copy within the record's lifetime")
	assert.Zero(t, direct.Exists(ctx, name).Val(), "a copy within the record's lifetime took the lock")

	holdUp(t, direct, acquire)
	err := direct.Do(ctx, acquire...).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REDISYNC_LATE")
	assert.Zero(t, direct.Exists(ctx, name).Val(), "a late copy took the lock")
}

// The same for a fresh hold (a Lock without a context owner, which keeps
// no record while it lasts): after the Unlock, a copy of the acquisition
// finds the release's mark, which outlives the acquisition's deadline, and
// once the mark is gone a copy is refused; a copy of the release delivered
// after the next hold was taken leaves that hold alone.
func TestLateFreshCopiesChangeNothing(t *testing.T) {
	t.Parallel()
	lateFreshCopies(t, "lock", 1, func(c *redisync.Client, name string) redisync.Locker { return rlock.New(c, name) })
}

// The same for a fresh write hold of a read-write lock (a Lock without a
// context owner), whose hash holds "mode" and the writer's field.
func TestLateFreshRWWriteCopiesChangeNothing(t *testing.T) {
	t.Parallel()
	lateFreshCopies(t, "rw", 2, func(c *redisync.Client, name string) redisync.Locker { return rwlock.New(c, name) })
}

// lateFreshCopies runs the late-copy checks of a fresh hold on the lock
// that open makes, whose hash has fields fields while a hold lasts.
func lateFreshCopies(t *testing.T, kind string, fields int, open func(*redisync.Client, string) redisync.Locker) {
	ctx := context.Background()
	s := redistest.Shared(t)
	c, rec, direct := recordingClient(t, s)
	name := redistest.Key(t, kind)
	l := open(c, name)

	rec.Reset()
	require.NoError(t, l.Lock(ctx))
	acquire := rec.Last()
	require.NotNil(t, acquire)
	require.NoError(t, l.Unlock(ctx))
	release := rec.Last()
	mark := fmt.Sprint(acquire[4]) // KEYS[2]: the hold's request key
	require.Equal(t, "released", direct.Get(ctx, mark).Val())

	res, err := direct.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err, "a copy within the deadline")
	assert.Equal(t, []int64{0, -3}, res)
	assert.Zero(t, direct.Exists(ctx, name).Val(), "a copy within the deadline took the lock")

	holdUpFor(t, direct, acquire, 100*time.Millisecond)
	res, err = direct.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err, "the mark outlives the acquisition's deadline")
	assert.Equal(t, []int64{0, -3}, res)
	assert.Zero(t, direct.Exists(ctx, name).Val(), "a copy past the deadline took the lock")

	require.NoError(t, l.Lock(ctx)) // the next hold, another owner
	next := direct.HGetAll(ctx, name).Val()
	require.Len(t, next, fields, "the next hold's hash: %v", next)
	n, err := direct.Do(ctx, release...).Int64()
	require.NoError(t, err)
	assert.Zero(t, n, "a copy of the release within its mark's life answers as the first")
	assert.Equal(t, next, direct.HGetAll(ctx, name).Val(), "a copy of the previous release touched the next hold")

	for direct.Exists(ctx, mark).Val() == 1 { // a copy held up even longer
		time.Sleep(time.Duration(max(direct.PTTL(ctx, mark).Val(), time.Millisecond)))
	}
	res, err = direct.Do(ctx, acquire...).Int64Slice()
	require.NoError(t, err)
	assert.EqualValues(t, 0, res[0], "a late copy took a held lock")
	n, err = direct.Do(ctx, release...).Int64()
	require.NoError(t, err)
	assert.EqualValues(t, -1, n, "a late release finds no hold of its owner")
	assert.Equal(t, next, direct.HGetAll(ctx, name).Val(), "a late copy touched the next hold")
	require.NoError(t, l.Unlock(ctx))

	err = direct.Do(ctx, acquire...).Err()
	require.Error(t, err, "a late copy on a free lock")
	assert.Contains(t, err.Error(), "REDISYNC_LATE")
	assert.Zero(t, direct.Exists(ctx, name).Val())
}

// Regression: request ids were "<client id>:<sequence number>", so two
// clients with the same id (WithID: a process restarted with a fixed id, or
// two clients of one process) gave their first requests the same request
// keys, and the second client's count-down found the first one's record
// and returned it instead of counting down. Request ids are now random per
// client.
func TestSameClientIDRequestsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "latch")
	_, err := countdown.New(clienttest.New(t, s.Client(t)), name).TrySetCount(ctx, 5)
	require.NoError(t, err)
	for range 2 {
		// One after the other: a second live client with the id would be
		// refused (ErrDuplicateID).
		c := redisync.New(s.Client(t), redisync.WithID("fixed-id"))
		require.NoError(t, countdown.New(c, name).CountDown(ctx)) // the client's first request
		require.NoError(t, c.Close())
	}
	n, err := countdown.New(clienttest.New(t, s.Client(t)), name).Count(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "the second client's count-down was not applied")
}

// Regression (chaos seed 13): an owner's release whose reply was lost was
// left to arrive whenever the network delivered it; the owner's next Lock
// took the lock again (its field was still there), and the late release
// then deleted that new hold while the client counted it held. Now the
// lost release is settled — marked cancelled in Redis — before the owner's
// next operation, and its late copy changes nothing.
func TestLateOwnerReleaseLeavesTheNextHold(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	// One connection: the stall holds the release on it, and every later
	// request goes through a new one.
	rdb := quickClient(t, p.Addr(), 1)
	c := clienttest.New(t, rdb)
	direct := s.Client(t)
	ctx := redisync.WithOwner(context.Background())
	name := redistest.Key(t, "lock")
	l := rlock.New(c, name)

	const stall = 3 * time.Second
	var stalledAt time.Time
	for i := 0; ; i++ {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, rdb.Ping(ctx).Err()) // the connection is idle in the pool
		stalledAt = time.Now()
		require.NotZero(t, p.Stall(stall))
		if l.Unlock(ctx) != nil {
			break // its reply cannot arrive during the stall
		}
		// A connection dialled meanwhile (the client's own background
		// requests) carried the release: again.
		require.Less(t, i, 5, "the release was never held by the stall")
		time.Sleep(time.Until(stalledAt.Add(stall)))
	}

	lctx, cancel := context.WithTimeout(ctx, stall/2)
	defer cancel()
	require.NoError(t, l.Lock(lctx), "the owner's next Lock")
	require.Less(t, time.Since(stalledAt), stall, "the next Lock returned after the stalled release was delivered: the test proves nothing")

	time.Sleep(time.Until(stalledAt.Add(stall + 500*time.Millisecond))) // the stalled release arrives
	require.NotZero(t, p.Held(), "no request was held by the stall")
	assert.Equal(t, int64(1), direct.Exists(ctx, name).Val(), "the late release deleted the owner's next hold")
	require.NoError(t, l.Unlock(ctx), "the owner's next hold")
	assert.Zero(t, direct.Exists(ctx, name).Val())
}

// Regression (chaos seed 13): a copy of an owner's write attempt, sent
// while the owner held no read hold and delivered after it took one, found
// that read hold, took it for one left by a failed release, deleted it and
// took the write lock, while the client counted a read hold and no write
// hold. Now the copy leaves the read hold alone and is refused.
func TestLateWriteAttemptLeavesTheOwnersReadHold(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	c, rec, direct := recordingClient(t, s)
	name := redistest.Key(t, "rw")
	other := redisync.WithOwner(context.Background())
	owner := redisync.WithOwner(context.Background())
	rw := rwlock.New(c, name)

	require.NoError(t, rw.RLock(other))
	rec.Reset()
	ok, err := rw.TryLock(owner, 0)
	require.NoError(t, err)
	require.False(t, ok, "the write side while another owner reads")
	attempt := rec.Last()
	require.NotNil(t, attempt)
	require.NoError(t, rw.RUnlock(other))
	require.NoError(t, rw.RLock(owner))
	before := direct.HGetAll(context.Background(), name).Val()

	require.NoError(t, direct.Do(context.Background(), attempt...).Err(), "a copy of the write attempt within its deadline")
	assert.Equal(t, before, direct.HGetAll(context.Background(), name).Val(), "the copy changed the lock")
	n, err := rw.ReadHoldCount(owner)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	require.NoError(t, rw.RUnlock(owner), "the owner's read hold")
	assert.Zero(t, direct.Exists(context.Background(), name).Val())
}
