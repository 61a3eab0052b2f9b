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

// Regression (the hour-long netcluster fault run: a MultiLock's member and
// a read hold gone a few hundred milliseconds after they were taken). A
// release of an owner that no longer held the lock (its hold had ended in
// a partition) answered "not held" without recording it; a copy of that
// same request delivered later (TCP's retransmission once the partition
// healed, or a go-redis re-send), after the same owner — a context owner,
// or a handle's own, which a MultiLock's members and the read-write lock
// use — held the lock again, found the owner's field and released the new
// hold. A "not held" answer is now recorded like any other, so the later
// copy replays it and changes nothing.
func TestLateReleaseCopyLeavesTheOwnersNextHold(t *testing.T) {
	rdb := redistest.Shared(t).Client(t)
	const owner = "c:1"
	cases := []struct {
		kind    string
		hold    func(ctx context.Context, name string) error
		release func(ctx context.Context, name, req string, deadline int64) (int64, error)
	}{
		{"lock", func(ctx context.Context, name string) error {
			return rdb.HSet(ctx, name, owner, "1").Err()
		}, func(ctx context.Context, name, req string, deadline int64) (int64, error) {
			return lua.LockReleaseArgs{Lock: name, Channel: "redisson_lock__channel:{" + name + "}", Request: req,
				LeaseMillis: 30000, Field: owner, Deadline: deadline, Message: "0", Count: 0,
				Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
		}},
		{"write lock", func(ctx context.Context, name string) error {
			return rdb.HSet(ctx, name, "mode", "write", owner+":write", "1").Err()
		}, func(ctx context.Context, name, req string, deadline int64) (int64, error) {
			return lua.RWWriteReleaseArgs{Lock: name, Channel: "redisson_rwlock:{" + name + "}", Request: req,
				LeaseMillis: 30000, Field: owner + ":write", Deadline: deadline, Message: "0",
				TimeoutHead: "{" + name + "}:", TimeoutTail: ":rwlock_timeout", Count: 0,
				Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
		}},
		{"read lock", func(ctx context.Context, name string) error {
			if err := rdb.HSet(ctx, name, "mode", "read", owner, "1").Err(); err != nil {
				return err
			}
			return rdb.Set(ctx, "{"+name+"}:"+owner+":rwlock_timeout:1", "1", time.Minute).Err()
		}, func(ctx context.Context, name, req string, deadline int64) (int64, error) {
			return lua.RWReadReleaseArgs{Lock: name, Channel: "redisson_rwlock:{" + name + "}", Request: req,
				LeaseMillis: 30000, Field: owner, Deadline: deadline, Message: "0",
				TimeoutHead: "{" + name + "}:", TimeoutTail: ":rwlock_timeout", Count: 0,
				Publish: "publish"}.Run(ctx, lua.Direct{Client: rdb})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			name := redistest.Key(t)
			req := "req:{" + name + "}:r1"
			deadline := serverMillis(t, rdb) + 60000
			n, err := tc.release(ctx, name, req, deadline)
			require.NoError(t, err)
			require.Equal(t, int64(-1), n, "the owner holds nothing: not held")

			require.NoError(t, tc.hold(ctx, name), "the same owner holds the lock again")
			require.NoError(t, rdb.PExpire(ctx, name, time.Minute).Err())
			n, err = tc.release(ctx, name, req, deadline)
			require.NoError(t, err)
			assert.Equal(t, int64(-1), n, "the late copy replays the first answer")
			assert.Equal(t, int64(1), rdb.Exists(ctx, name).Val(), "the owner's new hold is left alone")
		})
	}
}
