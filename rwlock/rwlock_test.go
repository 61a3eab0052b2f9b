package rwlock_test

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
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rwlock"
)

func TestHoldCounts(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy needs a context owner
	rw := newRW(t, c)

	read := func(want int64) {
		t.Helper()
		n, err := rw.ReadHoldCount(ctx)
		require.NoError(t, err, "ReadHoldCount")
		require.Equal(t, int64(want), n, "ReadHoldCount")
	}
	write := func(want int64) {
		t.Helper()
		n, err := rw.WriteHoldCount(ctx)
		require.NoError(t, err, "WriteHoldCount")
		require.Equal(t, int64(want), n, "WriteHoldCount")
	}

	// Read side: 0, 1, 0, 2, 1, 0.
	read(0)
	require.NoError(t, rw.RLock(ctx))
	read(1)
	require.NoError(t, rw.RUnlock(ctx))
	read(0)
	require.NoError(t, rw.RLock(ctx))
	ok, err := rw.TryRLock(ctx, 0)
	require.NoError(t, err, "reentrant TryRLock")
	require.True(t, ok, "reentrant TryRLock")
	read(2)
	require.NoError(t, rw.RUnlock(ctx))
	read(1)
	require.NoError(t, rw.RUnlock(ctx))
	read(0)
	require.ErrorIs(t, rw.RUnlock(ctx), redisync.ErrNotHeld, "extra RUnlock")

	// Write side: 0, 1, 0, 2, 1, 0.
	write(0)
	require.NoError(t, rw.Lock(ctx))
	write(1)
	require.NoError(t, rw.Unlock(ctx))
	write(0)
	require.NoError(t, rw.Lock(ctx))
	ok, err = rw.TryLock(ctx, 0)
	require.NoError(t, err, "reentrant TryLock")
	require.True(t, ok, "reentrant TryLock")
	write(2)
	require.NoError(t, rw.Unlock(ctx))
	write(1)
	require.NoError(t, rw.Unlock(ctx))
	write(0)
	require.ErrorIs(t, rw.Unlock(ctx), redisync.ErrNotHeld, "extra Unlock")

	n, err := c.Redis().Exists(ctx, rw.Name()).Result()
	require.NoError(t, err, "EXISTS after the last release")
	require.Equal(t, int64(0), n, "EXISTS after the last release")
}

// TestLayout checks the keys, fields, TTLs and messages Redisson reads and
// writes.
func TestLayout(t *testing.T) {
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(3*time.Second))
	ctx, me := ownerCtx(t, c)
	rdb := c.Redis()
	rw := newRW(t, c)
	name := rw.Name()

	sub := rdb.Subscribe(ctx, "redisson_rwlock:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	msg := func(want string) {
		t.Helper()
		select {
		case m := <-sub.Channel():
			require.Equal(t, want, m.Payload, "message")
		case <-time.After(5 * time.Second):
			require.FailNowf(t, "no message", "no message %q", want)
		}
	}
	noMsg := func() {
		t.Helper()
		select {
		case m := <-sub.Channel():
			require.FailNowf(t, "unexpected message", "unexpected message %q", m.Payload)
		case <-time.After(100 * time.Millisecond):
		}
	}
	hash := func(want map[string]string) {
		t.Helper()
		got, err := rdb.HGetAll(ctx, name).Result()
		require.NoError(t, err)
		require.Equal(t, want, got, "hash")
	}
	pttl := func(key string, lo, hi time.Duration) {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		require.GreaterOrEqual(t, d, lo, "PTTL %s", key)
		require.LessOrEqual(t, d, hi, "PTTL %s", key)
	}
	timeout := func(n int) string { return "{" + name + "}:" + me + ":rwlock_timeout:" + string(rune('0'+n)) }

	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RLock(ctx))
	hash(map[string]string{"mode": "read", me: "2"})
	pttl(timeout(1), time.Second, 3*time.Second)
	pttl(timeout(2), time.Second, 3*time.Second)
	pttl(name, time.Second, 3*time.Second)
	require.Equal(t, timeout(2), keys.RWTimeoutKey(name, me, 2), "RWTimeoutKey")

	require.NoError(t, rw.RUnlock(ctx))
	hash(map[string]string{"mode": "read", me: "1"})
	require.Zero(t, rdb.Exists(ctx, timeout(2)).Val(), "the released hold's timeout key is still there")
	noMsg()
	require.NoError(t, rw.RUnlock(ctx))
	msg("0") // the last read release frees the lock
	require.Zero(t, rdb.Exists(ctx, name, timeout(1)).Val(), "keys left after the last read release")

	require.NoError(t, rw.Lock(ctx))
	require.NoError(t, rw.Lock(ctx))
	hash(map[string]string{"mode": "write", me + ":write": "2"})
	pttl(name, time.Second, 3*time.Second)
	require.NoError(t, rw.Unlock(ctx))
	noMsg()
	require.NoError(t, rw.Unlock(ctx))
	msg("1")
	require.Zero(t, rdb.Exists(ctx, name).Val(), "the hash is still there after the write release")

	// Downgrade: the write release publishes "1" and leaves mode read.
	require.NoError(t, rw.Lock(ctx))
	require.NoError(t, rw.RLock(ctx))
	hash(map[string]string{"mode": "write", me + ":write": "1", me: "1"})
	require.NoError(t, rw.Unlock(ctx))
	msg("1")
	hash(map[string]string{"mode": "read", me: "1"})
	pttl(name, time.Second, 3*time.Second)
	require.NoError(t, rw.RUnlock(ctx))
	msg("0")
}

func TestReadersShareWritersExclude(t *testing.T) {
	c1, c2 := clienttest.Shared(t), clienttest.Shared(t)
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c1, name), rwlock.New(c2, name)

	require.NoError(t, a.RLock(ctx))
	ok, err := b.TryRLock(ctx, 0)
	require.NoError(t, err, "second reader")
	require.True(t, ok, "second reader")
	ok, err = b.IsReadLocked(ctx)
	require.NoError(t, err, "IsReadLocked")
	require.True(t, ok, "IsReadLocked")
	ok, err = b.IsWriteLocked(ctx)
	require.NoError(t, err, "IsWriteLocked")
	require.False(t, ok, "IsWriteLocked")
	w := rwlock.New(c2, name)
	ok, err = w.TryLock(ctx, 100*time.Millisecond)
	require.NoError(t, err, "writer while read-locked")
	require.False(t, ok, "writer while read-locked")
	require.NoError(t, a.RUnlock(ctx))
	ok, err = w.TryLock(ctx, 0)
	require.NoError(t, err, "writer while one reader is left")
	require.False(t, ok, "writer while one reader is left")
	require.NoError(t, b.RUnlock(ctx))

	ok, err = w.TryLock(ctx, 0)
	require.NoError(t, err, "writer on a free lock")
	require.True(t, ok, "writer on a free lock")
	ok, err = a.TryRLock(ctx, 100*time.Millisecond)
	require.NoError(t, err, "reader while write-locked")
	require.False(t, ok, "reader while write-locked")
	ok, err = a.TryLock(ctx, 0)
	require.NoError(t, err, "second writer")
	require.False(t, ok, "second writer")
	ok, err = a.IsWriteLocked(ctx)
	require.NoError(t, err, "IsWriteLocked")
	require.True(t, ok, "IsWriteLocked")
	ok, err = a.IsReadLocked(ctx)
	require.NoError(t, err, "IsReadLocked")
	require.False(t, ok, "IsReadLocked")
	require.NoError(t, w.Unlock(ctx))
	ok, err = a.IsWriteLocked(ctx)
	require.NoError(t, err, "IsWriteLocked after release")
	require.False(t, ok, "IsWriteLocked after release")
}

// TestWriterWaitsForReaders checks the "0" path: the last read release wakes
// a waiting writer of another client at once.
func TestWriterWaitsForReaders(t *testing.T) {
	c1 := clienttest.Shared(t)
	c2 := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	r1, r2, w := rwlock.New(c1, name), rwlock.New(c1, name), rwlock.New(c2, name)
	require.NoError(t, r1.RLock(ctx))
	require.NoError(t, r2.RLock(ctx))

	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, w.Lock(ctx))
		got <- time.Now()
	}()
	clienttest.WaitWaiters(t, 1, c2)
	require.NoError(t, r1.RUnlock(ctx))
	require.Never(t, func() bool { return len(got) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"the writer got in while a reader held the lock")
	released := time.Now()
	require.NoError(t, r2.RUnlock(ctx))
	require.LessOrEqual(t, (<-got).Sub(released), 2*time.Second, "writer got in after the last read release")
	require.NoError(t, w.Unlock(ctx))
}

func TestDowngrade(t *testing.T) {
	c := clienttest.Shared(t)
	// The other client's fallback re-check is a minute and the lease 30s:
	// only the "1" published by the write release can let its readers in.
	other := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	ctx := testCtx(t)
	rw := newRW(t, c)
	octx := redisync.WithOwner(ctx) // downgrade concerns context owners

	require.NoError(t, rw.Lock(octx))
	require.NoError(t, rw.RLock(octx)) // the writer may read
	n, err := rw.ReadHoldCount(octx)
	require.NoError(t, err, "ReadHoldCount")
	require.Equal(t, int64(1), n, "ReadHoldCount")
	n, err = rw.WriteHoldCount(octx)
	require.NoError(t, err, "WriteHoldCount")
	require.Equal(t, int64(1), n, "WriteHoldCount")
	require.NoError(t, rw.Lock(octx)) // and re-enter the write side while reading
	require.NoError(t, rw.Unlock(octx))

	const readers = 3
	var wg sync.WaitGroup
	got := make(chan time.Time, readers)
	handles := make([]*rwlock.RWLock, readers)
	for i := range handles {
		handles[i] = rwlock.New(other, rw.Name())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !assert.NoError(t, handles[i].RLock(ctx)) {
				return
			}
			got <- time.Now()
		}()
	}
	clienttest.WaitWaiters(t, readers, other)

	released := time.Now()
	require.NoError(t, rw.Unlock(octx)) // downgrade: keeps the read hold
	wg.Wait()
	close(got)
	for at := range got {
		require.LessOrEqual(t, at.Sub(released), 2*time.Second, "a reader got in after the downgrade")
	}
	ok, err := rw.IsReadLocked(ctx)
	require.NoError(t, err, "IsReadLocked after downgrade")
	require.True(t, ok, "IsReadLocked after downgrade")
	n, err = rw.ReadHoldCount(octx)
	require.NoError(t, err, "ReadHoldCount after downgrade")
	require.Equal(t, int64(1), n, "ReadHoldCount after downgrade")
	n, err = rw.WriteHoldCount(octx)
	require.NoError(t, err, "WriteHoldCount after downgrade")
	require.Equal(t, int64(0), n, "WriteHoldCount after downgrade")
	// The latest acquisition was the re-entered write side, now released.
	require.ErrorIs(t, rw.Err(), redisync.ErrNotHeld, "Err after the write release")
	require.NoError(t, rw.RLock(octx))
	require.NoError(t, rw.Err(), "Err while the read hold (now the latest) lasts")
	require.NoError(t, rw.RUnlock(octx))

	// Still read-locked by the downgraded owner: no writer gets in.
	ok, err = rwlock.New(other, rw.Name()).TryLock(ctx, 0)
	require.NoError(t, err, "writer after downgrade")
	require.False(t, ok, "writer after downgrade")
	require.NoError(t, rw.RUnlock(octx))
	for _, h := range handles {
		require.NoError(t, h.RUnlock(ctx))
	}
	n, err = c.Redis().Exists(ctx, rw.Name()).Result()
	require.NoError(t, err, "EXISTS")
	require.Equal(t, int64(0), n, "EXISTS")
}

func TestUpgradeRefused(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := testCtx(t)
	rw := newRW(t, c)
	octx := redisync.WithOwner(ctx) // ErrUpgrade concerns context owners
	require.NoError(t, rw.RLock(octx))
	before := snapshot(t, c.Redis(), rw.Name())

	start := time.Now()
	require.ErrorIs(t, rw.Lock(octx), redisync.ErrUpgrade, "Lock by a reader")
	ok, err := rw.TryLock(octx, 10*time.Second)
	require.ErrorIs(t, err, redisync.ErrUpgrade, "TryLock by a reader")
	require.False(t, ok, "TryLock by a reader succeeded")
	require.LessOrEqual(t, time.Since(start), 2*time.Second, "ErrUpgrade took too long")
	require.Equal(t, before, snapshot(t, c.Redis(), rw.Name()), "the refused upgrade changed the lock")
	clienttest.NoSubscriptions(t, c)
	require.ErrorIs(t, rw.Unlock(octx), redisync.ErrNotHeld, "Unlock by a reader")
	require.NoError(t, rw.RUnlock(octx))

	// Another reader does not make this owner's Lock an upgrade: it waits.
	other := rwlock.New(c, rw.Name())
	require.NoError(t, other.RLock(ctx))
	ok, err = rw.TryLock(octx, 50*time.Millisecond)
	require.NoError(t, err, "writer while another owner reads")
	require.False(t, ok, "writer while another owner reads")
	require.NoError(t, other.RUnlock(ctx))
}

// TestReadersWakeTogether: 20 readers on 3 clients blocked behind a writer
// all get in within a second of the write release.
func TestReadersWakeTogether(t *testing.T) {
	cw := clienttest.Shared(t)
	var clients []*redisync.Client
	for range 3 {
		// No fallback can help within the test: a minute's re-check cap, and
		// the writer's lease (the 30s watchdog timeout) as the retry hint.
		clients = append(clients, clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute)))
	}
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	w := rwlock.New(cw, name)
	require.NoError(t, w.Lock(ctx))

	const readers = 20
	got := make(chan time.Time, readers)
	var wg sync.WaitGroup
	var handles []*rwlock.RWLock
	for i := range readers {
		r := rwlock.New(clients[i%len(clients)], name)
		handles = append(handles, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !assert.NoError(t, r.RLock(ctx)) {
				return
			}
			got <- time.Now()
		}()
	}
	clienttest.WaitWaiters(t, readers, clients...)
	released := time.Now()
	require.NoError(t, w.Unlock(ctx))
	wg.Wait()
	close(got)
	var last time.Duration
	for at := range got {
		last = max(last, at.Sub(released))
	}
	t.Logf("all %d readers in %v after the write release", readers, last)
	require.LessOrEqual(t, last, time.Second, "the last reader got in too long after the write release")
	for _, r := range handles {
		require.NoError(t, r.RUnlock(ctx))
	}
	for _, c := range clients {
		clienttest.NoSubscriptions(t, c)
	}
}

// TestZombieReader: a reader whose client closed without RUnlock stops
// blocking writers one lease after its last renewal.
func TestZombieReader(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		zc := redisync.New(redistest.Shared(t).Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
		c := clienttest.Shared(t)
		ctx := testCtx(t)
		name := redistest.Key(t, "rw")
		require.NoError(t, rwlock.New(zc, name).RLock(ctx))
		require.NoError(t, zc.Close()) // no RUnlock: the watchdog stops, the keys stay

		w := rwlock.New(c, name)
		ok, err := w.TryLock(ctx, 0)
		require.NoError(t, err, "writer while the zombie's lease lasts")
		require.False(t, ok, "writer while the zombie's lease lasts")
		start := time.Now()
		require.NoError(t, w.Lock(ctx))
		require.LessOrEqual(t, time.Since(start), 5*time.Second, "writer got in too long after the zombie's client closed")
		require.NoError(t, w.Unlock(ctx))
	})

	t.Run("with a live reader", func(t *testing.T) {
		zc := redisync.New(redistest.Shared(t).Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
		c := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
		ctx := testCtx(t)
		name := redistest.Key(t, "rw")
		zctx := redisync.WithOwner(ctx)
		zombie := owner(zc, zctx)
		require.NoError(t, rwlock.New(zc, name).RLock(zctx))
		live := rwlock.New(c, name)
		require.NoError(t, live.RLock(ctx))
		require.NoError(t, zc.Close())

		w := rwlock.New(c, name)
		got := make(chan error, 1)
		go func() { got <- w.Lock(ctx) }()
		// The zombie's timeout key expires; the live reader keeps the hash.
		require.Eventually(t, func() bool {
			return c.Redis().Exists(ctx, keys.RWTimeoutKey(name, zombie, 1)).Val() == 0
		}, 10*time.Second, redistest.Tick, "the zombie's timeout key is alive")
		require.Never(t, func() bool { return len(got) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
			"writer got in while a live reader holds the lock")
		released := time.Now()
		require.NoError(t, live.RUnlock(ctx)) // finds the zombie dead: frees the lock
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the writer was still blocked by the zombie's field")
		}
		t.Logf("writer in %v after the live reader's release", time.Since(released))
		require.False(t, c.Redis().HExists(ctx, name, zombie).Val(), "the zombie's field survived")
		require.NoError(t, w.Unlock(ctx))
	})
}

// TestWatchdogRenewsReadHolds: read holds outlive many watchdog leases
// (Redisson's 35s against a 30s timeout, scaled down) without an error.
func TestWatchdogRenewsReadHolds(t *testing.T) {
	const timeout = 1200 * time.Millisecond
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(timeout))
	other := clienttest.Shared(t)
	ctx, me := ownerCtx(t, c)
	rw := newRW(t, c)
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RLock(ctx))
	second := rwlock.New(c, rw.Name())
	require.NoError(t, second.RLock(ctx)) // same owner through the context: count 3

	// Not a synchronisation: time passing is what is tested (three leases,
	// which only renewals survive).
	time.Sleep(3 * timeout)

	require.NoError(t, rw.Err(), "Err after %v", 3*timeout)
	for i := int64(1); i <= 3; i++ {
		d := c.Redis().PTTL(ctx, keys.RWTimeoutKey(rw.Name(), me, i)).Val()
		require.Positive(t, d, "timeout key %d: PTTL", i)
		require.LessOrEqual(t, d, timeout, "timeout key %d: PTTL", i)
	}
	ok, err := rwlock.New(other, rw.Name()).TryLock(ctx, 0)
	require.NoError(t, err, "writer while renewed readers hold")
	require.False(t, ok, "writer while renewed readers hold")
	for range 3 {
		require.NoError(t, rw.RUnlock(ctx))
	}
	require.ErrorIs(t, rw.Err(), redisync.ErrNotHeld, "Err after the last RUnlock")
	require.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "holds the watchdog still renews")
}

func TestWatchdogRenewsWriteHold(t *testing.T) {
	const timeout = 1200 * time.Millisecond
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(timeout))
	ctx := testCtx(t)
	rw := newRW(t, c)
	require.NoError(t, rw.Lock(ctx))
	time.Sleep(3 * timeout) // not a synchronisation: three leases pass, which only renewals survive
	require.NoError(t, rw.Err(), "Err after %v", 3*timeout)
	n, err := rw.WriteHoldCount(ctx)
	require.NoError(t, err, "WriteHoldCount")
	require.Equal(t, int64(1), n, "WriteHoldCount")
	require.NoError(t, rw.Unlock(ctx))
}

// TestRenewalsBatched: many read holds renew in one script call per round,
// write holds (the lock's renewal script) in one more.
func TestRenewalsBatched(t *testing.T) {
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(1200*time.Millisecond))
	ctx := testCtx(t)
	var rws []*rwlock.RWLock
	for i := range 15 {
		rw := newRW(t, c)
		if i < 12 {
			require.NoError(t, rw.RLock(ctx))
		} else {
			require.NoError(t, rw.Lock(ctx))
		}
		rws = append(rws, rw)
	}
	before := (*core.Client)(c).Holds().Stats()
	require.Equal(t, 15, before.Holds, "holds the watchdog renews")
	var after core.WatchdogStats
	require.Eventually(t, func() bool {
		after = (*core.Client)(c).Holds().Stats()
		return after.Ticks >= before.Ticks+3
	}, 10*time.Second, redistest.Tick, "fewer than 3 renewal rounds")
	ticks, calls := after.Ticks-before.Ticks, after.Calls-before.Calls
	t.Logf("%d rounds, %d script calls for 15 holds", ticks, calls)
	require.LessOrEqual(t, calls, 2*(ticks+1), "%d calls in %d rounds: renewals are not batched", calls, ticks)
	for i, rw := range rws {
		require.NoError(t, rw.Err(), "hold %d", i)
		if i < 12 {
			require.NoError(t, rw.RUnlock(ctx))
		} else {
			require.NoError(t, rw.Unlock(ctx))
		}
	}
}

// TestJavaInterop emulates a Redisson client with raw commands.
func TestJavaInterop(t *testing.T) {
	const javaOwner = "6f1c2a54-3b7e-4c8d-9e0f-112233445566:1"
	c := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	ctx := testCtx(t)
	rdb := c.Redis()

	t.Run("Java reader blocks a Go writer", func(t *testing.T) {
		name := redistest.Key(t, "rw")
		timeoutKey := "{" + name + "}:" + javaOwner + ":rwlock_timeout:1"
		rdb.HSet(ctx, name, "mode", "read", javaOwner, 1)
		rdb.Set(ctx, timeoutKey, 1, 30*time.Second)
		rdb.PExpire(ctx, name, 30*time.Second)

		w := rwlock.New(c, name)
		ok, err := w.TryLock(ctx, 0)
		require.NoError(t, err, "Go writer")
		require.False(t, ok, "Go writer")
		r := rwlock.New(c, name)
		ok, err = r.TryRLock(ctx, 0)
		require.NoError(t, err, "Go reader beside a Java reader")
		require.True(t, ok, "Go reader beside a Java reader")
		require.NoError(t, r.RUnlock(ctx)) // the Java reader keeps the lock
		require.Equal(t, "read", rdb.HGet(ctx, name, "mode").Val(), "the Go reader's release freed the Java reader's lock")

		wokenBy(t, c, func() error { return w.Lock(ctx) }, func() {
			// The Java reader unlocks: it deletes the hash and publishes "0".
			rdb.Del(ctx, name, timeoutKey)
			rdb.Publish(ctx, "redisson_rwlock:{"+name+"}", "0")
		}, "the Go writer did not wake on the Java read release")
		require.NoError(t, w.Unlock(ctx))
	})

	t.Run("Java writer blocks Go readers", func(t *testing.T) {
		name := redistest.Key(t, "rw")
		rdb.HSet(ctx, name, "mode", "write", javaOwner+":write", 1)
		rdb.PExpire(ctx, name, 30*time.Second)
		r := rwlock.New(c, name)
		ok, err := r.TryRLock(ctx, 0)
		require.NoError(t, err, "Go reader")
		require.False(t, ok, "Go reader")

		wokenBy(t, c, func() error { return r.RLock(ctx) }, func() {
			rdb.Del(ctx, name)
			rdb.Publish(ctx, "redisson_rwlock:{"+name+"}", "1")
		}, "the Go reader did not wake on the Java write release")
		require.NoError(t, r.RUnlock(ctx))
	})

	t.Run("Go writer blocks a Java reader", func(t *testing.T) {
		name := redistest.Key(t, "rw")
		w := rwlock.New(c, name)
		wctx := redisync.WithOwner(ctx)
		require.NoError(t, w.Lock(wctx))
		// What Redisson's read acquire checks: mode, and the writer's field.
		require.Equal(t, "write", rdb.HGet(ctx, name, "mode").Val(), "mode")
		require.True(t, rdb.HExists(ctx, name, owner(c, wctx)+":write").Val(), "no <owner>:write field")
		require.NoError(t, w.Unlock(wctx))
	})
}

// TestLostHold: Done and Err report a read or write hold's loss.
func TestLostHold(t *testing.T) {
	t.Run("deleted under a watchdog read hold", func(t *testing.T) {
		c := clienttest.Shared(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx := testCtx(t)
		rw := newRW(t, c)
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, c.Redis().Del(ctx, rw.Name()).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the hash was deleted")
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
		require.ErrorIs(t, rw.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock after the loss")
	})

	t.Run("timeout keys expired under a watchdog read hold", func(t *testing.T) {
		c := clienttest.Shared(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx, me := ownerCtx(t, c)
		rw := newRW(t, c)
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, c.Redis().Del(ctx, keys.RWTimeoutKey(rw.Name(), me, 1)).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the timeout key was deleted")
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
	})

	t.Run("deleted under a watchdog write hold", func(t *testing.T) {
		c := clienttest.Shared(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx := testCtx(t)
		rw := newRW(t, c)
		require.NoError(t, rw.Lock(ctx))
		require.NoError(t, c.Redis().Del(ctx, rw.Name()).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the hash was deleted")
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
		require.ErrorIs(t, rw.Unlock(ctx), redisync.ErrNotHeld, "Unlock after the loss")
	})

	t.Run("fixed lease", func(t *testing.T) {
		c, other := clienttest.Shared(t), clienttest.Shared(t)
		ctx := testCtx(t)
		rw := newRW(t, c, rwlock.WithLease(400*time.Millisecond))
		require.ErrorIs(t, rw.Err(), redisync.ErrNotHeld, "Err before any acquisition")
		select {
		case <-rw.Done():
		default:
			require.FailNow(t, "Done not closed before any acquisition")
		}
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, rw.Err())
		w := rwlock.New(other, rw.Name())
		ok, err := w.TryLock(ctx, 5*time.Second) // gets in when the read lease ends
		require.NoError(t, err, "writer after the read lease")
		require.True(t, ok, "writer after the read lease")
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the lease")
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
		require.ErrorIs(t, rw.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock after the lease")
		require.NoError(t, w.Unlock(ctx))
	})

	t.Run("force unlock", func(t *testing.T) {
		c := clienttest.Shared(t)
		ctx := testCtx(t)
		rw := newRW(t, c)
		require.NoError(t, rw.Lock(ctx))
		ok, err := rwlock.New(c, rw.Name()).ForceUnlock(ctx)
		require.NoError(t, err, "ForceUnlock")
		require.True(t, ok, "ForceUnlock")
		waitClosed(t, rw.Done(), time.Second, "Done not closed by ForceUnlock")
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
	})

	t.Run("client closed", func(t *testing.T) {
		c := redisync.New(redistest.Shared(t).Client(t))
		ctx := testCtx(t)
		rw := newRW(t, c)
		require.NoError(t, rw.RLock(ctx))
		require.NoError(t, c.Close())
		<-rw.Done()
		require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
		require.ErrorIs(t, rw.RUnlock(ctx), redisync.ErrClosed, "RUnlock after Close")
	})
}

// TestFixedLeaseRead: a partial read release gives the remaining read holds
// a full lease, and the hold ends when that runs out.
func TestFixedLeaseRead(t *testing.T) {
	const lease = 1200 * time.Millisecond
	c := clienttest.Shared(t)
	ctx, me := ownerCtx(t, c)
	rw := newRW(t, c, rwlock.WithLease(lease))
	require.NoError(t, rw.RLock(ctx))
	time.Sleep(lease / 2) // not a synchronisation: half the first hold's lease passes
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RUnlock(ctx)) // the first hold's key gets a full lease again
	// Both PTTLs in one transaction, so that time passing between two round
	// trips on a busy machine does not count against the hash.
	var hold, hash *redis.DurationCmd
	_, err := c.Redis().TxPipelined(ctx, func(p redis.Pipeliner) error {
		hold = p.PTTL(ctx, keys.RWTimeoutKey(rw.Name(), me, 1))
		hash = p.PTTL(ctx, rw.Name())
		return nil
	})
	require.NoError(t, err)
	d := hold.Val()
	require.GreaterOrEqual(t, d, lease/2+lease/10, "remaining hold's PTTL, want about %v", lease)
	require.GreaterOrEqual(t, hash.Val(), d-5*time.Millisecond, "hash PTTL shorter than the read hold's")
	waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the lease")
	require.ErrorIs(t, rw.Err(), redisync.ErrLockLost, "Err")
	require.Eventually(t, func() bool { return c.Redis().Exists(ctx, rw.Name()).Val() == 0 },
		2*time.Second, redistest.Tick, "the hash outlived the lease")
}

// TestReentrantWriteTTL: re-entering the write side sets the TTL to the
// larger of what remains and one lease; it does not add them (Redisson does).
func TestReentrantWriteTTL(t *testing.T) {
	const lease = 2 * time.Second
	c := clienttest.Shared(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy needs a context owner
	rw := newRW(t, c, rwlock.WithLease(lease))
	require.NoError(t, rw.Lock(ctx))
	require.NoError(t, rw.Lock(ctx))
	require.NoError(t, rw.Lock(ctx))
	d := c.Redis().PTTL(ctx, rw.Name()).Val()
	require.LessOrEqual(t, d, lease, "PTTL after re-entering")
	require.GreaterOrEqual(t, d, lease/2, "PTTL after re-entering")
	for range 3 {
		require.NoError(t, rw.Unlock(ctx))
	}
}

func TestNotHeld(t *testing.T) {
	c := clienttest.Shared(t)
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	reader := rwlock.New(c, name)
	stranger := rwlock.New(c, name)

	require.ErrorIs(t, stranger.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock of a free lock")
	require.ErrorIs(t, stranger.Unlock(ctx), redisync.ErrNotHeld, "Unlock of a free lock")

	rctx := redisync.WithOwner(ctx)
	require.NoError(t, reader.RLock(rctx))
	before := snapshot(t, c.Redis(), name, owner(c, rctx), me)
	require.ErrorIs(t, stranger.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock by a non-reader")
	require.ErrorIs(t, stranger.Unlock(ctx), redisync.ErrNotHeld, "Unlock of a read-locked lock")
	require.ErrorIs(t, reader.Unlock(rctx), redisync.ErrNotHeld, "Unlock by the reader")
	require.Equal(t, before, snapshot(t, c.Redis(), name, owner(c, rctx), me), "state changed")
	require.NoError(t, reader.RUnlock(rctx))

	wctx := redisync.WithOwner(ctx)
	require.NoError(t, reader.Lock(wctx))
	before = snapshot(t, c.Redis(), name, owner(c, wctx), me)
	require.ErrorIs(t, stranger.Unlock(ctx), redisync.ErrNotHeld, "Unlock by a non-writer")
	require.ErrorIs(t, stranger.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock of a write-locked lock")
	require.ErrorIs(t, reader.RUnlock(wctx), redisync.ErrNotHeld, "RUnlock by the writer without read holds")
	require.Equal(t, before, snapshot(t, c.Redis(), name, owner(c, wctx), me), "state changed")
	require.NoError(t, reader.Err(), "the writer's hold was hurt by the failed releases")
	require.NoError(t, reader.Unlock(wctx))
}

func TestBadInput(t *testing.T) {
	// Nothing listens here: a command sent would fail with a network error,
	// not ErrInvalidArgument.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	c := redisync.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t)

	// calls runs every operation; ownerless skips those that act for no
	// owner (and so cannot fail on a bad owner token).
	calls := func(rw *rwlock.RWLock, ctx context.Context, ownerless bool) map[string]error {
		m := map[string]error{
			"RLock":   rw.RLock(ctx),
			"Lock":    rw.Lock(ctx),
			"RUnlock": rw.RUnlock(ctx),
			"Unlock":  rw.Unlock(ctx),
		}
		_, m["TryRLock"] = rw.TryRLock(ctx, time.Second)
		_, m["TryLock"] = rw.TryLock(ctx, time.Second)
		_, m["ReadHoldCount"] = rw.ReadHoldCount(ctx)
		_, m["WriteHoldCount"] = rw.WriteHoldCount(ctx)
		m["ReadLocker().Lock"] = rw.ReadLocker().Lock(ctx)
		m["WriteLocker().Lock"] = rw.WriteLocker().Lock(ctx)
		if ownerless {
			_, m["ForceUnlock"] = rw.ForceUnlock(ctx)
			_, m["IsReadLocked"] = rw.IsReadLocked(ctx)
			_, m["IsWriteLocked"] = rw.IsWriteLocked(ctx)
		}
		return m
	}
	badOption := redisync.New(rdb, redisync.WithWatchdogTimeout(time.Millisecond))
	t.Cleanup(func() { _ = badOption.Close() })
	cases := []struct {
		name string
		rw   *rwlock.RWLock
		ctx  context.Context
	}{
		{"empty name", rwlock.New(c, ""), ctx},
		{"zero lease", rwlock.New(c, "x", rwlock.WithLease(0)), ctx},
		{"negative lease", rwlock.New(c, "x", rwlock.WithLease(-time.Second)), ctx},
		{"nil client", rwlock.New(nil, "x"), ctx},
		{"owner token 0", rwlock.New(c, "x"), redisync.WithOwnerToken(ctx, 0)},
		{"bad client option", rwlock.New(badOption, "x"), ctx},
	}
	for _, tc := range cases {
		for op, err := range calls(tc.rw, tc.ctx, tc.name != "owner token 0") {
			assert.ErrorIs(t, err, redisync.ErrInvalidArgument, "%s: %s", tc.name, op)
		}
	}

	rw := rwlock.New(c, "x")
	_, err := rw.TryRLock(ctx, -time.Second)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryRLock with a negative wait")
	_, err = rw.TryLock(ctx, -time.Second)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument, "TryLock with a negative wait")
	_, err = rw.ReadLocker().TryLock(ctx, -time.Second)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument, "ReadLocker().TryLock with a negative wait")

	require.NoError(t, c.Close())
	for op, err := range calls(rw, ctx, true) {
		assert.ErrorIs(t, err, redisync.ErrClosed, "after Close: %s", op)
	}
}

// TestCancelledWait: a wait ended by ctx returns ctx's error and leaves no
// hold and no subscription.
func TestCancelledWait(t *testing.T) {
	c, holderC := clienttest.Shared(t), clienttest.Shared(t)
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	holder := rwlock.New(holderC, name)
	require.NoError(t, holder.Lock(ctx))
	before := snapshot(t, c.Redis(), name)
	rw := rwlock.New(c, name)

	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := rw.RLock(dctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "RLock")

	dctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	err = rw.WriteLocker().Lock(dctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "Lock")

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rw.RLock(cctx) }()
	clienttest.WaitWaiters(t, 1, c)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled, "cancelled RLock")

	// A TryLock whose wait runs out is not an error.
	ok, err := rw.TryRLock(ctx, 100*time.Millisecond)
	require.NoError(t, err, "TryRLock")
	require.False(t, ok, "TryRLock")

	clienttest.NoSubscriptions(t, c)
	require.Equal(t, before, snapshot(t, c.Redis(), name), "the cancelled waits changed the lock")
	n, err := rw.ReadHoldCount(ctx)
	require.NoError(t, err, "ReadHoldCount")
	require.Equal(t, int64(0), n, "ReadHoldCount")
	require.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "a cancelled wait left a renewed hold")
	require.ErrorIs(t, rw.Err(), redisync.ErrNotHeld)
	require.NoError(t, holder.Unlock(ctx))
}

// TestRetrySafety: a script whose reply is lost runs again (go-redis
// retries); acquisitions and releases are applied once.
func TestRetrySafety(t *testing.T) {
	srv := redistest.Shared(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	c, _ := newProxied(t, proxy, 3)
	ctx, me := ownerCtx(t, c)
	rdb := srv.Client(t)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	dropped := 0
	drop := func() {
		t.Helper()
		require.NoError(t, c.Redis().Ping(ctx).Err())
		proxy.DropNextReply()
		dropped++
	}
	check := func(what string) {
		t.Helper()
		require.Equal(t, dropped, proxy.Dropped(), "%s: replies dropped", what)
	}

	drop()
	require.NoError(t, rw.RLock(ctx))
	check("RLock")
	require.Equal(t, "1", rdb.HGet(ctx, name, me).Val(), "read hold count after a retried RLock")
	require.Zero(t, rdb.Exists(ctx, keys.RWTimeoutKey(name, me, 2)).Val(), "a retried RLock made a second timeout key")
	require.NoError(t, rw.RLock(ctx))
	drop()
	require.NoError(t, rw.RUnlock(ctx))
	check("RUnlock")
	require.Equal(t, "1", rdb.HGet(ctx, name, me).Val(), "read hold count after a retried RUnlock")
	require.NoError(t, rw.RUnlock(ctx))

	drop()
	require.NoError(t, rw.Lock(ctx))
	check("Lock")
	require.Equal(t, "1", rdb.HGet(ctx, name, me+":write").Val(), "write hold count after a retried Lock")
	require.NoError(t, rw.Lock(ctx))
	drop()
	require.NoError(t, rw.Unlock(ctx))
	check("Unlock")
	require.Equal(t, "1", rdb.HGet(ctx, name, me+":write").Val(), "write hold count after a retried Unlock")
	require.NoError(t, rw.Unlock(ctx))
	require.Zero(t, rdb.Exists(ctx, name).Val(), "lock left behind")
}

// TestUndoInterruptedAcquire: an acquisition whose reply is lost and not
// retried is undone, so nothing is left held.
func TestUndoInterruptedAcquire(t *testing.T) {
	srv := redistest.Shared(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	c, clock := newProxied(t, proxy, -1) // no retries: the lost reply is an error
	ctx := testCtx(t)
	rdb := srv.Client(t)
	// Warm up: the client's first request starts reading the server's
	// clock (TIME) in the background. Wait for that read to end: a reply
	// to it still on its way when the proxy is armed would be the one
	// dropped, instead of the acquisition's (the flake this test had).
	warm := rwlock.New(c, redistest.Key(t, "warm"))
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))
	require.Eventually(t, func() bool { return clock.Load() > 0 }, 10*time.Second, redistest.Tick,
		"the client's background read of the server's clock did not end")

	for _, write := range []bool{false, true} {
		name := redistest.Key(t, "rw")
		rw := rwlock.New(c, name)
		ping := func() error { return c.Redis().Ping(ctx).Err() }
		acquire := func() (err error) {
			if write {
				_, err = rw.TryLock(ctx, 0)
			} else {
				_, err = rw.TryRLock(ctx, 0)
			}
			return err
		}
		release := func() error {
			if write {
				return rw.Unlock(ctx)
			}
			return rw.RUnlock(ctx)
		}
		require.Error(t, proxy.LoseReplyOf(t, ping, acquire, release), "write=%v: the acquisition whose reply was lost reported success", write)
		// The undo runs in the background.
		require.Eventually(t, func() bool { return rdb.Exists(ctx, name).Val() == 0 }, 5*time.Second, redistest.Tick,
			"write=%v: the interrupted acquisition was not undone: %v", write, rdb.HGetAll(ctx, name).Val())
		require.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "write=%v: a hold is renewed", write)
	}
}

// newProxied returns a client through p with the given go-redis retries,
// and the count of its TIME commands that have ended (the background read
// of the server's clock).
func newProxied(t *testing.T, p *redistest.Proxy, retries int) (*redisync.Client, *clockReads) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: retries})
	t.Cleanup(func() { _ = rdb.Close() })
	clock := &clockReads{}
	rdb.AddHook(clock)
	c := redisync.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	return c, clock
}

// clockReads is a go-redis hook counting the TIME commands that ended.
type clockReads struct{ atomic.Int64 }

func (r *clockReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *clockReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "time" {
			r.Add(1)
		}
		return err
	}
}

func (r *clockReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestForceUnlock(t *testing.T) {
	c := clienttest.Shared(t)
	waiterC := clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute))
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	ok, err := rw.ForceUnlock(ctx)
	require.NoError(t, err, "ForceUnlock of a free lock")
	require.False(t, ok, "ForceUnlock of a free lock")

	// Read mode, two readers with timeout keys; a writer waits.
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RLock(ctx))
	octx := redisync.WithOwner(ctx)
	require.NoError(t, rwlock.New(c, name).RLock(octx))
	w := rwlock.New(waiterC, name)
	wokenBy(t, waiterC, func() error { return w.Lock(ctx) }, func() {
		ok, err := rwlock.New(waiterC, name).ForceUnlock(ctx)
		require.NoError(t, err, "ForceUnlock in read mode")
		require.True(t, ok, "ForceUnlock in read mode")
	}, "ForceUnlock did not wake the waiting writer")
	for _, o := range []string{me, owner(c, octx)} {
		for i := int64(1); i <= 2; i++ {
			require.Zero(t, c.Redis().Exists(ctx, keys.RWTimeoutKey(name, o, i)).Val(), "timeout key %d of %s survived ForceUnlock", i, o)
		}
	}
	require.ErrorIs(t, rw.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock after ForceUnlock")

	// Write mode, forced from the writer's client: its hold ends at once.
	ok, err = rwlock.New(waiterC, name).ForceUnlock(ctx)
	require.NoError(t, err, "ForceUnlock in write mode")
	require.True(t, ok, "ForceUnlock in write mode")
	require.Zero(t, c.Redis().Exists(ctx, name).Val(), "ForceUnlock left the hash")
	waitClosed(t, w.Done(), time.Second, "the writer's Done was not closed by ForceUnlock in its client")
}

func TestViews(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy, downgrade and ErrUpgrade concern context owners
	rw := newRW(t, c)
	var r, w redisync.Locker = rw.ReadLocker(), rw.WriteLocker()

	require.NoError(t, r.Lock(ctx))
	ok, err := r.TryLock(ctx, 0)
	require.NoError(t, err, "ReadLocker().TryLock")
	require.True(t, ok, "ReadLocker().TryLock")
	n, err := rw.ReadHoldCount(ctx)
	require.NoError(t, err, "ReadHoldCount")
	require.Equal(t, int64(2), n, "ReadHoldCount")
	require.ErrorIs(t, w.Lock(ctx), redisync.ErrUpgrade, "WriteLocker().Lock by a reader")
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r.Unlock(ctx))
	require.ErrorIs(t, r.Unlock(ctx), redisync.ErrNotHeld, "ReadLocker().Unlock")

	require.NoError(t, w.Lock(ctx))
	ok, err = w.TryLock(ctx, 0)
	require.NoError(t, err, "WriteLocker().TryLock")
	require.True(t, ok, "WriteLocker().TryLock")
	n, err = rw.WriteHoldCount(ctx)
	require.NoError(t, err, "WriteHoldCount")
	require.Equal(t, int64(2), n, "WriteHoldCount")
	require.NoError(t, r.Lock(ctx)) // downgrade through the views
	require.NoError(t, w.Unlock(ctx))
	require.NoError(t, w.Unlock(ctx))
	ok, err = rw.IsReadLocked(ctx)
	require.NoError(t, err, "IsReadLocked")
	require.True(t, ok, "IsReadLocked")
	require.NoError(t, r.Unlock(ctx))
	require.ErrorIs(t, w.Unlock(ctx), redisync.ErrNotHeld, "WriteLocker().Unlock")
}

// TestContextOwner: handles used with one owner context act for that owner.
func TestContextOwner(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := redisync.WithOwner(testCtx(t))
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c, name), rwlock.New(c, name)
	require.NoError(t, a.Lock(ctx))
	require.NoError(t, b.Lock(ctx)) // re-enters: same owner
	require.NoError(t, b.RLock(ctx))
	n, err := a.WriteHoldCount(ctx)
	require.NoError(t, err, "WriteHoldCount")
	require.Equal(t, int64(2), n, "WriteHoldCount")
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, a.RUnlock(ctx))
	ok, err := b.TryLock(testCtx(t), 0) // b's own owner: a fresh one
	require.NoError(t, err, "TryLock by the handle's own owner")
	require.True(t, ok, "TryLock by the handle's own owner")
	require.NoError(t, b.Unlock(testCtx(t)))
}

// TestCluster runs the read-write lock on a Redis Cluster, with names with
// and without a hash tag: every key a script touches shares the slot.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
	t.Cleanup(func() { _ = c.Close() })
	ctx := testCtx(t)
	for _, name := range []string{redistest.Key(t, "rw"), "{" + redistest.Key(t, "tag") + "}:rw", "a{" + redistest.Key(t, "b") + "}c"} {
		rw, other := rwlock.New(c, name), rwlock.New(c, name)
		octx := redisync.WithOwner(ctx) // rw downgrades
		require.NoError(t, rw.Lock(octx))
		require.NoError(t, rw.RLock(octx))
		require.NoError(t, rw.RLock(octx))
		got := make(chan error, 1)
		go func() { got <- other.RLock(ctx) }()
		require.NoError(t, rw.Unlock(octx))
		require.NoError(t, <-got)
		// Renewals of read holds in cluster batches: two rounds.
		ticks := (*core.Client)(c).Holds().Stats().Ticks
		require.Eventually(t, func() bool { return (*core.Client)(c).Holds().Stats().Ticks >= ticks+2 },
			10*time.Second, redistest.Tick, "%s: two renewal rounds", name)
		require.NoError(t, rw.Err(), name)
		require.NoError(t, rw.RUnlock(octx))
		require.NoError(t, other.RUnlock(ctx))
		ok, err := other.ForceUnlock(ctx)
		require.NoError(t, err, name+": ForceUnlock")
		require.True(t, ok, name+": ForceUnlock")
		require.ErrorIs(t, rw.RUnlock(octx), redisync.ErrNotHeld, name+": RUnlock after ForceUnlock")
	}
}

// TestUndoTombstone: an undo that runs before its acquisition (the
// acquisition was still in flight when the caller gave up) marks it
// cancelled, so the late acquisition takes nothing.
func TestUndoTombstone(t *testing.T) {
	c := clienttest.Shared(t)
	ctx, me := ownerCtx(t, c)
	rdb := c.Redis()
	cc := (*core.Client)(c)
	for _, write := range []bool{false, true} {
		name := redistest.Key(t, "rw")
		head, tail := keys.RWTimeoutParts(name)
		acquire := keys.Request(name, cc.Requests().ID())
		ks := []string{name, keys.RWChannel(name), keys.Request(name, cc.Requests().ID()), acquire}
		field, release, acq, msg := me, lua.RWReadRelease, lua.RWReadAcquire, "0"
		if write {
			field, release, acq, msg = me+":write", lua.RWWriteRelease, lua.RWWriteAcquire, "1"
		}
		n, err := release.Run(ctx, rdb, ks, 30000, field, cc.Requests().Deadline(ctx), msg, "1", head, tail).Int64()
		require.NoError(t, err, "undo before the acquisition")
		require.Equal(t, int64(-2), n, "undo before the acquisition")
		res, err := acq.Run(ctx, rdb, []string{name, acquire},
			30000, me, cc.Requests().Deadline(ctx), me+":write", keys.RWTimeoutPrefix(name, me)).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, []int64{0, -3}, res, "write=%v: late acquisition", write)
		require.Zero(t, rdb.Exists(ctx, name).Val(), "write=%v: the cancelled acquisition took the lock", write)
	}
}

// TestExpiredReaderBesideLive: a reader whose lease ran out while another
// reader kept the lock alive holds nothing: its count reads 0, its RUnlock
// is ErrNotHeld (and, as every ErrNotHeld, changes nothing: its leftover
// field stays), and its next RLock starts from 1.
func TestExpiredReaderBesideLive(t *testing.T) {
	c := clienttest.Shared(t)
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	short := rwlock.New(c, name, rwlock.WithLease(300*time.Millisecond))
	live := rwlock.New(c, name)
	lctx := testCtx(t) // the live reader acts for its handle's own owner
	require.NoError(t, live.RLock(lctx))
	require.NoError(t, short.RLock(ctx))
	require.NoError(t, short.RLock(ctx))
	waitClosed(t, short.Done(), 5*time.Second, "the short lease did not end")
	require.Eventually(t, func() bool { return c.Redis().Exists(ctx, keys.RWTimeoutKey(name, me, 2)).Val() == 0 },
		2*time.Second, redistest.Tick, "timeout key alive")
	require.True(t, c.Redis().HExists(ctx, name, me).Val(), "test setup: the expired reader's field is already gone")
	n, err := short.ReadHoldCount(ctx)
	require.NoError(t, err, "ReadHoldCount of the expired reader")
	require.Equal(t, int64(0), n, "ReadHoldCount of the expired reader")
	require.ErrorIs(t, short.RUnlock(ctx), redisync.ErrNotHeld, "RUnlock of the expired reader")
	require.True(t, c.Redis().HExists(ctx, name, me).Val(), "ErrNotHeld changed Redis: the expired reader's field is gone")
	ok, err := live.IsReadLocked(lctx)
	require.NoError(t, err, "IsReadLocked with the live reader")
	require.True(t, ok, "IsReadLocked with the live reader")

	require.NoError(t, short.RLock(ctx))
	n, err = short.ReadHoldCount(ctx)
	require.NoError(t, err, "ReadHoldCount after a fresh RLock")
	require.Equal(t, int64(1), n, "ReadHoldCount after a fresh RLock")
	require.NoError(t, short.RUnlock(ctx))
	require.NoError(t, live.RUnlock(lctx))
}

// Regression (issue 25): an unlock through a handle that took nothing
// without a context owner names the side as other not-held errors do
// ("read side, ", "write side, ").
func TestUnlockNotLockedWording(t *testing.T) {
	ctx := context.Background()
	rw := rwlock.New(clienttest.Shared(t), redistest.Key(t))
	err := rw.RUnlock(ctx)
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.Equal(t, `rwlock "`+rw.Name()+`": read side, not locked through this handle: redisync: not held`, err.Error())
	err = rw.Unlock(ctx)
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.Equal(t, `rwlock "`+rw.Name()+`": write side, not locked through this handle: redisync: not held`, err.Error())
}
