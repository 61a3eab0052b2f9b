package rwlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rwlock"
)

func TestHoldCounts(t *testing.T) {
	c := newClient(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy needs a context owner
	rw := newRW(t, c)

	read := func(want int64) {
		t.Helper()
		n, err := rw.ReadHoldCount(ctx)
		wantCount(t, "ReadHoldCount", n, err, want)
	}
	write := func(want int64) {
		t.Helper()
		n, err := rw.WriteHoldCount(ctx)
		wantCount(t, "WriteHoldCount", n, err, want)
	}

	// Read side: 0, 1, 0, 2, 1, 0.
	read(0)
	must(t, rw.RLock(ctx))
	read(1)
	must(t, rw.RUnlock(ctx))
	read(0)
	must(t, rw.RLock(ctx))
	ok, err := rw.TryRLock(ctx, 0)
	wantBool(t, "reentrant TryRLock", ok, err, true)
	read(2)
	must(t, rw.RUnlock(ctx))
	read(1)
	must(t, rw.RUnlock(ctx))
	read(0)
	wantErr(t, "extra RUnlock", rw.RUnlock(ctx), redisync.ErrNotHeld)

	// Write side: 0, 1, 0, 2, 1, 0.
	write(0)
	must(t, rw.Lock(ctx))
	write(1)
	must(t, rw.Unlock(ctx))
	write(0)
	must(t, rw.Lock(ctx))
	ok, err = rw.TryLock(ctx, 0)
	wantBool(t, "reentrant TryLock", ok, err, true)
	write(2)
	must(t, rw.Unlock(ctx))
	write(1)
	must(t, rw.Unlock(ctx))
	write(0)
	wantErr(t, "extra Unlock", rw.Unlock(ctx), redisync.ErrNotHeld)

	n, err := c.Redis().Exists(ctx, rw.Name()).Result()
	wantCount(t, "EXISTS after the last release", n, err, 0)
}

// TestLayout checks the keys, fields, TTLs and messages Redisson reads and
// writes.
func TestLayout(t *testing.T) {
	c := newClient(t, redisync.WithWatchdogTimeout(3*time.Second))
	ctx, me := ownerCtx(t, c)
	rdb := c.Redis()
	rw := newRW(t, c)
	name := rw.Name()

	sub := rdb.Subscribe(ctx, "redisson_rwlock:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	must(t, err)
	msg := func(want string) {
		t.Helper()
		select {
		case m := <-sub.Channel():
			if m.Payload != want {
				t.Fatalf("message %q, want %q", m.Payload, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no message %q", want)
		}
	}
	noMsg := func() {
		t.Helper()
		select {
		case m := <-sub.Channel():
			t.Fatalf("unexpected message %q", m.Payload)
		case <-time.After(100 * time.Millisecond):
		}
	}
	hash := func(want map[string]string) {
		t.Helper()
		got, err := rdb.HGetAll(ctx, name).Result()
		must(t, err)
		if len(got) != len(want) {
			t.Fatalf("hash = %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("hash = %v, want %v", got, want)
			}
		}
	}
	pttl := func(key string, lo, hi time.Duration) {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		must(t, err)
		if d < lo || d > hi {
			t.Fatalf("PTTL %s = %v, want in [%v, %v]", key, d, lo, hi)
		}
	}
	timeout := func(n int) string { return "{" + name + "}:" + me + ":rwlock_timeout:" + string(rune('0'+n)) }

	must(t, rw.RLock(ctx))
	must(t, rw.RLock(ctx))
	hash(map[string]string{"mode": "read", me: "2"})
	pttl(timeout(1), time.Second, 3*time.Second)
	pttl(timeout(2), time.Second, 3*time.Second)
	pttl(name, time.Second, 3*time.Second)
	if got := keys.RWTimeoutKey(name, me, 2); got != timeout(2) {
		t.Fatalf("RWTimeoutKey = %q, want %q", got, timeout(2))
	}

	must(t, rw.RUnlock(ctx))
	hash(map[string]string{"mode": "read", me: "1"})
	if n := rdb.Exists(ctx, timeout(2)).Val(); n != 0 {
		t.Fatal("the released hold's timeout key is still there")
	}
	noMsg()
	must(t, rw.RUnlock(ctx))
	msg("0") // the last read release frees the lock
	if n := rdb.Exists(ctx, name, timeout(1)).Val(); n != 0 {
		t.Fatalf("%d keys left after the last read release", n)
	}

	must(t, rw.Lock(ctx))
	must(t, rw.Lock(ctx))
	hash(map[string]string{"mode": "write", me + ":write": "2"})
	pttl(name, time.Second, 3*time.Second)
	must(t, rw.Unlock(ctx))
	noMsg()
	must(t, rw.Unlock(ctx))
	msg("1")
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Fatal("the hash is still there after the write release")
	}

	// Downgrade: the write release publishes "1" and leaves mode read.
	must(t, rw.Lock(ctx))
	must(t, rw.RLock(ctx))
	hash(map[string]string{"mode": "write", me + ":write": "1", me: "1"})
	must(t, rw.Unlock(ctx))
	msg("1")
	hash(map[string]string{"mode": "read", me: "1"})
	pttl(name, time.Second, 3*time.Second)
	must(t, rw.RUnlock(ctx))
	msg("0")
}

func TestReadersShareWritersExclude(t *testing.T) {
	c1, c2 := newClient(t), newClient(t)
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c1, name), rwlock.New(c2, name)

	must(t, a.RLock(ctx))
	ok, err := b.TryRLock(ctx, 0)
	wantBool(t, "second reader", ok, err, true)
	ok, err = b.IsReadLocked(ctx)
	wantBool(t, "IsReadLocked", ok, err, true)
	ok, err = b.IsWriteLocked(ctx)
	wantBool(t, "IsWriteLocked", ok, err, false)
	w := rwlock.New(c2, name)
	ok, err = w.TryLock(ctx, 100*time.Millisecond)
	wantBool(t, "writer while read-locked", ok, err, false)
	must(t, a.RUnlock(ctx))
	ok, err = w.TryLock(ctx, 0)
	wantBool(t, "writer while one reader is left", ok, err, false)
	must(t, b.RUnlock(ctx))

	ok, err = w.TryLock(ctx, 0)
	wantBool(t, "writer on a free lock", ok, err, true)
	ok, err = a.TryRLock(ctx, 100*time.Millisecond)
	wantBool(t, "reader while write-locked", ok, err, false)
	ok, err = a.TryLock(ctx, 0)
	wantBool(t, "second writer", ok, err, false)
	ok, err = a.IsWriteLocked(ctx)
	wantBool(t, "IsWriteLocked", ok, err, true)
	ok, err = a.IsReadLocked(ctx)
	wantBool(t, "IsReadLocked", ok, err, false)
	must(t, w.Unlock(ctx))
	ok, err = a.IsWriteLocked(ctx)
	wantBool(t, "IsWriteLocked after release", ok, err, false)
}

// TestWriterWaitsForReaders checks the "0" path: the last read release wakes
// a waiting writer of another client at once.
func TestWriterWaitsForReaders(t *testing.T) {
	c1 := newClient(t)
	c2 := newClient(t, redisync.WithRecheckInterval(time.Minute))
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	r1, r2, w := rwlock.New(c1, name), rwlock.New(c1, name), rwlock.New(c2, name)
	must(t, r1.RLock(ctx))
	must(t, r2.RLock(ctx))

	got := make(chan time.Time, 1)
	go func() {
		if err := w.Lock(ctx); err != nil {
			t.Error(err)
		}
		got <- time.Now()
	}()
	waitWaiters(t, 1, c2)
	must(t, r1.RUnlock(ctx))
	select {
	case <-got:
		t.Fatal("the writer got in while a reader held the lock")
	case <-time.After(200 * time.Millisecond):
	}
	released := time.Now()
	must(t, r2.RUnlock(ctx))
	if d := (<-got).Sub(released); d > 2*time.Second {
		t.Fatalf("writer got in %v after the last read release", d)
	}
	must(t, w.Unlock(ctx))
}

func TestDowngrade(t *testing.T) {
	c := newClient(t)
	// The other client's fallback re-check is a minute and the lease 30s:
	// only the "1" published by the write release can let its readers in.
	other := newClient(t, redisync.WithRecheckInterval(time.Minute))
	ctx := testCtx(t)
	rw := newRW(t, c)
	octx := redisync.WithOwner(ctx) // downgrade concerns context owners

	must(t, rw.Lock(octx))
	must(t, rw.RLock(octx)) // the writer may read
	n, err := rw.ReadHoldCount(octx)
	wantCount(t, "ReadHoldCount", n, err, 1)
	n, err = rw.WriteHoldCount(octx)
	wantCount(t, "WriteHoldCount", n, err, 1)
	must(t, rw.Lock(octx)) // and re-enter the write side while reading
	must(t, rw.Unlock(octx))

	const readers = 3
	var wg sync.WaitGroup
	got := make(chan time.Time, readers)
	handles := make([]*rwlock.RWLock, readers)
	for i := range handles {
		handles[i] = rwlock.New(other, rw.Name())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := handles[i].RLock(ctx); err != nil {
				t.Error(err)
				return
			}
			got <- time.Now()
		}()
	}
	waitWaiters(t, readers, other)

	released := time.Now()
	must(t, rw.Unlock(octx)) // downgrade: keeps the read hold
	wg.Wait()
	close(got)
	for at := range got {
		if d := at.Sub(released); d > 2*time.Second {
			t.Fatalf("a reader got in %v after the downgrade", d)
		}
	}
	ok, err := rw.IsReadLocked(ctx)
	wantBool(t, "IsReadLocked after downgrade", ok, err, true)
	n, err = rw.ReadHoldCount(octx)
	wantCount(t, "ReadHoldCount after downgrade", n, err, 1)
	n, err = rw.WriteHoldCount(octx)
	wantCount(t, "WriteHoldCount after downgrade", n, err, 0)
	// The latest acquisition was the re-entered write side, now released.
	wantErr(t, "Err after the write release", rw.Err(), redisync.ErrNotHeld)
	must(t, rw.RLock(octx))
	if err := rw.Err(); err != nil {
		t.Fatalf("Err = %v while the read hold (now the latest) lasts", err)
	}
	must(t, rw.RUnlock(octx))

	// Still read-locked by the downgraded owner: no writer gets in.
	ok, err = rwlock.New(other, rw.Name()).TryLock(ctx, 0)
	wantBool(t, "writer after downgrade", ok, err, false)
	must(t, rw.RUnlock(octx))
	for _, h := range handles {
		must(t, h.RUnlock(ctx))
	}
	n, err = c.Redis().Exists(ctx, rw.Name()).Result()
	wantCount(t, "EXISTS", n, err, 0)
}

func TestUpgradeRefused(t *testing.T) {
	c := newClient(t)
	ctx := testCtx(t)
	rw := newRW(t, c)
	octx := redisync.WithOwner(ctx) // ErrUpgrade concerns context owners
	must(t, rw.RLock(octx))
	before := snapshot(t, c.Redis(), rw.Name())

	start := time.Now()
	wantErr(t, "Lock by a reader", rw.Lock(octx), redisync.ErrUpgrade)
	ok, err := rw.TryLock(octx, 10*time.Second)
	wantErr(t, "TryLock by a reader", err, redisync.ErrUpgrade)
	if ok {
		t.Fatal("TryLock by a reader succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("ErrUpgrade took %v", d)
	}
	if after := snapshot(t, c.Redis(), rw.Name()); after != before {
		t.Fatalf("the refused upgrade changed the lock: %s -> %s", before, after)
	}
	noSubscriptions(t, c)
	wantErr(t, "Unlock by a reader", rw.Unlock(octx), redisync.ErrNotHeld)
	must(t, rw.RUnlock(octx))

	// Another reader does not make this owner's Lock an upgrade: it waits.
	other := rwlock.New(c, rw.Name())
	must(t, other.RLock(ctx))
	ok, err = rw.TryLock(octx, 50*time.Millisecond)
	wantBool(t, "writer while another owner reads", ok, err, false)
	must(t, other.RUnlock(ctx))
}

// TestReadersWakeTogether: 20 readers on 3 clients blocked behind a writer
// all get in within a second of the write release.
func TestReadersWakeTogether(t *testing.T) {
	cw := newClient(t)
	var clients []*redisync.Client
	for range 3 {
		// No fallback can help within the test: a minute's re-check cap, and
		// the writer's lease (the 30s watchdog timeout) as the retry hint.
		clients = append(clients, newClient(t, redisync.WithRecheckInterval(time.Minute)))
	}
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	w := rwlock.New(cw, name)
	must(t, w.Lock(ctx))

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
			if err := r.RLock(ctx); err != nil {
				t.Error(err)
				return
			}
			got <- time.Now()
		}()
	}
	waitWaiters(t, readers, clients...)
	time.Sleep(50 * time.Millisecond) // let the last waiters start waiting
	released := time.Now()
	must(t, w.Unlock(ctx))
	wg.Wait()
	close(got)
	var last time.Duration
	for at := range got {
		last = max(last, at.Sub(released))
	}
	t.Logf("all %d readers in %v after the write release", readers, last)
	if last > time.Second {
		t.Fatalf("the last reader got in %v after the write release, want ≤ 1s", last)
	}
	for _, r := range handles {
		must(t, r.RUnlock(ctx))
	}
	for _, c := range clients {
		noSubscriptions(t, c)
	}
}

// TestZombieReader: a reader whose client closed without RUnlock stops
// blocking writers one lease after its last renewal.
func TestZombieReader(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		zc := redisync.New(redistest.Shared(t).Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
		c := newClient(t)
		ctx := testCtx(t)
		name := redistest.Key(t, "rw")
		must(t, rwlock.New(zc, name).RLock(ctx))
		must(t, zc.Close()) // no RUnlock: the watchdog stops, the keys stay

		w := rwlock.New(c, name)
		ok, err := w.TryLock(ctx, 0)
		wantBool(t, "writer while the zombie's lease lasts", ok, err, false)
		start := time.Now()
		must(t, w.Lock(ctx))
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("writer got in %v after the zombie's client closed", d)
		}
		must(t, w.Unlock(ctx))
	})

	t.Run("with a live reader", func(t *testing.T) {
		zc := redisync.New(redistest.Shared(t).Client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
		c := newClient(t, redisync.WithRecheckInterval(time.Minute))
		ctx := testCtx(t)
		name := redistest.Key(t, "rw")
		zctx := redisync.WithOwner(ctx)
		zombie := owner(zc, zctx)
		must(t, rwlock.New(zc, name).RLock(zctx))
		live := rwlock.New(c, name)
		must(t, live.RLock(ctx))
		must(t, zc.Close())

		w := rwlock.New(c, name)
		got := make(chan error, 1)
		go func() { got <- w.Lock(ctx) }()
		// The zombie's timeout key expires; the live reader keeps the hash.
		eventually(t, 10*time.Second, func() error {
			if c.Redis().Exists(ctx, keys.RWTimeoutKey(name, zombie, 1)).Val() != 0 {
				return errors.New("the zombie's timeout key is alive")
			}
			return nil
		})
		select {
		case err := <-got:
			t.Fatalf("writer got in (%v) while a live reader holds the lock", err)
		case <-time.After(200 * time.Millisecond):
		}
		released := time.Now()
		must(t, live.RUnlock(ctx)) // finds the zombie dead: frees the lock
		select {
		case err := <-got:
			must(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("the writer was still blocked by the zombie's field")
		}
		t.Logf("writer in %v after the live reader's release", time.Since(released))
		if v := c.Redis().HExists(ctx, name, zombie).Val(); v {
			t.Fatal("the zombie's field survived")
		}
		must(t, w.Unlock(ctx))
	})
}

// TestWatchdogRenewsReadHolds: read holds outlive many watchdog leases
// (Redisson's 35s against a 30s timeout, scaled down) without an error.
func TestWatchdogRenewsReadHolds(t *testing.T) {
	const timeout = 1200 * time.Millisecond
	c := newClient(t, redisync.WithWatchdogTimeout(timeout))
	other := newClient(t)
	ctx, me := ownerCtx(t, c)
	rw := newRW(t, c)
	must(t, rw.RLock(ctx))
	must(t, rw.RLock(ctx))
	second := rwlock.New(c, rw.Name())
	must(t, second.RLock(ctx)) // same owner through the context: count 3

	time.Sleep(3 * timeout)

	if err := rw.Err(); err != nil {
		t.Fatalf("Err after %v: %v", 3*timeout, err)
	}
	for i := int64(1); i <= 3; i++ {
		d := c.Redis().PTTL(ctx, keys.RWTimeoutKey(rw.Name(), me, i)).Val()
		if d <= 0 || d > timeout {
			t.Fatalf("timeout key %d: PTTL %v, want in (0, %v]", i, d, timeout)
		}
	}
	ok, err := rwlock.New(other, rw.Name()).TryLock(ctx, 0)
	wantBool(t, "writer while renewed readers hold", ok, err, false)
	for range 3 {
		must(t, rw.RUnlock(ctx))
	}
	if err := rw.Err(); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Err after the last RUnlock = %v, want ErrNotHeld", err)
	}
	if n := (*core.Client)(c).WatchdogStats().Holds; n != 0 {
		t.Fatalf("watchdog still renews %d holds", n)
	}
}

func TestWatchdogRenewsWriteHold(t *testing.T) {
	const timeout = 1200 * time.Millisecond
	c := newClient(t, redisync.WithWatchdogTimeout(timeout))
	ctx := testCtx(t)
	rw := newRW(t, c)
	must(t, rw.Lock(ctx))
	time.Sleep(3 * timeout)
	if err := rw.Err(); err != nil {
		t.Fatalf("Err after %v: %v", 3*timeout, err)
	}
	n, err := rw.WriteHoldCount(ctx)
	wantCount(t, "WriteHoldCount", n, err, 1)
	must(t, rw.Unlock(ctx))
}

// TestRenewalsBatched: many read holds renew in one script call per round,
// write holds (the lock's renewal script) in one more.
func TestRenewalsBatched(t *testing.T) {
	c := newClient(t, redisync.WithWatchdogTimeout(1200*time.Millisecond))
	ctx := testCtx(t)
	var rws []*rwlock.RWLock
	for i := range 15 {
		rw := newRW(t, c)
		if i < 12 {
			must(t, rw.RLock(ctx))
		} else {
			must(t, rw.Lock(ctx))
		}
		rws = append(rws, rw)
	}
	before := (*core.Client)(c).WatchdogStats()
	if before.Holds != 15 {
		t.Fatalf("watchdog renews %d holds, want 15", before.Holds)
	}
	var after core.WatchdogStats
	eventually(t, 10*time.Second, func() error {
		after = (*core.Client)(c).WatchdogStats()
		if after.Ticks < before.Ticks+3 {
			return errors.New("fewer than 3 renewal rounds")
		}
		return nil
	})
	ticks, calls := after.Ticks-before.Ticks, after.Calls-before.Calls
	t.Logf("%d rounds, %d script calls for 15 holds", ticks, calls)
	if calls > 2*(ticks+1) {
		t.Fatalf("%d calls in %d rounds: renewals are not batched", calls, ticks)
	}
	for i, rw := range rws {
		if err := rw.Err(); err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		if i < 12 {
			must(t, rw.RUnlock(ctx))
		} else {
			must(t, rw.Unlock(ctx))
		}
	}
}

// TestJavaInterop emulates a Redisson client with raw commands.
func TestJavaInterop(t *testing.T) {
	const javaOwner = "6f1c2a54-3b7e-4c8d-9e0f-112233445566:1"
	c := newClient(t, redisync.WithRecheckInterval(time.Minute))
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
		wantBool(t, "Go writer", ok, err, false)
		r := rwlock.New(c, name)
		ok, err = r.TryRLock(ctx, 0)
		wantBool(t, "Go reader beside a Java reader", ok, err, true)
		must(t, r.RUnlock(ctx)) // the Java reader keeps the lock
		if rdb.HGet(ctx, name, "mode").Val() != "read" {
			t.Fatal("the Go reader's release freed the Java reader's lock")
		}

		wokenBy(t, c, func() error { return w.Lock(ctx) }, func() {
			// The Java reader unlocks: it deletes the hash and publishes "0".
			rdb.Del(ctx, name, timeoutKey)
			rdb.Publish(ctx, "redisson_rwlock:{"+name+"}", "0")
		}, "the Go writer did not wake on the Java read release")
		must(t, w.Unlock(ctx))
	})

	t.Run("Java writer blocks Go readers", func(t *testing.T) {
		name := redistest.Key(t, "rw")
		rdb.HSet(ctx, name, "mode", "write", javaOwner+":write", 1)
		rdb.PExpire(ctx, name, 30*time.Second)
		r := rwlock.New(c, name)
		ok, err := r.TryRLock(ctx, 0)
		wantBool(t, "Go reader", ok, err, false)

		wokenBy(t, c, func() error { return r.RLock(ctx) }, func() {
			rdb.Del(ctx, name)
			rdb.Publish(ctx, "redisson_rwlock:{"+name+"}", "1")
		}, "the Go reader did not wake on the Java write release")
		must(t, r.RUnlock(ctx))
	})

	t.Run("Go writer blocks a Java reader", func(t *testing.T) {
		name := redistest.Key(t, "rw")
		w := rwlock.New(c, name)
		wctx := redisync.WithOwner(ctx)
		must(t, w.Lock(wctx))
		// What Redisson's read acquire checks: mode, and the writer's field.
		if m := rdb.HGet(ctx, name, "mode").Val(); m != "write" {
			t.Fatalf("mode = %q", m)
		}
		if !rdb.HExists(ctx, name, owner(c, wctx)+":write").Val() {
			t.Fatal("no <owner>:write field")
		}
		must(t, w.Unlock(wctx))
	})
}

// TestLostHold: Done and Err report a read or write hold's loss.
func TestLostHold(t *testing.T) {
	t.Run("deleted under a watchdog read hold", func(t *testing.T) {
		c := newClient(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx := testCtx(t)
		rw := newRW(t, c)
		must(t, rw.RLock(ctx))
		must(t, c.Redis().Del(ctx, rw.Name()).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the hash was deleted")
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
		wantErr(t, "RUnlock after the loss", rw.RUnlock(ctx), redisync.ErrNotHeld)
	})

	t.Run("timeout keys expired under a watchdog read hold", func(t *testing.T) {
		c := newClient(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx, me := ownerCtx(t, c)
		rw := newRW(t, c)
		must(t, rw.RLock(ctx))
		must(t, c.Redis().Del(ctx, keys.RWTimeoutKey(rw.Name(), me, 1)).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the timeout key was deleted")
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
	})

	t.Run("deleted under a watchdog write hold", func(t *testing.T) {
		c := newClient(t, redisync.WithWatchdogTimeout(600*time.Millisecond))
		ctx := testCtx(t)
		rw := newRW(t, c)
		must(t, rw.Lock(ctx))
		must(t, c.Redis().Del(ctx, rw.Name()).Err())
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the hash was deleted")
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
		wantErr(t, "Unlock after the loss", rw.Unlock(ctx), redisync.ErrNotHeld)
	})

	t.Run("fixed lease", func(t *testing.T) {
		c, other := newClient(t), newClient(t)
		ctx := testCtx(t)
		rw := newRW(t, c, rwlock.WithLease(400*time.Millisecond))
		if err := rw.Err(); !errors.Is(err, redisync.ErrNotHeld) {
			t.Fatalf("Err before any acquisition = %v", err)
		}
		select {
		case <-rw.Done():
		default:
			t.Fatal("Done not closed before any acquisition")
		}
		must(t, rw.RLock(ctx))
		if err := rw.Err(); err != nil {
			t.Fatal(err)
		}
		w := rwlock.New(other, rw.Name())
		ok, err := w.TryLock(ctx, 5*time.Second) // gets in when the read lease ends
		wantBool(t, "writer after the read lease", ok, err, true)
		waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the lease")
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
		wantErr(t, "RUnlock after the lease", rw.RUnlock(ctx), redisync.ErrNotHeld)
		must(t, w.Unlock(ctx))
	})

	t.Run("force unlock", func(t *testing.T) {
		c := newClient(t)
		ctx := testCtx(t)
		rw := newRW(t, c)
		must(t, rw.Lock(ctx))
		ok, err := rwlock.New(c, rw.Name()).ForceUnlock(ctx)
		wantBool(t, "ForceUnlock", ok, err, true)
		waitClosed(t, rw.Done(), time.Second, "Done not closed by ForceUnlock")
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
	})

	t.Run("client closed", func(t *testing.T) {
		c := redisync.New(redistest.Shared(t).Client(t))
		ctx := testCtx(t)
		rw := newRW(t, c)
		must(t, rw.RLock(ctx))
		must(t, c.Close())
		<-rw.Done()
		wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
		wantErr(t, "RUnlock after Close", rw.RUnlock(ctx), redisync.ErrClosed)
	})
}

// TestFixedLeaseRead: a partial read release gives the remaining read holds
// a full lease, and the hold ends when that runs out.
func TestFixedLeaseRead(t *testing.T) {
	const lease = 1200 * time.Millisecond
	c := newClient(t)
	ctx, me := ownerCtx(t, c)
	rw := newRW(t, c, rwlock.WithLease(lease))
	must(t, rw.RLock(ctx))
	time.Sleep(lease / 2)
	must(t, rw.RLock(ctx))
	must(t, rw.RUnlock(ctx)) // the first hold's key gets a full lease again
	// Both PTTLs in one transaction, so that time passing between two round
	// trips on a busy machine does not count against the hash.
	var hold, hash *redis.DurationCmd
	_, err := c.Redis().TxPipelined(ctx, func(p redis.Pipeliner) error {
		hold = p.PTTL(ctx, keys.RWTimeoutKey(rw.Name(), me, 1))
		hash = p.PTTL(ctx, rw.Name())
		return nil
	})
	must(t, err)
	d := hold.Val()
	if d < lease/2+lease/10 {
		t.Fatalf("remaining hold's PTTL %v, want about %v", d, lease)
	}
	if ttl := hash.Val(); ttl < d-5*time.Millisecond {
		t.Fatalf("hash PTTL %v shorter than the read hold's %v", ttl, d)
	}
	waitClosed(t, rw.Done(), 5*time.Second, "Done not closed after the lease")
	wantErr(t, "Err", rw.Err(), redisync.ErrLockLost)
	eventually(t, 2*time.Second, func() error {
		if c.Redis().Exists(ctx, rw.Name()).Val() != 0 {
			return errors.New("the hash outlived the lease")
		}
		return nil
	})
}

// TestReentrantWriteTTL: re-entering the write side sets the TTL to the
// larger of what remains and one lease; it does not add them (Redisson does).
func TestReentrantWriteTTL(t *testing.T) {
	const lease = 2 * time.Second
	c := newClient(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy needs a context owner
	rw := newRW(t, c, rwlock.WithLease(lease))
	must(t, rw.Lock(ctx))
	must(t, rw.Lock(ctx))
	must(t, rw.Lock(ctx))
	if d := c.Redis().PTTL(ctx, rw.Name()).Val(); d > lease || d < lease/2 {
		t.Fatalf("PTTL after re-entering %v, want about %v", d, lease)
	}
	for range 3 {
		must(t, rw.Unlock(ctx))
	}
}

func TestNotHeld(t *testing.T) {
	c := newClient(t)
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	reader := rwlock.New(c, name)
	stranger := rwlock.New(c, name)

	wantErr(t, "RUnlock of a free lock", stranger.RUnlock(ctx), redisync.ErrNotHeld)
	wantErr(t, "Unlock of a free lock", stranger.Unlock(ctx), redisync.ErrNotHeld)

	rctx := redisync.WithOwner(ctx)
	must(t, reader.RLock(rctx))
	before := snapshot(t, c.Redis(), name, owner(c, rctx), me)
	wantErr(t, "RUnlock by a non-reader", stranger.RUnlock(ctx), redisync.ErrNotHeld)
	wantErr(t, "Unlock of a read-locked lock", stranger.Unlock(ctx), redisync.ErrNotHeld)
	wantErr(t, "Unlock by the reader", reader.Unlock(rctx), redisync.ErrNotHeld)
	if after := snapshot(t, c.Redis(), name, owner(c, rctx), me); after != before {
		t.Fatalf("state changed: %s -> %s", before, after)
	}
	must(t, reader.RUnlock(rctx))

	wctx := redisync.WithOwner(ctx)
	must(t, reader.Lock(wctx))
	before = snapshot(t, c.Redis(), name, owner(c, wctx), me)
	wantErr(t, "Unlock by a non-writer", stranger.Unlock(ctx), redisync.ErrNotHeld)
	wantErr(t, "RUnlock of a write-locked lock", stranger.RUnlock(ctx), redisync.ErrNotHeld)
	wantErr(t, "RUnlock by the writer without read holds", reader.RUnlock(wctx), redisync.ErrNotHeld)
	if after := snapshot(t, c.Redis(), name, owner(c, wctx), me); after != before {
		t.Fatalf("state changed: %s -> %s", before, after)
	}
	if err := reader.Err(); err != nil {
		t.Fatalf("the writer's hold was hurt by the failed releases: %v", err)
	}
	must(t, reader.Unlock(wctx))
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
			if !errors.Is(err, redisync.ErrInvalidArgument) {
				t.Errorf("%s: %s: err = %v, want ErrInvalidArgument", tc.name, op, err)
			}
		}
	}

	rw := rwlock.New(c, "x")
	_, err := rw.TryRLock(ctx, -time.Second)
	wantErr(t, "TryRLock with a negative wait", err, redisync.ErrInvalidArgument)
	_, err = rw.TryLock(ctx, -time.Second)
	wantErr(t, "TryLock with a negative wait", err, redisync.ErrInvalidArgument)
	_, err = rw.ReadLocker().TryLock(ctx, -time.Second)
	wantErr(t, "ReadLocker().TryLock with a negative wait", err, redisync.ErrInvalidArgument)

	must(t, c.Close())
	for op, err := range calls(rw, ctx, true) {
		if !errors.Is(err, redisync.ErrClosed) {
			t.Errorf("after Close: %s: err = %v, want ErrClosed", op, err)
		}
	}
}

// TestCancelledWait: a wait ended by ctx returns ctx's error and leaves no
// hold and no subscription.
func TestCancelledWait(t *testing.T) {
	c, holderC := newClient(t), newClient(t)
	ctx := testCtx(t)
	name := redistest.Key(t, "rw")
	holder := rwlock.New(holderC, name)
	must(t, holder.Lock(ctx))
	before := snapshot(t, c.Redis(), name)
	rw := rwlock.New(c, name)

	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := rw.RLock(dctx)
	cancel()
	wantErr(t, "RLock", err, context.DeadlineExceeded)

	dctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	err = rw.WriteLocker().Lock(dctx)
	cancel()
	wantErr(t, "Lock", err, context.DeadlineExceeded)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rw.RLock(cctx) }()
	waitWaiters(t, 1, c)
	cancel()
	wantErr(t, "cancelled RLock", <-done, context.Canceled)

	// A TryLock whose wait runs out is not an error.
	ok, err := rw.TryRLock(ctx, 100*time.Millisecond)
	wantBool(t, "TryRLock", ok, err, false)

	noSubscriptions(t, c)
	if after := snapshot(t, c.Redis(), name); after != before {
		t.Fatalf("the cancelled waits changed the lock: %s -> %s", before, after)
	}
	n, err := rw.ReadHoldCount(ctx)
	wantCount(t, "ReadHoldCount", n, err, 0)
	if (*core.Client)(c).WatchdogStats().Holds != 0 {
		t.Fatal("a cancelled wait left a renewed hold")
	}
	if err := rw.Err(); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("Err = %v", err)
	}
	must(t, holder.Unlock(ctx))
}

// TestRetrySafety: a script whose reply is lost runs again (go-redis
// retries); acquisitions and releases are applied once.
func TestRetrySafety(t *testing.T) {
	srv := redistest.Shared(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	c := newProxied(t, proxy, 3)
	ctx, me := ownerCtx(t, c)
	rdb := srv.Client(t)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	dropped := 0
	drop := func() {
		t.Helper()
		must(t, c.Redis().Ping(ctx).Err())
		proxy.DropNextReply()
		dropped++
	}
	check := func(what string) {
		t.Helper()
		if proxy.Dropped() != dropped {
			t.Fatalf("%s: %d replies dropped, want %d", what, proxy.Dropped(), dropped)
		}
	}

	drop()
	must(t, rw.RLock(ctx))
	check("RLock")
	if v := rdb.HGet(ctx, name, me).Val(); v != "1" {
		t.Fatalf("read hold count after a retried RLock = %q, want 1", v)
	}
	if rdb.Exists(ctx, keys.RWTimeoutKey(name, me, 2)).Val() != 0 {
		t.Fatal("a retried RLock made a second timeout key")
	}
	must(t, rw.RLock(ctx))
	drop()
	must(t, rw.RUnlock(ctx))
	check("RUnlock")
	if v := rdb.HGet(ctx, name, me).Val(); v != "1" {
		t.Fatalf("read hold count after a retried RUnlock = %q, want 1", v)
	}
	must(t, rw.RUnlock(ctx))

	drop()
	must(t, rw.Lock(ctx))
	check("Lock")
	if v := rdb.HGet(ctx, name, me+":write").Val(); v != "1" {
		t.Fatalf("write hold count after a retried Lock = %q, want 1", v)
	}
	must(t, rw.Lock(ctx))
	drop()
	must(t, rw.Unlock(ctx))
	check("Unlock")
	if v := rdb.HGet(ctx, name, me+":write").Val(); v != "1" {
		t.Fatalf("write hold count after a retried Unlock = %q, want 1", v)
	}
	must(t, rw.Unlock(ctx))
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock left behind")
	}
}

// TestUndoInterruptedAcquire: an acquisition whose reply is lost and not
// retried is undone, so nothing is left held.
func TestUndoInterruptedAcquire(t *testing.T) {
	srv := redistest.Shared(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	c := newProxied(t, proxy, -1) // no retries: the lost reply is an error
	ctx := testCtx(t)
	rdb := srv.Client(t)
	// Warm up: the client's first request reads the server's clock.
	warm := rwlock.New(c, redistest.Key(t, "warm"))
	must(t, warm.Lock(ctx))
	must(t, warm.Unlock(ctx))

	for _, write := range []bool{false, true} {
		name := redistest.Key(t, "rw")
		rw := rwlock.New(c, name)
		must(t, c.Redis().Ping(ctx).Err())
		proxy.DropNextReply()
		var err error
		if write {
			_, err = rw.TryLock(ctx, 0)
		} else {
			_, err = rw.TryRLock(ctx, 0)
		}
		if err == nil {
			t.Fatalf("write=%v: the acquisition whose reply was lost reported success", write)
		}
		if n := rdb.Exists(ctx, name).Val(); n != 0 {
			t.Fatalf("write=%v: the interrupted acquisition was not undone: %v", write, rdb.HGetAll(ctx, name).Val())
		}
		if (*core.Client)(c).WatchdogStats().Holds != 0 {
			t.Fatalf("write=%v: a hold is renewed", write)
		}
	}
}

func newProxied(t *testing.T, p *redistest.Proxy, retries int) *redisync.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: retries})
	t.Cleanup(func() { _ = rdb.Close() })
	c := redisync.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestForceUnlock(t *testing.T) {
	c := newClient(t)
	waiterC := newClient(t, redisync.WithRecheckInterval(time.Minute))
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	rw := rwlock.New(c, name)

	ok, err := rw.ForceUnlock(ctx)
	wantBool(t, "ForceUnlock of a free lock", ok, err, false)

	// Read mode, two readers with timeout keys; a writer waits.
	must(t, rw.RLock(ctx))
	must(t, rw.RLock(ctx))
	octx := redisync.WithOwner(ctx)
	must(t, rwlock.New(c, name).RLock(octx))
	w := rwlock.New(waiterC, name)
	wokenBy(t, waiterC, func() error { return w.Lock(ctx) }, func() {
		ok, err := rwlock.New(waiterC, name).ForceUnlock(ctx)
		wantBool(t, "ForceUnlock in read mode", ok, err, true)
	}, "ForceUnlock did not wake the waiting writer")
	for _, o := range []string{me, owner(c, octx)} {
		for i := int64(1); i <= 2; i++ {
			if c.Redis().Exists(ctx, keys.RWTimeoutKey(name, o, i)).Val() != 0 {
				t.Fatalf("timeout key %d of %s survived ForceUnlock", i, o)
			}
		}
	}
	wantErr(t, "RUnlock after ForceUnlock", rw.RUnlock(ctx), redisync.ErrNotHeld)

	// Write mode, forced from the writer's client: its hold ends at once.
	ok, err = rwlock.New(waiterC, name).ForceUnlock(ctx)
	wantBool(t, "ForceUnlock in write mode", ok, err, true)
	if c.Redis().Exists(ctx, name).Val() != 0 {
		t.Fatal("ForceUnlock left the hash")
	}
	waitClosed(t, w.Done(), time.Second, "the writer's Done was not closed by ForceUnlock in its client")
}

func TestViews(t *testing.T) {
	c := newClient(t)
	ctx := redisync.WithOwner(testCtx(t)) // reentrancy, downgrade and ErrUpgrade concern context owners
	rw := newRW(t, c)
	var r, w redisync.Locker = rw.ReadLocker(), rw.WriteLocker()

	must(t, r.Lock(ctx))
	ok, err := r.TryLock(ctx, 0)
	wantBool(t, "ReadLocker().TryLock", ok, err, true)
	n, err := rw.ReadHoldCount(ctx)
	wantCount(t, "ReadHoldCount", n, err, 2)
	wantErr(t, "WriteLocker().Lock by a reader", w.Lock(ctx), redisync.ErrUpgrade)
	must(t, r.Unlock(ctx))
	must(t, r.Unlock(ctx))
	wantErr(t, "ReadLocker().Unlock", r.Unlock(ctx), redisync.ErrNotHeld)

	must(t, w.Lock(ctx))
	ok, err = w.TryLock(ctx, 0)
	wantBool(t, "WriteLocker().TryLock", ok, err, true)
	n, err = rw.WriteHoldCount(ctx)
	wantCount(t, "WriteHoldCount", n, err, 2)
	must(t, r.Lock(ctx)) // downgrade through the views
	must(t, w.Unlock(ctx))
	must(t, w.Unlock(ctx))
	ok, err = rw.IsReadLocked(ctx)
	wantBool(t, "IsReadLocked", ok, err, true)
	must(t, r.Unlock(ctx))
	wantErr(t, "WriteLocker().Unlock", w.Unlock(ctx), redisync.ErrNotHeld)
}

// TestContextOwner: handles used with one owner context act for that owner.
func TestContextOwner(t *testing.T) {
	c := newClient(t)
	ctx := redisync.WithOwner(testCtx(t))
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c, name), rwlock.New(c, name)
	must(t, a.Lock(ctx))
	must(t, b.Lock(ctx)) // re-enters: same owner
	must(t, b.RLock(ctx))
	n, err := a.WriteHoldCount(ctx)
	wantCount(t, "WriteHoldCount", n, err, 2)
	must(t, a.Unlock(ctx))
	must(t, a.Unlock(ctx))
	must(t, a.RUnlock(ctx))
	ok, err := b.TryLock(testCtx(t), 0) // b's own owner: a fresh one
	wantBool(t, "TryLock by the handle's own owner", ok, err, true)
	must(t, b.Unlock(testCtx(t)))
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
		must(t, rw.Lock(octx))
		must(t, rw.RLock(octx))
		must(t, rw.RLock(octx))
		got := make(chan error, 1)
		go func() { got <- other.RLock(ctx) }()
		must(t, rw.Unlock(octx))
		must(t, <-got)
		time.Sleep(time.Second) // renewals of read holds in cluster batches
		if err := rw.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		must(t, rw.RUnlock(octx))
		must(t, other.RUnlock(ctx))
		ok, err := other.ForceUnlock(ctx)
		wantBool(t, name+": ForceUnlock", ok, err, true)
		wantErr(t, name+": RUnlock after ForceUnlock", rw.RUnlock(octx), redisync.ErrNotHeld)
	}
}

// TestUndoTombstone: an undo that runs before its acquisition (the
// acquisition was still in flight when the caller gave up) marks it
// cancelled, so the late acquisition takes nothing.
func TestUndoTombstone(t *testing.T) {
	c := newClient(t)
	ctx, me := ownerCtx(t, c)
	rdb := c.Redis()
	cc := (*core.Client)(c)
	for _, write := range []bool{false, true} {
		name := redistest.Key(t, "rw")
		head, tail := keys.RWTimeoutParts(name)
		acquire := keys.Request(name, cc.RequestID())
		ks := []string{name, keys.RWChannel(name), keys.Request(name, cc.RequestID()), acquire}
		field, release, acq, msg := me, lua.RWReadRelease, lua.RWReadAcquire, "0"
		if write {
			field, release, acq, msg = me+":write", lua.RWWriteRelease, lua.RWWriteAcquire, "1"
		}
		n, err := release.Run(ctx, rdb, ks, 30000, field, cc.RequestDeadline(ctx), msg, "1", head, tail).Int64()
		wantCount(t, "undo before the acquisition", n, err, -2)
		res, err := acq.Run(ctx, rdb, []string{name, acquire},
			30000, me, cc.RequestDeadline(ctx), me+":write", keys.RWTimeoutPrefix(name, me)).Int64Slice()
		must(t, err)
		if len(res) != 2 || res[0] != 0 || res[1] != -3 {
			t.Fatalf("write=%v: late acquisition = %v, want [0 -3]", write, res)
		}
		if rdb.Exists(ctx, name).Val() != 0 {
			t.Fatalf("write=%v: the cancelled acquisition took the lock", write)
		}
	}
}

// TestExpiredReaderBesideLive: a reader whose lease ran out while another
// reader kept the lock alive holds nothing: its count reads 0, its RUnlock
// is ErrNotHeld (and removes its leftover field), and its next RLock starts
// from 1.
func TestExpiredReaderBesideLive(t *testing.T) {
	c := newClient(t)
	ctx, me := ownerCtx(t, c)
	name := redistest.Key(t, "rw")
	short := rwlock.New(c, name, rwlock.WithLease(300*time.Millisecond))
	live := rwlock.New(c, name)
	lctx := testCtx(t) // the live reader acts for its handle's own owner
	must(t, live.RLock(lctx))
	must(t, short.RLock(ctx))
	must(t, short.RLock(ctx))
	waitClosed(t, short.Done(), 5*time.Second, "the short lease did not end")
	eventually(t, 2*time.Second, func() error {
		if c.Redis().Exists(ctx, keys.RWTimeoutKey(name, me, 2)).Val() != 0 {
			return errors.New("timeout key alive")
		}
		return nil
	})
	if !c.Redis().HExists(ctx, name, me).Val() {
		t.Fatal("test setup: the expired reader's field is already gone")
	}
	n, err := short.ReadHoldCount(ctx)
	wantCount(t, "ReadHoldCount of the expired reader", n, err, 0)
	wantErr(t, "RUnlock of the expired reader", short.RUnlock(ctx), redisync.ErrNotHeld)
	if c.Redis().HExists(ctx, name, me).Val() {
		t.Fatal("the expired reader's field survived its RUnlock")
	}
	ok, err := live.IsReadLocked(lctx)
	wantBool(t, "IsReadLocked with the live reader", ok, err, true)

	must(t, short.RLock(ctx))
	n, err = short.ReadHoldCount(ctx)
	wantCount(t, "ReadHoldCount after a fresh RLock", n, err, 1)
	must(t, short.RUnlock(ctx))
	must(t, live.RUnlock(lctx))
}
