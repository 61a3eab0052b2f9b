package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// The write side's queue of waiting Clients (docs/wake.md): a release that
// frees the lock wakes the first live Client queued for the write side, on
// its own channel, not every process waiting to write. Readers still wait
// on the lock's channel. Each Client here stands for a process: its own
// connections.

// queuedWriters returns the ids of the Clients queued for the write side,
// first first.
func queuedWriters(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	return clienttest.Queued(t, rdb, keys.LockWaiters(name))
}

// waitWritersQueued waits until the write side's queue holds n Clients.
func waitWritersQueued(t *testing.T, rdb *redis.Client, name string, n int) {
	t.Helper()
	clienttest.WaitQueued(t, rdb, keys.LockWaiters(name), n)
}

// Writers are woken in the order their Clients joined, one per release,
// and behind a recorded writer nobody listens on the lock's channel.
func TestWriteReleaseWakesTheFirstClientQueued(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	holder := rwlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(ctx))

	var locks []*rwlock.RWLock
	var got []<-chan error
	for i := range 4 {
		l := rwlock.New(clienttest.New(t, s.Client(t)), name)
		locks = append(locks, l)
		got = append(got, clienttest.Async(func() error { return l.Lock(ctx) }))
		waitWritersQueued(t, rdb, name, i+1)
	}
	require.NoError(t, holder.Unlock(ctx))
	for i, l := range locks {
		clienttest.Received(t, got[i], 3*time.Second, "writer in its turn")
		for j := i + 1; j < len(locks); j++ {
			select {
			case err := <-got[j]:
				t.Fatalf("writer %d took the lock (%v) before writer %d released it", j, err, i)
			default:
			}
		}
		if i > 0 {
			n, err := rdb.PubSubNumSub(ctx, keys.RWChannel(name)).Result()
			require.NoError(t, err)
			assert.Zero(t, n[keys.RWChannel(name)], "listeners on the lock's channel behind a recorded writer")
		}
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Empty(t, queuedWriters(t, rdb, name), "nobody left in the queue")
}

// Readers hold and a writer queues: the readers are a holder the queue did
// not record, so the first queued Client also listens on the lock's
// channel; the last read release wakes it at once (the lease is a minute
// long: a re-check would come far later), whether the reader is a
// redisync one (its release wakes the queue) or its release only
// publishes on the lock's channel, as Redisson's does.
func TestLastReadReleaseWakesTheQueuedWriter(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	r1 := rwlock.New(clienttest.New(t, s.Client(t)), name, rwlock.WithLease(time.Minute))
	r2 := rwlock.New(clienttest.New(t, s.Client(t)), name, rwlock.WithLease(time.Minute))
	require.NoError(t, r1.RLock(ctx))
	require.NoError(t, r2.RLock(ctx))

	w := rwlock.New(clienttest.New(t, s.Client(t)), name)
	got := clienttest.Async(func() error { return w.Lock(ctx) })
	waitWritersQueued(t, rdb, name, 1)
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.RWChannel(name)).Result()
		return err == nil && n[keys.RWChannel(name)] == 1
	}, 5*time.Second, 2*time.Millisecond, "the first queued Client listens on the lock's channel behind readers")

	require.NoError(t, r1.RUnlock(ctx))
	select {
	case err := <-got:
		t.Fatalf("the writer got in (%v) while a reader held", err)
	case <-time.After(50 * time.Millisecond):
	}
	start := time.Now()
	require.NoError(t, r2.RUnlock(ctx))
	clienttest.Received(t, got, 3*time.Second, "writer after the last read release")
	assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")
	require.NoError(t, w.Unlock(ctx))
	assert.Empty(t, queuedWriters(t, rdb, name), "nobody left in the queue")
}

// A write release lets every waiting reader in, in every process, and the
// queued writer after them: readers are not queued and still hear the
// lock's channel.
func TestWriteReleaseLetsReadersIn(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	holder := rwlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(ctx))

	w := rwlock.New(clienttest.New(t, s.Client(t)), name)
	wrote := clienttest.Async(func() error { return w.Lock(ctx) })
	waitWritersQueued(t, rdb, name, 1)
	var readers []*rwlock.RWLock
	var read []<-chan error
	for range 3 {
		r := rwlock.New(clienttest.New(t, s.Client(t)), name)
		readers = append(readers, r)
		read = append(read, clienttest.Async(func() error { return r.RLock(ctx) }))
	}
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.RWChannel(name)).Result()
		// the queued writer listens there too: the holder took the
		// lock while nobody waited, unrecorded
		return err == nil && n[keys.RWChannel(name)] == 4
	}, 5*time.Second, 2*time.Millisecond, "three reading processes and the queued writer listen on the lock's channel")

	require.NoError(t, holder.Unlock(ctx))
	// The writer and the readers race for the free lock: either the
	// readers get in together and the writer after the last of them, or
	// the writer does and they follow it.
	select {
	case err := <-wrote:
		require.NoError(t, err)
		require.NoError(t, w.Unlock(ctx))
		for i := range readers {
			clienttest.Received(t, read[i], 3*time.Second, "reader after the writer")
		}
		for _, r := range readers {
			require.NoError(t, r.RUnlock(ctx))
		}
	case <-time.After(3 * time.Second):
		for i := range readers {
			clienttest.Received(t, read[i], time.Second, "reader")
		}
		for _, r := range readers {
			require.NoError(t, r.RUnlock(ctx))
		}
		select {
		case err := <-wrote:
			require.NoError(t, err)
			require.NoError(t, w.Unlock(ctx))
		case <-time.After(3 * time.Second):
			st, _ := rdb.HGetAll(ctx, keys.LockWaitState(name)).Result()
			held, _ := rdb.HGetAll(ctx, name).Result()
			n, _ := rdb.PubSubNumSub(ctx, keys.RWChannel(name)).Result()
			t.Fatalf("the queued writer was not woken by the last read release: queue %v, state %v, lock %v, numsub %v",
				queuedWriters(t, rdb, name), st, held, n)
		}
	}
	assert.Empty(t, queuedWriters(t, rdb, name), "nobody left in the queue")
}

// A writer whose wait is cancelled leaves the queue, and the next Client
// gets the lock at the release, not at its next re-check.
func TestWriterLeavingTheQueuePassesTheWakeOn(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	holder := rwlock.New(clienttest.New(t, s.Client(t)), name, rwlock.WithLease(time.Minute))
	require.NoError(t, holder.Lock(ctx))
	cctx, cancel := context.WithCancel(ctx)
	first := rwlock.New(clienttest.New(t, s.Client(t)), name)
	gave := clienttest.Async(func() error { return first.Lock(cctx) })
	waitWritersQueued(t, rdb, name, 1)
	second := rwlock.New(clienttest.New(t, s.Client(t)), name)
	got := clienttest.Async(func() error { return second.Lock(ctx) })
	waitWritersQueued(t, rdb, name, 2)
	cancel()
	require.ErrorIs(t, <-gave, context.Canceled)
	waitWritersQueued(t, rdb, name, 1)
	start := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	clienttest.Received(t, got, 3*time.Second, "the second writer")
	assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")
	require.NoError(t, second.Unlock(ctx))
}

// ForceUnlock wakes the first queued writer.
func TestForceUnlockWakesTheQueuedWriter(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	holder := rwlock.New(clienttest.New(t, s.Client(t)), name, rwlock.WithLease(time.Minute))
	require.NoError(t, holder.Lock(ctx))
	w := rwlock.New(clienttest.New(t, s.Client(t)), name)
	got := clienttest.Async(func() error { return w.Lock(ctx) })
	waitWritersQueued(t, rdb, name, 1)
	start := time.Now()
	ok, err := rwlock.New(clienttest.New(t, s.Client(t)), name).ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	clienttest.Received(t, got, 3*time.Second, "the queued writer")
	assert.Less(t, time.Since(start), time.Second, "woken by the force unlock, not a re-check")
	require.NoError(t, w.Unlock(ctx))
}
