package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// KillMasterNow promotes the killed master's replica at once; whileDown
// reads the replica before the promotion; the killed master, restarted
// with the append-only file ClusterServerArgs turned on, comes back with
// its data as the new master's replica.
func TestClusterKillMasterNow(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1),
		redistest.ClusterServerArgs("--appendonly", "yes", "--appendfsync", "always"))
	ctx := context.Background()
	cc := c.Client(t)
	key := "{" + redistest.Key(t) + "}"
	slot := int(c.Servers[0].Do(t, "CLUSTER", "KEYSLOT", key).(int64))
	m := c.MasterOf(t, slot)
	require.NoError(t, cc.Set(ctx, key, "v", 0).Err())
	require.Equal(t, any(int64(1)), m.Do(t, "WAIT", 1, 5000))
	r := c.ReplicaOf(t, m)

	readOnly := func(s *redistest.Server) string {
		cl := s.Client(t)
		conn := cl.Conn()
		defer conn.Close()
		require.NoError(t, conn.ReadOnly(ctx).Err())
		v, err := conn.Get(ctx, key).Result()
		if err == redis.Nil {
			return ""
		}
		require.NoError(t, err)
		return v
	}
	var whileDown string
	next := c.KillMasterNow(t, m, r, func() { whileDown = readOnly(r) })
	require.Equal(t, "v", whileDown)
	require.Equal(t, r, next)
	require.Equal(t, r, c.MasterOf(t, slot))
	got, err := c.Client(t).Get(ctx, key).Result() // a new client: cc's slot map is stale
	require.NoError(t, err)
	require.Equal(t, "v", got)

	m.Restart(t)
	c.WaitStable(t)
	require.Equal(t, m, c.ReplicaOf(t, r))
	require.Equal(t, "v", readOnly(m), "kept by the AOF, then synchronised")
}
