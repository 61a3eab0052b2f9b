package ratelimit

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// limiterKeys returns the keys of the limiter called name (its request
// records left out).
func limiterKeys(t *testing.T, c *redisync.Client, name string) []string {
	t.Helper()
	left, err := rdbOf(c).Keys(context.Background(), "*"+name+"*").Result()
	require.NoError(t, err)
	return slices.DeleteFunc(left, func(k string) bool { return strings.HasPrefix(k, "redisync_request:") })
}

// Regression: Delete leaked the PerClient keys of clients that only called
// AvailablePermits or Release. Both scripts create {name}:value:<id>
// (settling the budget), but only the acquire script added the id to the
// registry {name}:clients that Delete reads, so those keys stayed, with no
// expiry.
func TestDeleteRemovesKeysOfAvailableAndRelease_PerClientLeak(t *testing.T) {
	ctx := context.Background()
	a, b, c := clienttest.Shared(t), clienttest.Shared(t), clienttest.Shared(t)
	name := redistest.Key(t, "rl")
	require.NoError(t, New(a, name).SetRate(ctx, PerClient, 3, time.Hour))
	n, err := New(b, name).AvailablePermits(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.NoError(t, New(c, name).Release(ctx, 1))
	assert.ElementsMatch(t, []string{b.ID(), c.ID()}, rdbOf(a).SMembers(ctx, keys.RateClients(name)).Val(),
		"registered")

	ok, err := New(a, name).Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, limiterKeys(t, a, name), "keys left")
}

// The PerClient keys that AvailablePermits and Release create, and the
// registry, expire with the keep-alive as those an acquisition creates do.
func TestAvailableAndReleaseKeepAlive_PerClient(t *testing.T) {
	ctx := context.Background()
	a, b := clienttest.Shared(t), clienttest.Shared(t)
	rdb := rdbOf(a)
	name := redistest.Key(t, "rl")
	require.NoError(t, New(a, name).SetRate(ctx, PerClient, 3, time.Minute, WithKeepAlive(time.Hour)))
	_, err := New(a, name).AvailablePermits(ctx)
	require.NoError(t, err)
	require.NoError(t, New(b, name).Release(ctx, 1))
	got := limiterKeys(t, a, name)
	assert.ElementsMatch(t, []string{name, keys.RateClients(name),
		keys.RateClientValue(name, a.ID()), keys.RateClientValue(name, b.ID())}, got)
	for _, k := range got {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, 59*time.Minute, k)
		assert.LessOrEqual(t, ttl, time.Hour, k)
	}

	// Without a keep-alive, they take the hash's expiry, if any.
	require.NoError(t, New(a, name).SetRate(ctx, PerClient, 3, time.Minute))
	require.NoError(t, rdb.PExpire(ctx, name, 30*time.Minute).Err())
	_, err = New(b, name).AvailablePermits(ctx)
	require.NoError(t, err)
	for _, k := range []string{keys.RateClients(name), keys.RateClientValue(name, b.ID())} {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, 29*time.Minute, k)
		assert.LessOrEqual(t, ttl, 30*time.Minute, k)
	}
}

// Regression: Delete left the PerClient budgets of Redisson (Java)
// clients, which never join the registry {name}:clients: two Java clients
// and a Go client take a permit each on a limiter set up from Java (the
// four fields HSETNX'd, as Redisson's trySetRate does), and after Delete
// no key of the limiter remains. Keys that match a budget's name but not
// its type or shape are not the limiter's, and stay.
func TestDeleteRemovesJavaClientsKeys_PerClient(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t)
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	for f, v := range map[string]any{"rate": 2, "interval": time.Hour.Milliseconds(), "type": int(PerClient), "keepAliveTime": 0} {
		require.NoError(t, rdb.HSetNX(ctx, name, f, v).Err())
	}
	for _, id := range []string{"5f0c2a8e-java-0001", "5f0c2a8e-java-0002"} {
		v, err := javaAcquire(t, rdb, name, id, 1)
		require.NoError(t, err)
		require.Nil(t, v, "granted to "+id)
	}
	ok, err := New(c, name).TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, limiterKeys(t, c, name), 1+2*3+1, "the hash, three clients' pairs and the registry")
	others := map[string]func(string) error{
		keys.RateClientValue(name, "not-a-budget"):   func(k string) error { return rdb.HSet(ctx, k, "f", "v").Err() },
		keys.RateClientPermits(name, "not-a-budget"): func(k string) error { return rdb.Set(ctx, k, "v", 0).Err() },
		keys.RateClientValue(name, "x:y"):            func(k string) error { return rdb.Set(ctx, k, "1", 0).Err() },
	}
	for k, set := range others {
		require.NoError(t, set(k))
		t.Cleanup(func() { rdb.Del(context.Background(), k) })
	}

	ok, err = New(c, name).Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.ElementsMatch(t, slices.Collect(maps.Keys(others)), limiterKeys(t, c, name), "keys left")

	ok, err = New(c, name).Delete(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing left to delete")
}
