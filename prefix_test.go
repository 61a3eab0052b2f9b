package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// WithKeyPrefix (issue 40 item 3) on a single node: every key and channel
// of every primitive carries the prefix, in Redisson's layout for the
// prefixed name; Name returns the name as given; a second Client with the
// prefix shares the lock, one without it does not.
func TestKeyPrefix(t *testing.T) {
	s := redistest.Start(t)
	testKeyPrefix(t, func() redis.UniversalClient { return s.Client(t) })
}

// The same on a Cluster: the prefixed names keep every primitive's keys
// in one slot (the scripts would fail with CROSSSLOT otherwise), and the
// waiters' sharded subscriptions are on the prefixed channels.
func TestKeyPrefixCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	testKeyPrefix(t, func() redis.UniversalClient { return cl.Client(t) })
}

func testKeyPrefix(t *testing.T, newRedis func() redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const prefix = "svc7:"
	opts := []redisync.Option{redisync.WithKeyPrefix(prefix), redisync.WithRecheckInterval(time.Minute)}
	c1 := clienttest.New(t, newRedis(), append(opts, redisync.WithID("worker-1"))...)
	c2 := clienttest.New(t, newRedis(), opts...)
	plain := clienttest.New(t, newRedis(), redisync.WithRecheckInterval(time.Minute))
	admin := newRedis()
	name := redistest.Key(t)

	// A lock: the hash and fencing counter carry the prefix; Name does not.
	l := rlock.New(c1, name+":lock", rlock.WithFencing())
	assert.Equal(t, name+":lock", l.Name())
	require.NoError(t, l.Lock(ctx))
	assert.EqualValues(t, 1, admin.Exists(ctx, prefix+name+":lock").Val())
	assert.EqualValues(t, 0, admin.Exists(ctx, name+":lock").Val())
	assert.EqualValues(t, 1, admin.Exists(ctx, "redisson_lock_token:{"+prefix+name+":lock}").Val())

	// A second Client with the prefix shares it; one without does not.
	ok, err := rlock.New(c2, name+":lock").TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a Client with the same prefix took a held lock")
	other := rlock.New(plain, name+":lock")
	ok, err = other.TryLock(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "a Client without the prefix is refused a lock of another name")
	require.NoError(t, other.Unlock(ctx))

	// A waiter of the second Client subscribes to the prefixed channel and
	// is woken by the release (the re-check is a minute away).
	errc := make(chan error, 1)
	w := rlock.New(c2, name+":lock")
	go func() { errc <- w.Lock(ctx) }()
	clienttest.WaitWaiters(t, 1, c2)
	assert.Contains(t, channels(t, ctx, admin), "redisson_lock__channel:{"+prefix+name+":lock}")
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, <-errc)
	require.NoError(t, w.Unlock(ctx))

	// Every other primitive, then every key left in Redis carries the prefix.
	f := rlock.NewFair(c1, name+":fair")
	require.NoError(t, f.Lock(ctx))
	fw := rlock.NewFair(c2, name+":fair")
	errf := make(chan error, 1)
	go func() { errf <- fw.Lock(ctx) }() // a queue entry under the prefixed name
	clienttest.WaitWaiters(t, 1, c2)
	rw := rwlock.New(c1, name+":rw")
	require.NoError(t, rw.RLock(redisync.WithOwner(ctx)))
	sem := semaphore.New(c1, name+":sem")
	_, err = sem.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 1))
	exp := semaphore.NewExpirable(c1, name+":exp")
	_, err = exp.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	_, err = exp.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	latch := countdown.New(c1, name+":latch")
	_, err = latch.TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, latch.CountDown(ctx))
	for _, typ := range []ratelimit.RateType{ratelimit.Overall, ratelimit.PerClient} {
		lim := ratelimit.New(c1, fmt.Sprintf("%s:rate%d", name, typ))
		_, err = lim.TrySetRate(ctx, typ, 5, time.Minute)
		require.NoError(t, err)
		ok, err := lim.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		assert.True(t, ok)
	}
	g := ratelimit.NewGCRA(c1, name+":gcra", ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 2})
	_, err = g.AllowN(ctx, 1)
	require.NoError(t, err)
	m := multilock.New(rlock.New(c1, name+":m1"), rlock.New(c1, name+":{m2}"))
	require.NoError(t, m.Lock(ctx))

	want := []string{
		prefix + name + ":fair", "redisson_lock_queue:{" + prefix + name + ":fair}", prefix + name + ":rw", prefix + name + ":sem", prefix + name + ":exp",
		"{" + prefix + name + ":exp}:timeout", prefix + name + ":latch",
		prefix + name + ":rate0", "{" + prefix + name + ":rate0}:value",
		"{" + prefix + name + ":rate1}:value:worker-1",
		prefix + name + ":gcra", prefix + name + ":m1", prefix + name + ":{m2}",
		"redisync:client:{" + prefix + "worker-1}",
	}
	got := allKeys(t, ctx, admin)
	for _, k := range want {
		assert.Contains(t, got, k)
	}
	var rwTimeout bool
	for _, k := range got {
		if strings.Contains(k, "{"+name+":lock}") {
			continue // the release mark of the Client without the prefix
		}
		match, _ := path.Match("*"+prefix+"*", k)
		assert.True(t, match, "key %q does not carry the prefix", k)
		rwTimeout = rwTimeout || strings.HasPrefix(k, "{"+prefix+name+":rw}:") && strings.Contains(k, ":rwlock_timeout:")
	}
	assert.True(t, rwTimeout, "no read hold timeout key under the prefixed name in %v", got)
	for _, ch := range channels(t, ctx, admin) {
		assert.Contains(t, ch, prefix, "channel %q does not carry the prefix", ch)
	}
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, f.Unlock(ctx))
	require.NoError(t, <-errf)
	require.NoError(t, fw.Unlock(ctx))
}

// An invalid prefix (a brace would move the derived keys to other slots)
// fails every operation with ErrInvalidArgument before anything is sent.
func TestKeyPrefixInvalid(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	for _, p := range []string{"a{", "}b", "{x}", strings.Repeat("p", 257)} {
		c := redisync.New(s.Client(t), redisync.WithKeyPrefix(p))
		_, err := rlock.New(c, "x").TryLock(ctx, 0)
		assert.True(t, errors.Is(err, redisync.ErrInvalidArgument), "prefix %q: %v", p, err)
		_, err = semaphore.New(c, "x").TrySetPermits(ctx, 1)
		assert.True(t, errors.Is(err, redisync.ErrInvalidArgument), "prefix %q: %v", p, err)
		require.NoError(t, c.Close())
	}
	// The empty name stays invalid under a prefix.
	c := clienttest.New(t, s.Client(t), redisync.WithKeyPrefix("app:"))
	_, err := rlock.New(c, "").TryLock(ctx, 0)
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}

// forEachMaster runs f on every master of a Cluster, or on the node.
func forEachMaster(ctx context.Context, rdb redis.UniversalClient, f func(ctx context.Context, n *redis.Client) error) error {
	if cl, ok := rdb.(*redis.ClusterClient); ok {
		return cl.ForEachMaster(ctx, f)
	}
	return f(ctx, rdb.(*redis.Client))
}

// allKeys returns every key of every master, sorted.
func allKeys(t *testing.T, ctx context.Context, rdb redis.UniversalClient) []string {
	var mu = make(chan struct{}, 1)
	var all []string
	require.NoError(t, forEachMaster(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		ks, err := n.Keys(ctx, "*").Result()
		mu <- struct{}{}
		all = append(all, ks...)
		<-mu
		return err
	}))
	sort.Strings(all)
	return all
}

// channels returns the channels with subscribers on every master, classic
// and sharded.
func channels(t *testing.T, ctx context.Context, rdb redis.UniversalClient) []string {
	var mu = make(chan struct{}, 1)
	var all []string
	require.NoError(t, forEachMaster(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		cs, err := n.PubSubChannels(ctx, "*").Result()
		if err != nil {
			return err
		}
		ss, err := n.PubSubShardChannels(ctx, "*").Result()
		mu <- struct{}{}
		all = append(all, cs...)
		all = append(all, ss...)
		<-mu
		return err
	}))
	return all
}
