package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// After a planned SENTINEL FAILOVER the former primary stays a primary,
// with the waiters' pub/sub connection on it, until Sentinel reconfigures
// it some seconds later (issue 33: work stalled for up to 4.5 s while
// permits were free). A release published on the new primary in that
// window reaches no waiter. The Client's pub/sub connection must follow the
// primary and wake every waiter to re-check: here a lock and a permit are
// released on the new primary right after +switch-master, and both waiters
// (re-check interval a minute) must get through well before Sentinel
// reconfigures the former primary (before the fix they got through only
// then, 10.2 s after the release).
func TestWaitersWakeAfterPlannedFailover(t *testing.T) {
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	old, next := sn.Master, sn.Replicas[0]
	noSync := redisync.WithReplicaSync(0, 0) // this test is about wake-ups
	holder := clienttest.New(t, sn.Client(t), noSync)
	waiting := clienttest.New(t, sn.Client(t), noSync, redisync.WithRecheckInterval(time.Minute))
	name := redistest.Key(t)

	require.NoError(t, rlock.New(holder, name+":lock", rlock.WithLease(5*time.Minute)).Lock(ctx))
	sem := semaphore.New(holder, name+":sem")
	_, err := sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))

	lockErr, semErr := make(chan error, 1), make(chan error, 1)
	go func() { lockErr <- rlock.New(waiting, name+":lock").Lock(ctx) }()
	go func() { semErr <- semaphore.New(waiting, name+":sem").Acquire(ctx, 1) }()
	clienttest.WaitWaiters(t, 2, waiting)
	old.Do(t, "WAIT", 1, 5000) // the replica has the lock and the semaphore

	sc := redis.NewSentinelClient(&redis.Options{Addr: sn.SentinelAddr})
	t.Cleanup(func() { _ = sc.Close() })
	switched := sc.Subscribe(ctx, "+switch-master")
	t.Cleanup(func() { _ = switched.Close() })
	_, err = switched.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	require.NoError(t, sc.Failover(ctx, redistest.SentinelMasterName).Err())
	msg, err := switched.ReceiveMessage(ctx)
	require.NoError(t, err, "+switch-master")
	t.Logf("+switch-master %s", msg.Payload)

	// Released on the new primary, through a Client on it directly, while
	// the former primary still is one.
	direct := clienttest.New(t, next.Client(t), noSync)
	start := time.Now()
	released, err := rlock.New(direct, name+":lock").ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, released, "the lock was held on the new primary")
	require.NoError(t, semaphore.New(direct, name+":sem").Release(ctx, 1))

	const bound = 15 * time.Second // against a re-check interval of a minute
	for _, w := range []struct {
		what string
		errc chan error
	}{{"the lock's waiter", lockErr}, {"the semaphore's waiter", semErr}} {
		select {
		case err := <-w.errc:
			require.NoError(t, err, w.what)
			woken := time.Since(start).Round(time.Millisecond)
			role, _ := old.Do(t, "ROLE").([]any)
			t.Logf("%s woken %v after the release (former primary's role then: %v)", w.what, woken, role[0])
			// Without the fix the waiters got through only when Sentinel
			// reconfigured the former primary (about 10 s after the switch),
			// which kills its clients' connections: the reconnect woke them.
			require.Equal(t, "master", role[0], "%s woken only once Sentinel reconfigured the former primary", w.what)
		case <-time.After(bound - time.Since(start)):
			t.Fatalf("%s: not woken within %v of the release after the failover", w.what, bound)
		}
	}
}
