package redisync_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 34: the README said that on a Cluster a name whose braces form no
// hash tag puts Redisson's derived keys in another slot, countdown's doc
// that the calls fail with CROSSSLOT because of the request records. On a
// real Cluster: redisync's request records share the name's slot
// (keys.Request), but the keys Redisson derives with {name} (the fencing
// counter, the fair lock's queue, the expirable semaphore's timeouts,
// which the semaphore's scripts also declare, the rate limiter's budget)
// do not, so every script that declares one fails with CROSSSLOT and
// changes nothing. A latch (its channel travels as an argument) and a GCRA
// limiter (one key) work with such names. A name with a proper hash tag
// works everywhere. (The read-write lock's scripts build their timeout
// keys in Lua: they fail or not depending on which node serves that
// slot, so the test does not run them.)
func TestClusterNamesWithoutHashTag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	c := clienttest.New(t, rdb)
	calls := map[string]func(name string) error{
		"fenced lock TryLock": func(name string) error {
			_, err := rlock.New(c, name, rlock.WithFencing()).TryLock(redisync.WithOwner(ctx), 0)
			return err
		},
		"fair lock TryLock": func(name string) error { _, err := rlock.NewFair(c, name).TryLock(ctx, 0); return err },
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
		require.Equal(t, keys.Slot(name), keys.Slot(keys.Request(name, "x")), "%s: the request key is in another slot", name)
		require.NotEqual(t, keys.Slot(name), keys.Slot(keys.FenceCounter(name)), "%s: the fencing counter shares the name's slot", name)
		for what, call := range calls {
			assert.ErrorContains(t, call(name), "CROSSSLOT", "%s %q", what, name)
			n, err := rdb.Exists(ctx, name).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "%s %q left its key behind", what, name)
		}
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
