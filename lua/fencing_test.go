package lua_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

// serverMillis is the server's clock in epoch milliseconds.
func serverMillis(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	return now.UnixMilli()
}

// Regression (issue 25): the scripts that take a fencing token wrote the
// lock (or released the previous hold, or dropped queued waiters) before
// the INCR of a counter of another type failed. Those with writes before
// their INCR now check the counter first: lock_handoff (the release of the
// previous hold) and fair_acquire (dead waiters dropped, its own queue
// entry removed).
func TestFencingCounterOfAnotherTypeChangesNothing(t *testing.T) {
	rdb := redistest.Shared(t).Client(t)
	counters := map[string]func(ctx context.Context, k string) error{
		"hash":   func(ctx context.Context, k string) error { return rdb.HSet(ctx, k, "f", "v").Err() },
		"list":   func(ctx context.Context, k string) error { return rdb.RPush(ctx, k, "a").Err() },
		"string": func(ctx context.Context, k string) error { return rdb.Set(ctx, k, "not a number", 0).Err() },
	}
	for kind, setCounter := range counters {
		t.Run("handoff with a "+kind+" counter", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			name := redistest.Key(t)
			counter := "redisson_lock_token:{" + name + "}"
			require.NoError(t, setCounter(ctx, counter))
			require.NoError(t, rdb.HSet(ctx, name, "c:1", "1").Err())
			require.NoError(t, rdb.PExpire(ctx, name, time.Minute).Err())
			prefix := "req:{" + name + "}:"
			before := redistest.Snapshot(t, rdb, name)
			_, err := lua.LockHandoffArgs{Lock: name, Request: prefix + "c:1", NextRequest: prefix + "c:2",
				Channel: "redisson_lock__channel:{" + name + "}", Counter: counter,
				FieldAt: int64(len(prefix) + 1), NextFieldAt: int64(len(prefix) + 1),
				MarkUntil: serverMillis(t, rdb) + 60000, NextLeaseMillis: 30000, Message: "0",
				Fenced: true, Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
			require.Error(t, err)
			assert.Regexp(t, `^(WRONGTYPE|REDISYNC_WRONGTYPE)`, err.Error())
			assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "nothing changed: the first hold is still there")
		})
		t.Run("fair acquire with a "+kind+" counter", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			name := redistest.Key(t)
			counter := "redisson_lock_token:{" + name + "}"
			queue, timeouts := "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}"
			require.NoError(t, setCounter(ctx, counter))
			// A dead waiter at the head (its deadline passed), then the
			// caller, queued earlier: an acquisition would drop the first
			// and take the caller out of the queue before its INCR.
			require.NoError(t, rdb.RPush(ctx, queue, "c:dead", "c:1").Err())
			require.NoError(t, rdb.ZAdd(ctx, timeouts, redis.Z{Score: 1, Member: "c:dead"},
				redis.Z{Score: float64(serverMillis(t, rdb) + 60000), Member: "c:1"}).Err())
			before := redistest.Snapshot(t, rdb, name)
			_, err := lua.FairAcquireArgs{Lock: name, Queue: queue, Timeouts: timeouts,
				ChannelPrefix: "redisson_lock__channel:{" + name + "}", Request: "req:{" + name + "}:1", Counter: counter,
				LeaseMillis: 30000, Field: "c:1", Deadline: serverMillis(t, rdb) + 60000, Fenced: true, Count: 1,
				WaiterTimeoutMillis: 5000, Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
			require.Error(t, err)
			assert.Regexp(t, `^(WRONGTYPE|REDISYNC_WRONGTYPE)`, err.Error())
			assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "nothing changed: no waiter dropped, no lock taken")
		})
	}
}
