package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// The counted semaphore's queue of waiting Clients (docs/wake.md): a
// release wakes the first live Client queued, on its own channel, not
// every waiting process; an acquisition that leaves permits wakes the
// next. Each Client here stands for a process: its own connections, and a
// re-check interval of a minute, so that a waiter that gets through
// within a second was woken, not re-checking.

// queuedClients returns the ids of the Clients in the semaphore's queue,
// first first.
func queuedClients(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	return clienttest.Queued(t, rdb, keys.SemaphoreWaiters(name))
}

// waitQueued waits until the semaphore's queue holds n Clients.
func waitQueued(t *testing.T, rdb *redis.Client, name string, n int) {
	t.Helper()
	clienttest.WaitQueued(t, rdb, keys.SemaphoreWaiters(name), n)
}

// process returns a handle on the semaphore called name through a Client
// of its own.
func process(t *testing.T, s *redistest.Server, name string) *Semaphore {
	return New(clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute)), name)
}

// acquireAsync acquires n permits of sem on ctx in a goroutine; the
// channel gets its result.
func acquireAsync(ctx context.Context, sem *Semaphore, n int64) <-chan error {
	return clienttest.Async(func() error { return sem.Acquire(ctx, n) })
}

// notYet fails when got has a result.
func notYet(t *testing.T, got <-chan error, what string) {
	t.Helper()
	select {
	case err := <-got:
		t.Fatalf("%s got through (%v) out of turn", what, err)
	default:
	}
}

// A release of one permit wakes the first Client queued, and only it;
// the Clients get through in the order they queued, and the Client first
// in the queue alone listens on the semaphore's channel.
func TestSemaphoreReleaseWakesTheFirstClientQueued(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	var got []<-chan error
	for i := range 4 {
		got = append(got, acquireAsync(ctx, process(t, s, name), 1))
		waitQueued(t, rdb, name, i+1)
	}
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.SemaphoreChannel(name)).Result()
		return err == nil && n[keys.SemaphoreChannel(name)] == 1
	}, 5*time.Second, 2*time.Millisecond, "the first queued Client alone listens on the semaphore's channel")

	releaser := process(t, s, name)
	for i := range got {
		require.NoError(t, releaser.Release(ctx, 1))
		clienttest.Received(t, got[i], 3*time.Second, "the Client first in the queue")
		time.Sleep(20 * time.Millisecond) // a wrongly woken Client would get the next permit meanwhile
		for j := i + 1; j < len(got); j++ {
			notYet(t, got[j], "a Client behind the first")
		}
	}
	assert.Empty(t, queuedClients(t, rdb, name), "nobody left in the queue")
	assert.EqualValues(t, 0, available(t, releaser))
}

// A release of n permits lets n queued Clients through, one after the
// other (each acquisition that leaves permits wakes the next); a Client
// first in the queue that needs more than are available passes the
// wake-up on to the next, which may need fewer.
func TestSemaphoreReleaseChainsThroughTheQueue(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()

	t.Run("n permits, n Clients", func(t *testing.T) {
		name := redistest.Key(t, "sem")
		var got []<-chan error
		for i := range 4 {
			got = append(got, acquireAsync(ctx, process(t, s, name), 1))
			waitQueued(t, rdb, name, i+1)
		}
		start := time.Now()
		require.NoError(t, process(t, s, name).Release(ctx, 4))
		for i := range got {
			clienttest.Received(t, got[i], 3*time.Second, "a queued Client")
		}
		assert.Less(t, time.Since(start), time.Second, "woken in a chain, not by re-checks")
		assert.Empty(t, queuedClients(t, rdb, name))
	})

	t.Run("the first needs more", func(t *testing.T) {
		name := redistest.Key(t, "sem")
		big := acquireAsync(ctx, process(t, s, name), 3)
		waitQueued(t, rdb, name, 1)
		small := acquireAsync(ctx, process(t, s, name), 1)
		waitQueued(t, rdb, name, 2)
		releaser := process(t, s, name)
		start := time.Now()
		require.NoError(t, releaser.Release(ctx, 1))
		clienttest.Received(t, small, 3*time.Second, "the Client behind, which needs one")
		assert.Less(t, time.Since(start), time.Second, "woken by the first, not by a re-check")
		notYet(t, big, "the Client that needs three")
		require.NoError(t, releaser.Release(ctx, 3))
		clienttest.Received(t, big, 3*time.Second, "the Client that needs three")
	})
}

// A release that knows nothing of the queue (a Redisson client's, which
// publishes the new count on redisson_sc:{name} only; AddPermits) wakes
// the Client first in the queue, which listens there.
func TestSemaphoreForeignReleaseWakesTheFirst(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	first := acquireAsync(ctx, process(t, s, name), 1)
	waitQueued(t, rdb, name, 1)
	second := acquireAsync(ctx, process(t, s, name), 1)
	waitQueued(t, rdb, name, 2)
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.SemaphoreChannel(name)).Result()
		return err == nil && n[keys.SemaphoreChannel(name)] == 1
	}, 5*time.Second, 2*time.Millisecond, "the first queued Client listens on the semaphore's channel")

	// As Redisson's release does: INCRBY and PUBLISH of the new count.
	start := time.Now()
	v, err := rdb.IncrBy(ctx, name, 1).Result()
	require.NoError(t, err)
	require.NoError(t, rdb.Publish(ctx, keys.SemaphoreChannel(name), v).Err())
	clienttest.Received(t, first, 3*time.Second, "the first queued Client")
	assert.Less(t, time.Since(start), time.Second, "woken by the foreign release")
	notYet(t, second, "the second Client")

	// The second is first now and listens on the channel: AddPermits, which
	// publishes there only, wakes it.
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.SemaphoreChannel(name)).Result()
		return err == nil && n[keys.SemaphoreChannel(name)] == 1
	}, 5*time.Second, 2*time.Millisecond, "the new first listens on the semaphore's channel")
	start = time.Now()
	require.NoError(t, process(t, s, name).AddPermits(ctx, 1))
	clienttest.Received(t, second, 3*time.Second, "the second Client")
	assert.Less(t, time.Since(start), time.Second, "woken by AddPermits")
	assert.Empty(t, queuedClients(t, rdb, name))
}

// A Client whose wait ends without permits leaves the queue, and the
// wake-up it may have been given passes on.
func TestSemaphoreLeavingTheQueuePassesTheWakeOn(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	cctx, cancel := context.WithCancel(ctx)
	gave := acquireAsync(cctx, process(t, s, name), 1)
	waitQueued(t, rdb, name, 1)
	got := acquireAsync(ctx, process(t, s, name), 1)
	waitQueued(t, rdb, name, 2)
	cancel()
	require.ErrorIs(t, <-gave, context.Canceled)
	waitQueued(t, rdb, name, 1)
	start := time.Now()
	require.NoError(t, process(t, s, name).Release(ctx, 1))
	clienttest.Received(t, got, 3*time.Second, "the second Client")
	assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")

	// A timed-out TryAcquire leaves too.
	ok, err := process(t, s, name).TryAcquire(ctx, 1, 100*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	waitQueued(t, rdb, name, 0)
}

// The expirable semaphore of a name shares the counted one's queue: its
// waiters queue in it, a release of an expirable permit wakes the first
// queued Client, and a counted release wakes a queued expirable waiter.
func TestExpirableSemaphoreQueues(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	expirable := func() *ExpirableSemaphore {
		return NewExpirable(clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute)), name)
	}
	holder := expirable()
	require.NoError(t, holder.SetPermits(ctx, 1))
	id, err := holder.Acquire(ctx, time.Minute)
	require.NoError(t, err)

	type got struct {
		id  string
		err error
	}
	first := make(chan got, 1)
	go func() {
		id, err := expirable().Acquire(ctx, time.Minute)
		first <- got{id, err}
	}()
	waitQueued(t, rdb, name, 1)
	second := acquireAsync(ctx, process(t, s, name), 1) // a counted waiter behind it
	waitQueued(t, rdb, name, 2)

	start := time.Now()
	require.NoError(t, holder.Release(ctx, id))
	var g got
	select {
	case g = <-first:
		require.NoError(t, g.err)
	case <-time.After(3 * time.Second):
		t.Fatal("the queued expirable waiter was not woken by the expirable release")
	}
	assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")
	notYet(t, second, "the counted waiter behind it")

	start = time.Now()
	require.NoError(t, expirable().Release(ctx, g.id))
	clienttest.Received(t, second, 3*time.Second, "the counted waiter")
	assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")
	assert.Empty(t, queuedClients(t, rdb, name))
}

// A queued acquisition that got its permits keeps its Client's channel
// subscribed for a second, out of the queue (docs/wake.md, "The
// subscription lingers"); the Client's next wait takes it back.
func TestSemaphoreSubscriptionLingers(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	c := clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute))
	sem := New(c, name)
	releaser := process(t, s, name)
	wake := keys.SemaphoreWakePrefix(name) + c.ID()
	numsub := func() int64 {
		n, err := rdb.PubSubNumSub(ctx, wake).Result()
		require.NoError(t, err)
		return n[wake]
	}
	for round := range 2 {
		got := acquireAsync(ctx, sem, 1)
		waitQueued(t, rdb, name, 1)
		require.NoError(t, releaser.Release(ctx, 1))
		clienttest.Received(t, got, 3*time.Second, "the queued Client")
		assert.Empty(t, queuedClients(t, rdb, name), "round %d: out of the queue", round)
		assert.Equal(t, int64(1), numsub(), "round %d: the channel stays subscribed", round)
	}
	require.Eventually(t, func() bool { return numsub() == 0 }, 3*time.Second, 10*time.Millisecond,
		"unsubscribed once it has lingered")
}
