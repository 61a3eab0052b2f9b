package rlock_test

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
)

// A waiter whose re-checks fail on the way to Redis (here a partition
// longer than its read timeout, as in a Cluster failover) keeps waiting
// and gets the lock once Redis answers again and the holder releases it,
// instead of returning the network error.
func TestWaitRidesOutTransientErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, s.Client(t)), name, rlock.WithLease(time.Minute))
	require.NoError(t, holder.Lock(ctx))

	wc, proxy := clienttest.Proxied(t, s, redis.Options{ReadTimeout: 100 * time.Millisecond, MaxRetries: -1},
		redisync.WithRecheckInterval(50*time.Millisecond))
	got := make(chan error, 1)
	go func() { got <- rlock.New(wc, name).Lock(ctx) }()
	clienttest.WaitWaiters(t, 1, wc)

	proxy.Block() // every re-check meanwhile times out
	time.Sleep(500 * time.Millisecond)
	proxy.CutAll()
	proxy.Unblock()
	select {
	case err := <-got:
		require.FailNow(t, "the wait ended during the partition", "err: %v", err)
	default:
	}
	require.NoError(t, holder.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err, "the waiter's Lock after the partition")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the waiter did not get the lock after the partition")
	}
}
