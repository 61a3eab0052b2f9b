package rwlock_test

import (
	"context"
	"math/rand/v2"
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
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rwlock"
)

// writerLineLen returns how many writers of c line up for the rwlock name.
func writerLineLen(c *redisync.Client, name string) int {
	return (*core.Client)(c).Lines().Len(core.LockLine("rwlock", name))
}

// scriptCounter is a go-redis hook that counts the calls of one script.
type scriptCounter struct {
	script *redis.Script
	n      atomic.Int64
}

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if clienttest.ScriptIs(cmd.Args(), h.script) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Issue 16: the writers of one client line up locally, only the head waits
// in Redis, and when the next writer waits in the same client Unlock hands
// it the write side in one script (no PUBLISH, no waiter woken to try):
// the hash stays in write mode, with the next writer's fresh field. A copy
// of that script delivered later changes nothing.
func TestUnlockHandsWriteSideOverInProcess(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.Shared(t)
	c, rec := clienttest.Recorded(t, s)
	rdb := s.Client(t)
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c, name), rwlock.New(c, name)
	// Both wait behind a reader of another client, so that b waits
	// already when a's hold begins a chain of handoffs.
	other := rwlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, other.RLock(ctx))
	gotA := make(chan error, 1)
	go func() { gotA <- a.Lock(ctx) }()
	require.Eventually(t, func() bool { return writerLineLen(c, name) == 1 }, 5*time.Second, time.Millisecond)
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	require.Eventually(t, func() bool { return writerLineLen(c, name) == 2 }, 5*time.Second, time.Millisecond)
	clienttest.WaitWaiters(t, 1, c) // only the head subscribes
	require.NoError(t, other.RUnlock(ctx))
	require.NoError(t, <-gotA)
	fieldA := writerField(t, rdb, name)

	// b, now at the head of the line, takes a moment to get ready for a
	// handoff (its turn, its offer): until then the unlock would publish.
	require.Eventually(t, func() bool {
		return (*core.Client)(c).Lines().HeadAccepts(core.LockLine("rwlock", name))
	}, 5*time.Second, time.Millisecond, "b ready for a handoff")
	rec.Reset()
	require.NoError(t, a.Unlock(ctx))
	handoff := rec.Last()
	require.True(t, clienttest.ScriptIs(handoff, lua.RWWriteHandoff), "the unlock was not a handoff: %v", handoff)
	require.NoError(t, <-got)
	fieldB := writerField(t, rdb, name)
	assert.NotEqual(t, fieldA, fieldB, "b holds the write side with a field of its own")
	n, err := b.WriteHoldCount(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "b's WriteHoldCount")
	assert.NoError(t, b.Err())
	select {
	case <-a.Done():
	default:
		t.Fatal("a's hold did not end")
	}
	assert.Zero(t, writerLineLen(c, name), "the line is gone once empty")

	res, err := rdb.Do(ctx, handoff...).Int64Slice()
	require.NoError(t, err, "a copy while the handed hold lasts")
	assert.Equal(t, []int64{0, 1}, res, "a re-sent handoff answers as the first")
	assert.Equal(t, fieldB, writerField(t, rdb, name), "a copy of the handoff changed the hold")
	require.NoError(t, b.Unlock(ctx))
	res, err = rdb.Do(ctx, handoff...).Int64Slice()
	require.NoError(t, err, "a copy after the handed hold ended")
	assert.Equal(t, []int64{0, 0}, res)
	assert.Zero(t, rdb.Exists(ctx, name).Val(), "a copy of the handoff took the lock again")
}

// Issue 16: with fresh write holds, a local line and handoffs, one rwlock
// stays a read-write lock: 2 clients, each with one handle shared by its
// goroutines (as a sync.RWMutex) and a handle per goroutine, mixing reads
// and writes. No writer overlaps a reader or another writer, readers
// overlap, and writers were handed the write side in-process.
func TestFreshWritersAndReadersExclude(t *testing.T) {
	t.Parallel()
	const (
		clients    = 2
		goroutines = 4
		steps      = 40
	)
	ctx := testCtx(t)
	s := redistest.Shared(t)
	name := redistest.Key(t, "rw")
	handoffs := &scriptCounter{script: lua.RWWriteHandoff}
	var chk checker
	var wg sync.WaitGroup
	for range clients {
		rdb := s.Client(t)
		rdb.AddHook(handoffs)
		c := clienttest.New(t, rdb)
		shared := rwlock.New(c, name)
		for range goroutines {
			own := rwlock.New(c, name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range steps {
					rw := own
					if i%2 == 0 {
						rw = shared
					}
					if rand.IntN(3) != 0 {
						if !assert.NoError(t, rw.Lock(ctx)) {
							return
						}
						chk.enter(true)
						chk.leave(true)
						if !assert.NoError(t, rw.Unlock(ctx)) {
							return
						}
						continue
					}
					if !assert.NoError(t, rw.RLock(ctx)) {
						return
					}
					chk.enter(false)
					time.Sleep(time.Millisecond) // work inside, so that readers overlap
					chk.leave(false)
					if !assert.NoError(t, rw.RUnlock(ctx)) {
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	chk.mu.Lock()
	defer chk.mu.Unlock()
	t.Logf("%d reads (up to %d at once), %d writes, %d handoffs", chk.reads, chk.maxReaders, chk.writes, handoffs.n.Load())
	assert.Empty(t, chk.violations[:min(len(chk.violations), 10)], "%d violations in all", len(chk.violations))
	assert.Equal(t, clients*goroutines*steps, chk.reads+chk.writes, "every step completed")
	assert.Zero(t, chk.readers+chk.writers, "holders left inside")
	assert.Positive(t, handoffs.n.Load(), "no writer was handed the write side")
	assert.Zero(t, s.Client(t).Exists(ctx, name).Val(), "the lock is left held")
}

// Issue 16: a chain of write handoffs does not starve readers: a reader of
// another client, and one of this client, get in while this client's
// writers keep asking for the write side.
func TestWriteHandoffsLetReadersIn(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.Shared(t)
	name := redistest.Key(t, "rw")
	busy := clienttest.New(t, s.Client(t))
	var x clienttest.Exclusion
	stop := clienttest.Hammer(t, ctx, 4, func() redisync.Locker { return rwlock.New(busy, name) }, &x)
	require.Eventually(t, func() bool { return x.Total() > 50 }, 10*time.Second, time.Millisecond)

	for _, reader := range []*rwlock.RWLock{
		rwlock.New(clienttest.New(t, s.Client(t)), name), // another process
		rwlock.New(busy, name),                           // this client
	} {
		for range 3 {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := reader.RLock(wctx)
			cancel()
			require.NoError(t, err, "a reader starved by a chain of write handoffs")
			assert.Zero(t, x.Inside(), "a reader got in beside a writer")
			require.NoError(t, reader.RUnlock(ctx))
		}
	}
	stop()
	assert.EqualValues(t, 1, x.Most(), "two writers at once")
}

// Issue 16: a writer whose wait ends (ctx) while the write side is being
// handed to it either returns holding it or holds nothing: no hold is left
// behind in Redis or in the client, and no line entry.
func TestWriteHandoffRacingCancelLeavesNothing(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t, "rw")
	a, b := rwlock.New(c, name), rwlock.New(c, name)
	clienttest.HandoffRacingCancel(t, testCtx(t), c, a, b,
		func() int { return writerLineLen(c, name) }, a.IsWriteLocked)
}
