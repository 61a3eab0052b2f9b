package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// The lock's queue of waiting Clients (docs/wake.md) across a Sentinel
// failover and a Cluster slot migration: three Clients (processes) queued
// behind a holder, with a re-check interval of a minute, each get the lock
// in turn, woken by the release before theirs, after the queue moved with
// the data (replicated, or migrated with the slot) and their own channels
// were subscribed again on the new primary.

// queuedClients starts n Clients, made by newClient, each locking name
// once it is queued behind the ones before; the channel gets the index of
// each that got the lock, which it releases 50 ms later. wait waits for
// the n to be done (before the Clients close).
func queuedClients(t *testing.T, n int, name string, queued func() int, newClient func() *redisync.Client) (got <-chan int, wait func()) {
	ctx := context.Background()
	gotc := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		l := rlock.New(newClient(), name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			gotc <- i
			time.Sleep(50 * time.Millisecond)
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		}()
		require.Eventually(t, func() bool { return queued() == i+1 }, 10*time.Second, 5*time.Millisecond, "client %d queued", i)
	}
	return gotc, wg.Wait
}

// inTurn expects the n queued Clients to get the lock, each within bound
// of the one before (the first: of now), in the order they queued.
func inTurn(t *testing.T, got <-chan int, n int, bound time.Duration, what string) {
	t.Helper()
	for want := range n {
		select {
		case i := <-got:
			require.Equal(t, want, i, "%s: the clients get the lock in the order they queued", what)
		case <-time.After(bound):
			t.Fatalf("%s: client %d not woken within %v", what, want, bound)
		}
	}
}

func TestQueuedClientsAcrossSentinelFailover(t *testing.T) {
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	ctx := context.Background()
	noSync := redisync.WithReplicaSync(0, 0) // this test is about wake-ups
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, sn.Client(t), noSync), name, rlock.WithLease(time.Minute))
	require.NoError(t, holder.Lock(ctx))
	rdb := sn.Client(t)
	got, wait := queuedClients(t, 3, name, func() int {
		return int(rdb.ZCard(ctx, keys.LockWaiters(name)).Val())
	}, func() *redisync.Client {
		return clienttest.New(t, sn.Client(t), noSync, redisync.WithRecheckInterval(time.Minute))
	})
	sn.Master.Do(t, "WAIT", 1, 5000) // the replica has the lock and its queue
	next := sn.Failover(t)
	require.Eventually(t, func() bool {
		v, _ := next.Do(t, "ZCARD", keys.LockWaiters(name)).(int64)
		return v == 3
	}, 15*time.Second, 10*time.Millisecond, "the queue on the new primary")
	require.Eventually(t, func() bool {
		v, _ := next.Do(t, "PUBSUB", "CHANNELS", "redisync_lock_wake:*").([]any)
		return len(v) == 3
	}, 15*time.Second, 10*time.Millisecond, "the queued clients listen on the new primary")
	require.Eventually(t, func() bool { return holder.Unlock(ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	inTurn(t, got, 3, 5*time.Second, "after the Sentinel failover")
	wait()
}

func TestQueuedClientsAcrossSlotMigration(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	sharded := redisync.WithShardedPubSub(redisync.ShardedOn)
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, cl.Client(t), sharded), name, rlock.WithLease(time.Minute))
	require.NoError(t, holder.Lock(ctx))
	rdb := cl.Client(t)
	got, wait := queuedClients(t, 3, name, func() int {
		return int(rdb.ZCard(ctx, keys.LockWaiters(name)).Val())
	}, func() *redisync.Client {
		return clienttest.New(t, cl.Client(t), sharded, redisync.WithRecheckInterval(time.Minute))
	})

	slot := keys.Slot(name)
	from := cl.MasterOf(t, slot)
	to := cl.Servers[(slices.Index(cl.Servers, from)+1)%len(cl.Servers)]
	cl.MigrateSlot(t, slot, to)
	require.Eventually(t, func() bool {
		v, _ := to.Do(t, "PUBSUB", "SHARDCHANNELS", "redisync_lock_wake:*").([]any)
		return len(v) == 3
	}, 10*time.Second, 10*time.Millisecond, "the queued clients listen on the slot's new master")
	require.NoError(t, holder.Unlock(ctx))
	inTurn(t, got, 3, 5*time.Second, "after the slot migration")
	wait()
}
