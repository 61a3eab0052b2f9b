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

// A release published while a waiter's pub/sub connection is down is lost
// (issue 33: waiters stalled until their re-check after a failover). When
// the connection is back and its channels subscribed again, every waiter
// re-checks at once: here the waiters get the lock and the permit although
// their re-check interval is a minute and the test's bound is 30 s.
func TestWaitersRecheckWhenPubSubIsBack(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proxy := redistest.NewProxy(t, s.Addr())
	admin := clienttest.New(t, s.Client(t))
	waiting := clienttest.New(t, s.Client(t, func(o *redis.Options) { o.Addr = proxy.Addr() }),
		redisync.WithRecheckInterval(time.Minute))
	name := redistest.Key(t)

	l := rlock.New(admin, name+":lock")
	require.NoError(t, l.Lock(ctx))
	sem := semaphore.New(admin, name+":sem")
	_, err := sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))

	lockErr, semErr := make(chan error, 1), make(chan error, 1)
	go func() { lockErr <- rlock.New(waiting, name+":lock").Lock(ctx) }()
	go func() { semErr <- semaphore.New(waiting, name+":sem").Acquire(ctx, 1) }()
	clienttest.WaitWaiters(t, 2, waiting)

	// The waiters' connections go down and stay down (Block holds what
	// they send) while the lock and the permit are released: both
	// messages reach no subscriber.
	proxy.Block()
	proxy.CutAll()
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, sem.Release(ctx, 1))
	proxy.Unblock()

	waitDone(t, "the lock's waiter", lockErr)
	waitDone(t, "the semaphore's waiter", semErr)
}
