package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// javaAt runs redisson352 (the Java stand-in) once for the Overall budget
// at the Java clock now (epoch ms): nil when it granted n, else the delay
// in ms it returned.
func javaAt(t *testing.T, rdb redis.UniversalClient, name string, n, now int64, random string) any {
	t.Helper()
	v, err := redisson352.Run(context.Background(), rdb, []string{name, keys.RateValue(name),
		keys.RateClientValue(name, "java"), keys.RatePermits(name), keys.RateClientPermits(name, "java")},
		n, now, random).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	require.NoError(t, err)
	return v
}

// The Java stand-in follows Redisson 3.52's rules, that the mixed tests
// rely on: a grant scored s is given back at exactly s + interval (its
// ZRANGEBYSCORE from 0 to now - interval includes the bound), and its keys
// expire with keepAliveTime, or else with the hash.
func TestRedissonStandInRules(t *testing.T) {
	c := clienttest.Shared(t)
	ctx := context.Background()
	rdb := rdbOf(c)
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Second, WithKeepAlive(time.Hour)))
	const t0 = int64(1_700_000_000_000)
	require.Nil(t, javaAt(t, rdb, name, 1, t0, "aaaaaaaaaaaaaaaa"), "granted at t0")
	assert.Equal(t, int64(4), javaAt(t, rdb, name, 1, t0+999, "bbbbbbbbbbbbbbbb"),
		"1 ms before t0 + interval: still counted (delay 3 + interval - age)")
	require.Nil(t, javaAt(t, rdb, name, 1, t0+1000, "cccccccccccccccc"), "given back at t0 + interval")

	for _, k := range []string{name, keys.RateValue(name), keys.RatePermits(name)} {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, 59*time.Minute, k)
		assert.LessOrEqual(t, ttl, time.Hour, k)
	}
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Second))
	require.NoError(t, rdb.PExpire(ctx, name, 30*time.Minute).Err())
	require.Nil(t, javaAt(t, rdb, name, 1, t0, "dddddddddddddddd"))
	for _, k := range []string{keys.RateValue(name), keys.RatePermits(name)} {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, 29*time.Minute, k)
		assert.LessOrEqual(t, ttl, 30*time.Minute, k)
	}
}
