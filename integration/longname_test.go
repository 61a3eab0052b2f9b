package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// Regression: a request record repeated the primitive's full name, so a
// 1 MiB name left a 1 MiB key for each call, kept tens of seconds after
// it (a cancelled call's too). Records of a long name now hold its first
// bytes and a digest: after a lock (with and without a context owner),
// a semaphore's acquire and release and a latch's count-down on 1 MiB
// names, the only large keys left are the primitives' own.
func TestLongNameRequestRecords(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	c := clienttest.New(t, s.Client(t), redisync.WithKeyPrefix("app:"))
	long := strings.Repeat("n", 1<<20)
	start := time.Now()

	l := rlock.New(c, "lock:"+long)
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	owner := redisync.WithOwner(ctx)
	require.NoError(t, l.Lock(owner))
	require.NoError(t, l.Unlock(owner))
	sem := semaphore.New(c, "sem:"+long)
	_, err := sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))
	require.NoError(t, sem.Release(ctx, 1))
	latch := countdown.New(c, "latch:"+long)
	_, err = latch.TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, latch.CountDown(ctx))
	t.Logf("the calls on 1 MiB names took %v", time.Since(start))

	rdb := s.Client(t)
	var records, large []string
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasPrefix(k, "redisync_request:") {
			records = append(records, k)
			assert.Less(t, len(k), 200, "a request record %.60q… of %d bytes", k, len(k))
		}
		if len(k) > 1<<10 {
			large = append(large, k[:20])
		}
	}
	require.NoError(t, iter.Err())
	assert.NotEmpty(t, records)
	assert.ElementsMatch(t, []string{"app:sem:nnnnnnnnnnnn", "app:latch:nnnnnnnnnn"}, large,
		"the semaphore's and the latch's own keys alone are large")
	used, err := rdb.Info(ctx, "memory").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(used, "\n") {
		if strings.HasPrefix(line, "used_memory_human:") {
			t.Logf("%d request records; %s", len(records), strings.TrimSpace(line))
		}
	}
}
