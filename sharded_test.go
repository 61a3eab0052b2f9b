package redisync_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
)

// The publish command per deployment and mode: classic on a single node
// whatever the mode; on a Redis 7 Cluster, sharded unless ShardedOff.
// Constructors send nothing: the probe is the first call's.
func TestShardedMode(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	single := redistest.Shared(t)
	for _, tc := range []struct {
		name string
		rdb  func() redis.UniversalClient
		mode redisync.ShardedMode
		want string
	}{
		{"single auto", func() redis.UniversalClient { return single.Client(t) }, redisync.ShardedAuto, "publish"},
		{"single on", func() redis.UniversalClient { return single.Client(t) }, redisync.ShardedOn, "publish"},
		{"cluster auto", func() redis.UniversalClient { return cl.Client(t) }, redisync.ShardedAuto, "spublish"},
		{"cluster on", func() redis.UniversalClient { return cl.Client(t) }, redisync.ShardedOn, "spublish"},
		{"cluster off", func() redis.UniversalClient { return cl.Client(t) }, redisync.ShardedOff, "publish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.rdb()
			var n redistest.Counter
			rdb.AddHook(&n)
			c := redisync.New(rdb, redisync.WithShardedPubSub(tc.mode))
			defer c.Close()
			assert.Zero(t, n.Load(), "New sends nothing")
			got, err := (*core.Client)(c).PublishCommand(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			sent := n.Load()
			if tc.name == "cluster auto" {
				assert.Positive(t, sent, "auto probes the cluster")
			} else {
				assert.Zero(t, sent, "no probe needed")
			}
			_, err = (*core.Client)(c).PublishCommand(ctx)
			require.NoError(t, err)
			assert.Equal(t, sent, n.Load(), "the decision is kept")
		})
	}
	assert.Equal(t, "auto", redisync.ShardedAuto.String())
	c := redisync.New(single.Client(t), redisync.WithShardedPubSub(redisync.ShardedMode(7)))
	defer c.Close()
	require.ErrorIs(t, (*core.Client)(c).Check(), redisync.ErrInvalidArgument)
}
