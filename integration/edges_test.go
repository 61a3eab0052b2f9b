package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// The contract at its edges: what ordinary use broke (API.md, "Changed
// for this round"). Each test names what it once did.

// A second Unlock through a handle whose hold is released is ErrNotHeld and
// changes nothing, even while another handle of the name on the same
// Client holds: once, request A's double Unlock (Unlock, then a deferred
// one) released request B's hold, and another process took the lock
// while B worked. 8 goroutines, a handle each, a second Unlock after each
// Unlock: never two holders.
func TestDoubleUnlockNeverFreesAnotherHold(t *testing.T) {
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	other := clienttest.New(t, s.Client(t)) // another process
	ctx := context.Background()
	name := redistest.Key(t)

	t.Run("sequence", func(t *testing.T) {
		a, b := rlock.New(c, name), rlock.New(c, name)
		require.NoError(t, a.Lock(ctx))
		require.NoError(t, a.Unlock(ctx))
		require.NoError(t, b.Lock(ctx))
		err := a.Unlock(ctx)
		require.ErrorIs(t, err, redisync.ErrNotHeld)
		held, err := b.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held, "B's hold survives A's second Unlock")
		ok, err := rlock.New(other, name).TryLock(ctx, 0)
		require.NoError(t, err)
		assert.False(t, ok, "another process takes B's lock")
		require.NoError(t, b.Unlock(ctx))
	})

	t.Run("never-used handle acts for the Client's hold", func(t *testing.T) {
		// Redisson's habit: getLock(name).unlock() wherever it is needed.
		require.NoError(t, rlock.New(c, name).Lock(ctx))
		require.NoError(t, rlock.New(c, name).Unlock(ctx))
		locked, err := rlock.New(c, name).IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
	})

	t.Run("rwlock sides", func(t *testing.T) {
		a, b := rwlock.New(c, name+"rw"), rwlock.New(c, name+"rw")
		require.NoError(t, a.Lock(ctx))
		require.NoError(t, a.Unlock(ctx))
		require.NoError(t, b.Lock(ctx))
		require.ErrorIs(t, a.Unlock(ctx), redisync.ErrNotHeld)
		locked, err := b.IsWriteLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked)
		require.NoError(t, b.Unlock(ctx))

		require.NoError(t, a.RLock(ctx))
		require.NoError(t, a.RUnlock(ctx))
		require.NoError(t, b.RLock(ctx))
		require.ErrorIs(t, a.RUnlock(ctx), redisync.ErrNotHeld)
		locked, err = b.IsReadLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked)
		require.NoError(t, b.RUnlock(ctx))
	})

	t.Run("8 goroutines", func(t *testing.T) {
		var mu sync.Mutex
		holders, most := 0, 0
		var wg sync.WaitGroup
		deadline := time.Now().Add(700 * time.Millisecond)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					l := rlock.New(c, name+"8")
					if err := l.Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					holders++
					most = max(most, holders)
					mu.Unlock()
					// A peer in another process must find it taken.
					if ok, err := rlock.New(other, name+"8").TryLock(ctx, 0); err != nil || ok {
						t.Errorf("another process took a held lock: %v %v", ok, err)
					}
					mu.Lock()
					holders--
					mu.Unlock()
					require.NoError(t, l.Unlock(ctx))
					if err := l.Unlock(ctx); !errors.Is(err, redisync.ErrNotHeld) {
						t.Errorf("second Unlock: %v, want ErrNotHeld", err)
					}
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, 1, most, "holders at once")
	})
}

// A renewal sent before an Unlock within the minimum hold, and run by
// Redis after it, used to extend the lock a whole lease: with the
// default 30 s lease a job's lock then stayed 30 s. The release keeps the
// field with the count 0, which no renewal extends. The renewal is run
// here as such a late one would run, after the release.
func TestMinHoldReleaseIsNotRenewed(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, rdb)
	ctx := context.Background()
	for _, kind := range []string{"lock", "fair", "owner"} {
		t.Run(kind, func(t *testing.T) {
			name := redistest.Key(t)
			var l interface {
				Lock(context.Context) error
				Unlock(context.Context) error
				Inspect(context.Context) (rlock.Info, error)
			}
			lctx := ctx
			opts := []rlock.Option{rlock.WithMinHold(500 * time.Millisecond), rlock.WithWatchdogTimeout(2 * time.Second)}
			switch kind {
			case "fair":
				l = rlock.NewFair(c, name, opts...)
			case "owner":
				lctx = redisync.WithOwner(ctx)
				l = rlock.New(c, name, opts...)
			default:
				l = rlock.New(c, name, opts...)
			}
			require.NoError(t, l.Lock(lctx))
			info, err := l.Inspect(ctx)
			require.NoError(t, err)
			require.Len(t, info.Holders, 1)
			owner := info.Holders[0].Owner
			require.NoError(t, l.Unlock(lctx))
			// The late renewal: the field with the count the client had.
			// renew_lock's encoding: the lease, one hold, its key and
			// two args (the field and the count).
			require.NoError(t, lua.RenewLock.Run(ctx, rdb, []string{name}, 2000, 1, 1, 2, owner, 1).Err())
			pttl, err := rdb.PTTL(ctx, name).Result()
			require.NoError(t, err)
			assert.LessOrEqual(t, pttl, 500*time.Millisecond, "the lock keeps only the rest of its minimum hold")
			assert.Greater(t, pttl, time.Duration(0))
			info, err = l.Inspect(ctx)
			require.NoError(t, err)
			require.Len(t, info.Holders, 1)
			assert.Equal(t, int64(0), info.Holders[0].Count, "a kept field holds the count 0")
		})
	}
}

// A hand-over after a restart (a new Client with the same id and owner
// token) saw HoldCount 1, called Unlock, got ErrNotHeld, and the lock was
// released. ErrNotHeld changes nothing.
func TestNotHeldChangesNothingOnHandOver(t *testing.T) {
	s := redistest.Shared(t)
	ctx := context.Background()
	name := redistest.Key(t)
	id := uuid.NewString()
	a := redisync.New(s.Client(t), redisync.WithID(id))
	owner := redisync.WithOwner(ctx)
	require.NoError(t, rlock.New(a, name).Lock(owner))
	require.NoError(t, a.Close()) // holds stay in Redis until their lease ends
	token, _ := redisync.OwnerToken(owner)

	b := clienttest.New(t, s.Client(t), redisync.WithID(id))
	handed := redisync.WithOwnerToken(ctx, token)
	n, err := rlock.New(b, name).HoldCount(handed)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	before := redistest.Snapshot(t, s.Client(t), name)
	err = rlock.New(b, name).Unlock(handed)
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.Equal(t, before, redistest.Snapshot(t, s.Client(t), name), "ErrNotHeld left Redis as it was")
	locked, err := rlock.New(b, name).IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
}

// An outage is an error, never "busy": TryLock against a server that
// does not answer returned (false, nil) after its wait, the answer for
// "someone else holds it".
func TestOutageIsAnError(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.NewProxy(t, s.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb, redisync.WithReplicaSync(0, 0))
	ctx := context.Background()
	name := redistest.Key(t)
	// Warm up: the client's clock sample and scripts.
	require.NoError(t, rlock.New(c, name).Lock(ctx))
	require.NoError(t, rlock.New(c, name).Unlock(ctx))
	sem := semaphore.New(c, name+"sem")
	ok, err := sem.TrySetPermits(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	latch := countdown.New(c, name+"latch")
	ok, err = latch.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)

	p.Block()
	defer p.Unblock()
	calls := map[string]func() (bool, error){
		"TryLock":              func() (bool, error) { return rlock.New(c, name).TryLock(ctx, 300*time.Millisecond) },
		"semaphore TryAcquire": func() (bool, error) { return sem.TryAcquire(ctx, 1, 300*time.Millisecond) },
		"latch TryWait":        func() (bool, error) { return latch.TryWait(ctx, 300*time.Millisecond) },
	}
	for what, call := range calls {
		ok, err := call()
		assert.False(t, ok, what)
		assert.Error(t, err, "%s: an outage read as busy", what)
	}

	// A caller behind another of the same Client in the local line: the
	// head's attempt gets no answer, and the one behind, whose wait runs
	// out in the line, is told so, not "busy".
	head := make(chan error, 1)
	go func() {
		_, err := rlock.New(c, name).TryLock(ctx, 1500*time.Millisecond)
		head <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ok, err = rlock.New(c, name).TryLock(ctx, 300*time.Millisecond)
	assert.False(t, ok)
	assert.Error(t, err, "the caller behind the head: an outage read as busy")
	assert.Error(t, <-head)
	semHead := make(chan error, 1)
	go func() {
		_, err := sem.TryAcquire(ctx, 1, 1500*time.Millisecond)
		semHead <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ok, err = sem.TryAcquire(ctx, 1, 300*time.Millisecond)
	assert.False(t, ok)
	assert.Error(t, err, "the semaphore's caller behind the head: an outage read as busy")
	assert.Error(t, <-semHead)
}

// A Redis restart without persistence opened every count-down latch: a
// Wait on a latch set to 5 returned nil once the server came back empty.
// Lost is not opened: the Wait returns ErrStateLost. A latch counted down
// to zero, or deleted, still opens with nil.
func TestLatchLostWithItsServer(t *testing.T) {
	s := redistest.Start(t)
	rdb := s.Client(t, func(o *redis.Options) { o.MaxRetries = 3 })
	c := clienttest.New(t, rdb, redisync.WithRecheckInterval(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	lost := countdown.New(c, "lost")
	ok, err := lost.TrySetCount(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)
	done := make(chan error, 1)
	go func() { done <- lost.Wait(ctx) }()
	time.Sleep(300 * time.Millisecond)
	s.Restart(t)
	select {
	case err := <-done:
		require.ErrorIs(t, err, redisync.ErrStateLost)
	case <-time.After(15 * time.Second):
		t.Fatal("Wait did not return after the restart")
	}

	opened := countdown.New(c, "opened")
	ok, err = opened.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	go func() { done <- opened.Wait(ctx) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, opened.CountDown(ctx))
	require.NoError(t, <-done)
}

// Every Redisson-protocol holder is a holder: node-redisson's owner field
// is "<uuid>:<uuid>", and last round's layout check called its lock "not a
// lock" (ErrWrongType). A Go waiter waits for it; an application's hash
// still gets ErrWrongType.
func TestForeignOwnerIsAHolder(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, rdb)
	ctx := context.Background()
	name := redistest.Key(t)
	field := uuid.NewString() + ":" + uuid.NewString()
	require.NoError(t, rdb.HSet(ctx, name, field, 1).Err())
	require.NoError(t, rdb.PExpire(ctx, name, 400*time.Millisecond).Err())
	l := rlock.New(c, name)
	ok, err := l.TryLock(ctx, 100*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, ok, "held by the foreign client")
	info, err := l.Inspect(ctx)
	require.NoError(t, err)
	require.Len(t, info.Holders, 1)
	assert.Equal(t, field, info.Holders[0].Owner)
	// Its lease runs out: the Go waiter takes it.
	ok, err = l.TryLock(ctx, 2*time.Second)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, l.Unlock(ctx))

	app := redistest.Key(t, "app")
	require.NoError(t, rdb.HSet(ctx, app, "color", "blue").Err())
	_, err = rlock.New(c, app).TryLock(ctx, 0)
	require.ErrorIs(t, err, redisync.ErrWrongType)
}
