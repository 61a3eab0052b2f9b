package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// replicated starts a primary and n replicas of it, and returns them once
// every replica's link is up.
func replicated(t *testing.T, n int) (*redistest.Server, []*redistest.Server) {
	t.Helper()
	primary := redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replicas := make([]*redistest.Server, n)
	for i := range replicas {
		replicas[i] = redistest.Start(t)
		replicas[i].Do(t, "REPLICAOF", host, port)
	}
	redistest.Eventually(t, 20*time.Second, "replicas connected", func() error {
		if got := connectedReplicas(t, primary); got != n {
			return fmt.Errorf("%d replicas connected, want %d", got, n)
		}
		return nil
	})
	return primary, replicas
}

// replicatedThroughProxy starts a primary and one replica of it that
// replicates through a proxy (link: cut it, stall it), both with args,
// and returns them once the replica's link is up.
func replicatedThroughProxy(t *testing.T, args ...string) (primary *redistest.Server, link *redistest.Proxy, replica *redistest.Server) {
	t.Helper()
	primary = redistest.Start(t, redistest.WithArgs(append([]string{"--repl-diskless-sync-delay", "0"}, args...)...))
	link = redistest.NewProxy(t, primary.Addr())
	replica = redistest.Start(t, redistest.WithArgs(args...))
	host, port, _ := strings.Cut(link.Addr(), ":")
	replica.Do(t, "REPLICAOF", host, port)
	redistest.Eventually(t, 20*time.Second, "replica connected through the proxy", func() error {
		if got := connectedReplicas(t, primary); got != 1 {
			return fmt.Errorf("%d replicas connected", got)
		}
		return nil
	})
	return primary, link, replica
}

// connectedReplicas counts the online replicas in s's INFO replication.
func connectedReplicas(t *testing.T, s *redistest.Server) int {
	t.Helper()
	return strings.Count(fmt.Sprint(s.Do(t, "INFO", "replication")), "state=online")
}

// waitCalls returns how many WAIT commands s has run.
func waitCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	info := fmt.Sprint(s.Do(t, "INFO", "commandstats"))
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			n, _ := strconv.Atoi(v[:strings.IndexByte(v, ',')])
			return n
		}
	}
	return 0
}

// With a replica connected, every acquisition and release waits for it in
// the same round trip (WAIT on the primary); a primary without replicas is
// sent nothing extra.
func TestReplicaSyncWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t))
	l := rlock.New(c, "lock")
	rw := rwlock.New(c, "rw")
	s := semaphore.New(c, "sem")
	es := semaphore.NewExpirable(c, "esem")
	require.NoError(t, es.SetPermits(ctx, 2))
	round := func() {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, rw.RUnlock(ctx))
		require.NoError(t, s.Release(ctx, 2))
		require.NoError(t, s.Acquire(ctx, 1))
		id, err := es.Acquire(ctx, time.Minute)
		require.NoError(t, err)
		require.NoError(t, es.Release(ctx, id))
	}
	round() // loads the scripts: a NOSCRIPT reply makes a second WAIT
	before := waitCalls(t, primary)
	round()
	assert.Equal(t, 8, waitCalls(t, primary)-before, "WAITs: lock, rwlock, semaphore and expirable semaphore: each acquisition and release")
	// What the primary acknowledged, the replica has.
	assert.Equal(t, "2", fmt.Sprint(replicas[0].Do(t, "GET", "sem")), "the replica's semaphore")

	single := redistest.Start(t)
	c1 := clienttest.New(t, single.Client(t))
	l1 := rlock.New(c1, "lock")
	require.NoError(t, l1.Lock(ctx))
	require.NoError(t, l1.Unlock(ctx))
	assert.Zero(t, waitCalls(t, single), "WAITs sent to a primary without replicas")
}

// A replica that does not acknowledge (paused) makes an acquisition fail
// with ErrNotReplicated after the timeout, and leaves nothing held on the
// primary; a release still takes effect on the primary, and says it was
// not acknowledged.
func TestReplicaSyncNotAcknowledged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	direct := primary.Client(t)
	// The default timeout (1 s): a loaded machine can take a few hundred
	// milliseconds for an acknowledgement that does come.
	c := clienttest.New(t, primary.Client(t))
	l := rlock.New(c, "lock")
	require.NoError(t, l.Lock(ctx), "lock with the replica acknowledging")
	s := semaphore.New(c, "sem")
	require.NoError(t, s.Release(ctx, 3))
	es := semaphore.NewExpirable(c, "esem")
	require.NoError(t, es.SetPermits(ctx, 3))

	replicas[0].Pause(t)
	defer replicas[0].Resume(t)
	err := l.Unlock(ctx)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "release not acknowledged")
	// Issue 34: the error says the release took effect and is not to be
	// retried.
	require.ErrorContains(t, err, "released on the primary, so it took effect and must not be retried")
	assert.Zero(t, direct.Exists(ctx, "lock").Val(), "the release took effect on the primary")
	err = s.Release(ctx, 1)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "semaphore release not acknowledged")
	// A failover would lose it and its permit for good: it is re-sent,
	// exactly once, until acknowledged (issue 38).
	require.ErrorContains(t, err, "released on the primary but not acknowledged by its replicas in time; it is re-sent in the background until they do")
	assert.Equal(t, "4", direct.Get(ctx, "sem").Val(), "the semaphore's release on the primary")

	err = l.Lock(ctx)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "lock")
	assert.Zero(t, direct.Exists(ctx, "lock").Val(), "the lock left on the primary")
	owner := redisync.WithOwner(ctx)
	require.ErrorIs(t, l.Lock(owner), redisync.ErrNotReplicated, "lock by a context owner")
	assert.Zero(t, direct.Exists(ctx, "lock").Val(), "the owner's lock left on the primary")
	held, err := l.IsHeld(owner)
	require.NoError(t, err)
	assert.False(t, held)

	// A semaphore's undo is done only once the replicas acknowledge it, and
	// is re-sent in the background until they do; with the replica paused,
	// those re-sends (and the release's above) each wait the second of
	// their WAIT in a batch of their own, and the next undo is sent beside
	// them (the pipeline's small batches in flight, issue 38): it has run
	// on the primary when its caller's error returns.
	require.ErrorIs(t, s.Acquire(ctx, 2), redisync.ErrNotReplicated, "semaphore")
	assert.Equal(t, "4", direct.Get(ctx, "sem").Val(), "the semaphore's acquisition undone on the primary")
	_, err = es.Acquire(ctx, 0)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "expirable semaphore")
	assert.Equal(t, "3", direct.Get(ctx, "esem").Val(), "the expirable semaphore's acquisition undone on the primary")
	assert.Zero(t, direct.ZCard(ctx, "{esem}:timeout").Val(), "permits acquired on the primary")

	replicas[0].Resume(t)
	require.NoError(t, l.Lock(ctx), "lock once the replica acknowledges again")
	require.NoError(t, l.Unlock(ctx))
}

// Asking for more replicas than are connected waits for the timeout and
// fails the acquisition cleanly.
func TestReplicaSyncMoreThanConnected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, _ := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(2, 100*time.Millisecond))
	l := rlock.New(c, "lock")
	start := time.Now()
	require.ErrorIs(t, l.Lock(ctx), redisync.ErrNotReplicated)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "waited for the timeout")
	assert.Zero(t, primary.Client(t).Exists(ctx, "lock").Val(), "the lock left on the primary")

	off := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(0, 0))
	before := waitCalls(t, primary)
	require.NoError(t, rlock.New(off, "lock").Lock(ctx))
	assert.Equal(t, before, waitCalls(t, primary), "WAITs with acknowledgement off")
}

// The first acquisition of a client on a primary with a replica is
// acknowledged like every other: its count is read before its batch, so
// that the batch ends with WAIT (a first batch that waited for no replica
// could be lost by a failover right after it returned).
func TestReplicaSyncFirstAcquisitionAcknowledged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, _ := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t))
	before := waitCalls(t, primary)
	l := rlock.New(c, "lock")
	require.NoError(t, l.Lock(ctx))
	assert.Greater(t, waitCalls(t, primary), before, "the client's first acquisition sent no WAIT")
	require.NoError(t, l.Unlock(ctx))
}

// Bad replica sync settings are invalid arguments, reported before
// anything is sent.
func TestReplicaSyncInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // nothing listens: nothing may be sent
	t.Cleanup(func() { _ = rdb.Close() })
	for _, o := range []redisync.Option{
		redisync.WithReplicaSync(-2, time.Second),
		redisync.WithReplicaSync(1, -time.Second),
		redisync.WithReplicaSync(1, 0),
		redisync.WithReplicaSync(0, time.Second),
		redisync.WithReplicaSync(1, time.Microsecond),
	} {
		c := clienttest.New(t, rdb, o)
		require.ErrorIs(t, rlock.New(c, "lock").Lock(ctx), redisync.ErrInvalidArgument)
	}
}

// Renewals wait for the replicas in the background, through the script
// pipeline; one the replicas did not acknowledge extends nothing
// (Stats.RenewalsNotReplicated), and a hold whose acknowledged lease runs
// out ends as lost, its cause wrapping ErrNotReplicated (issue 38, item 1).
func TestReplicaSyncRenewals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t), redisync.WithWatchdogTimeout(3*time.Second))
	l := rlock.New(c, "lock")
	require.NoError(t, l.Lock(ctx))
	redistest.Eventually(t, 10*time.Second, "renewals", func() error {
		if c.Stats().Renewals < 2 {
			return fmt.Errorf("%d renewals: %+v %+v", c.Stats().Renewals, c.Stats(), (*core.Client)(c).Holds().Stats())
		}
		return nil
	})
	assert.Zero(t, c.Stats().RenewalsNotReplicated, "renewals not acknowledged while the replica answers")
	require.NoError(t, l.Err(), "acknowledged renewals keep the hold")

	replicas[0].Pause(t) // longer than the lease: no renewal is acknowledged
	defer replicas[0].Resume(t)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the hold outlived its acknowledged lease")
	}
	require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	require.ErrorIs(t, l.Err(), redisync.ErrNotReplicated)
	assert.Positive(t, c.Stats().RenewalsNotReplicated)
	assert.Equal(t, uint64(1), c.Stats().HoldsLostUnreplicated)
	require.ErrorIs(t, l.Unlock(ctx), redisync.ErrNotHeld, "Unlock reports the loss")
}

// A latch's count is believed only once the replicas have every change it
// saw: a count-down that took effect on the primary alone (its replica
// stopped, as an old primary cut off in a split brain) is not read back
// as if it were safe, and a latch opened so is not read open. Before, the
// read was judged by the replicas the primary lists (a stopped or
// promoted-away replica stays listed until repl-timeout), and a latch
// wait returned on a count no replica had (the netns fault suite, seed 1).
func TestReplicaSyncLatchReadsWhatTheReplicasHave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	direct := primary.Client(t)
	// A second, not less: the first writes follow the replica's full
	// sync, and with the whole suite running on 2 cores 300 ms was once
	// too short for its acknowledgement.
	c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(1, time.Second))
	l := countdown.New(c, "latch")
	ok, err := l.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := l.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	replicas[0].Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			replicas[0].Resume(t)
		}
	}()
	require.ErrorIs(t, l.CountDown(ctx), redisync.ErrNotReplicated, "a count-down on the primary alone")
	assert.Zero(t, direct.Exists(ctx, "latch").Val(), "the latch open on the primary")
	_, err = l.Count(ctx)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "the count read: the replica has not the count-down")
	open, err := l.TryWait(ctx, 0)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "a wait's check")
	assert.False(t, open)

	replicas[0].Resume(t)
	resumed = true
	redistest.Eventually(t, 10*time.Second, "read once the replica has it", func() error {
		n, err := l.Count(ctx)
		if err == nil && n != 0 {
			return fmt.Errorf("count %d", n)
		}
		return err
	})
	require.NoError(t, l.Wait(ctx))
}

// Regression: a latch's Inspect, documented as only reading, went through
// Count, which with replica acknowledgement on writes the client's fence
// key and sends WAIT. Inspect now sends one GET: nothing written, nothing
// waited for, a snapshot as the other Inspects are (Count still reads as
// a write, acknowledged).
func TestLatchInspectOnlyReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, _ := replicated(t, 1)
	rdb := primary.Client(t)
	rec := &redistest.Recorder{}
	rdb.AddHook(rec)
	c := clienttest.New(t, rdb, redisync.WithReplicaSync(1, time.Second))
	l := countdown.New(c, "latch")
	ok, err := l.TrySetCount(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = l.Count(ctx) // the client knows its replica count
	require.NoError(t, err)
	rec.Reset()
	dirty := func() string {
		for _, line := range strings.Split(primary.Client(t).Info(ctx, "persistence").Val(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rdb_changes_since_last_save:"); ok {
				return v
			}
		}
		return ""
	}
	before := dirty()
	info, err := l.Inspect(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 3, info.Count)
	assert.Equal(t, [][]string{{"get"}}, rec.Trips(), "Inspect: one GET")
	assert.Equal(t, before, dirty(), "Inspect wrote nothing")

	rec.Reset()
	_, err = l.Count(ctx)
	require.NoError(t, err)
	trips := fmt.Sprint(rec.Trips())
	assert.Contains(t, trips, "wait", "Count is acknowledged by the replica")
}

// The rate limiters' grants wait for the replicas too: a grant only the
// primary has would be lost in a failover, and the old primary of a split
// brain would grant beside the promoted one, admitting more than the
// limit. Not acknowledged, a Limiter's acquisition is undone and a GCRA's
// take is not believed (what it took stays taken: it only limits more).
func TestReplicaSyncRateLimiters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t))
	l := ratelimit.New(c, "limiter")
	ok, err := l.TrySetRate(ctx, ratelimit.Overall, 5, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok, "granted with the replica acknowledging")
	g := ratelimit.NewGCRA(c, "gcra", ratelimit.Limit{Rate: 5, Period: time.Minute, Burst: 5})
	allowed, err := g.Allow(ctx)
	require.NoError(t, err)
	require.True(t, allowed)

	replicas[0].Pause(t)
	defer replicas[0].Resume(t)
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "a grant the replica did not acknowledge")
	require.False(t, ok)
	left, err := l.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), left, "the unacknowledged grant undone on the primary")
	allowed, err = g.Allow(ctx)
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "an Allow the replica did not acknowledge")
	require.False(t, allowed)
	require.ErrorIs(t, l.SetRate(ctx, ratelimit.Overall, 1, time.Minute), redisync.ErrNotReplicated,
		"a rate the replica did not acknowledge")

	replicas[0].Resume(t)
	ok, err = l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok, "granted once the replica acknowledges again")
}

// A fenced write counts only once the replicas have it: a failover that
// lost it would lose its token too, and let a staler holder write after.
func TestReplicaSyncFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t))
	v := fence.New(c, "fenced")
	ok, err := v.Set(ctx, 5, "a")
	require.NoError(t, err)
	require.True(t, ok)

	replicas[0].Pause(t)
	defer replicas[0].Resume(t)
	ok, err = v.Set(ctx, 6, "b")
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "a write the replica did not acknowledge")
	require.False(t, ok)

	replicas[0].Resume(t)
	ok, err = v.Set(ctx, 6, "b")
	require.NoError(t, err, "the same token again, once the replica acknowledges")
	require.True(t, ok)
	got, token, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", got)
	assert.Equal(t, int64(6), token)
}
