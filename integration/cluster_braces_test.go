package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 34: on a Cluster, a name whose braces form no hash tag ("a}b",
// "a{}b", "a{b") puts the keys and channels Redisson derives from it
// ({name}: the fencing counter, the fair lock's queue, the read holds'
// timeout keys, the semaphores' channel and timeouts, the rate limiter's
// budget, the lock's channel) in another slot than the name. Most scripts
// then failed with CROSSSLOT, but the read-write lock's acquisitions,
// which build the read holds' timeout keys in Lua, could write the lock
// hash and then fail with Redis's "non local key" error, or succeed
// depending on the node: a partial write. Every primitive whose scripts
// use such keys now refuses such a name on a Cluster client with
// ErrInvalidArgument before sending anything. The latch and the GCRA
// limiter, whose scripts use only the name and request records (which
// keep the name's slot; the latch publishes on its channel itself when it
// is in another slot), work with them. A name with a proper hash tag
// works everywhere.
func TestClusterNamesWithoutHashTag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	c := clienttest.New(t, rdb)
	calls := map[string]func(name string) error{
		"lock TryLock": func(name string) error {
			_, err := rlock.New(c, name).TryLock(ctx, 0)
			return err
		},
		"fenced lock TryLock": func(name string) error {
			_, err := rlock.New(c, name, rlock.WithFencing()).TryLock(redisync.WithOwner(ctx), 0)
			return err
		},
		"fair lock TryLock": func(name string) error { _, err := rlock.NewFair(c, name).TryLock(ctx, 0); return err },
		"spin lock TryLock": func(name string) error { _, err := rlock.NewSpin(c, name).TryLock(ctx, 0); return err },
		"rwlock TryRLock":   func(name string) error { _, err := rwlock.New(c, name).TryRLock(ctx, 0); return err },
		"rwlock TryLock":    func(name string) error { _, err := rwlock.New(c, name).TryLock(ctx, 0); return err },
		"semaphore TrySetPermits": func(name string) error {
			_, err := semaphore.New(c, name).TrySetPermits(ctx, 2)
			return err
		},
		"expirable semaphore SetPermits": func(name string) error {
			return semaphore.NewExpirable(c, name).SetPermits(ctx, 2)
		},
		"rate limiter TrySetRate": func(name string) error {
			_, err := ratelimit.New(c, name).TrySetRate(ctx, ratelimit.Overall, 5, time.Second)
			return err
		},
	}
	for _, name := range []string{"a}b", "a{}b", "a{b"} {
		name := name + ":" + t.Name()
		require.True(t, keys.StrayBraces(name), name)
		require.NotEqual(t, keys.Slot(name), keys.Slot(keys.FenceCounter(name)), "%s: the fencing counter shares the name's slot", name)
		before := keysInCluster(ctx, t, rdb)
		for what, call := range calls {
			err := call(name)
			require.ErrorIs(t, err, redisync.ErrInvalidArgument, "%s %q", what, name)
			assert.ErrorContains(t, err, "hash tag", "%s %q", what, name)
		}
		require.Equal(t, before, keysInCluster(ctx, t, rdb), "%q: a refused call wrote something", name)
		l := countdown.New(c, name)
		ok, err := l.TrySetCount(ctx, 2)
		require.NoError(t, err, "latch %q", name)
		require.True(t, ok, "latch %q", name)
		require.NoError(t, l.CountDown(ctx), "latch %q", name)
		n, err := l.Count(ctx)
		require.NoError(t, err, "latch %q", name)
		require.EqualValues(t, 1, n, "latch %q", name)
		_, err = l.Delete(ctx)
		require.NoError(t, err, "latch %q", name)
		res, err := ratelimit.NewGCRA(c, name, ratelimit.Limit{Rate: 5, Period: time.Second, Burst: 5}).AllowN(ctx, 1)
		require.NoError(t, err, "gcra %q", name)
		require.EqualValues(t, 1, res.Allowed, "gcra %q", name)
	}
	for what, call := range calls {
		tagged := "x{" + t.Name() + "}y:" + what
		assert.NoError(t, call(tagged), "%s %q", what, tagged)
	}
}

// keysInCluster counts the keys on every master of the cluster.
func keysInCluster(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) int64 {
	t.Helper()
	var n atomic.Int64
	require.NoError(t, rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		k, err := m.DBSize(ctx).Result()
		n.Add(k)
		return err
	}))
	return n.Load()
}
