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

// Regression (issue 25): fair_force_unlock deleted the lock before it read
// the queue, so a queue of another type failed the script after the lock
// was gone. The queue is read (fair_prune) before anything is written.
func TestFairForceUnlockQueueOfAnotherTypeChangesNothing(t *testing.T) {
	rdb := redistest.Shared(t).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name := redistest.Key(t)
	queue, timeouts := "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}"
	require.NoError(t, rdb.HSet(ctx, name, "c:1", "1").Err())
	require.NoError(t, rdb.PExpire(ctx, name, time.Minute).Err())
	require.NoError(t, rdb.Set(ctx, queue, "not a queue", 0).Err())
	before := redistest.Snapshot(t, rdb, name)
	_, err := lua.FairForceUnlockArgs{Lock: name, Queue: queue, Timeouts: timeouts,
		ChannelPrefix: "redisson_lock__channel:{" + name + "}", Publish: "publish",
		Deadline: serverMillis(t, rdb) + 60000, RequestPrefix: "req:{" + name + "}:", MarkTTLMillis: 60000,
	}.Run(ctx, lua.Direct{Client: rdb})
	require.Error(t, err)
	assert.Regexp(t, `^WRONGTYPE`, err.Error())
	assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "nothing changed: the lock is still there")
}
