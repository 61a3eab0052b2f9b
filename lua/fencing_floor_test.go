package lua_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

// Issue 38: the handoff takes the next owner's token above every earlier
// one when the counter was lost (evicted, a restart without persistence)
// or is behind (a failover to a replica that missed the last INCR): the
// counter is raised to the server's clock in microseconds. Before, the
// INCR of a missing counter answered 1.
func TestHandoffTokenAboveLostCounter(t *testing.T) {
	t.Parallel()
	rdb := redistest.Shared(t).Client(t)
	for _, tc := range []struct {
		what    string
		counter func(ctx context.Context, k string, last int64) error
	}{
		{"missing counter", func(ctx context.Context, k string, _ int64) error { return rdb.Del(ctx, k).Err() }},
		{"counter behind", func(ctx context.Context, k string, last int64) error { return rdb.Set(ctx, k, last-1, 0).Err() }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			name := redistest.Key(t)
			counter := "redisson_lock_token:{" + name + "}"
			prefix := "req:{" + name + "}:"
			handoff := func(from, to string) lua.LockHandoffReply {
				t.Helper()
				rep, err := lua.LockHandoffArgs{Lock: name, Request: prefix + from, NextRequest: prefix + to,
					Channel: "redisson_lock__channel:{" + name + "}", Counter: counter,
					FieldAt: int64(len(prefix) + 1), NextFieldAt: int64(len(prefix) + 1),
					MarkUntil: serverMillis(t, rdb) + 60000, NextLeaseMillis: 30000, Message: "0",
					Fenced: true, Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
				require.NoError(t, err)
				require.EqualValues(t, lua.LockHandoffHandedOver, rep.Acquired)
				return rep
			}
			require.NoError(t, rdb.HSet(ctx, name, "c:1", "1").Err())
			first := handoff("c:1", "c:2").Fence
			now, err := rdb.Time(ctx).Result()
			require.NoError(t, err)
			assert.LessOrEqual(t, first, now.UnixMicro(), "the token is the server's clock in microseconds")
			assert.Greater(t, first, now.Add(-time.Minute).UnixMicro(), "the token is the server's clock in microseconds")

			require.NoError(t, tc.counter(ctx, counter, first))
			next := handoff("c:2", "c:3").Fence
			assert.Greater(t, next, first, "the token went backwards")
			v, err := rdb.Get(ctx, counter).Int64()
			require.NoError(t, err)
			assert.Equal(t, next, v, "the counter (Redisson's key) is at the last token")
			require.NoError(t, rdb.Del(ctx, name).Err())
		})
	}
}
