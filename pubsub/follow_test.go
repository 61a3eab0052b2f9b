package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// On a failover client the classic connection follows the primary after a
// planned SENTINEL FAILOVER, before Sentinel reconfigures the former
// primary (which stays a primary, with the connection on it, for some
// seconds after +switch-master), and the re-subscription wakes the waiter
// to re-check: messages published on the new primary meanwhile were lost
// (issue 33). Messages published on the new primary reach the waiter. A
// key's keyspace notifications (Keyspace), on the same connection, follow
// it too.
func TestFollowsThePrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1),
		redistest.SentinelServerArgs("--notify-keyspace-events", "Kgx"))
	old, next := sn.Master, sn.Replicas[0]
	m := newMux(t, sn.Client(t), pubsub.Options{})
	ch := redistest.Key(t)
	w, err := m.Subscribe(ctx, ch, pubsub.WakeOne)
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, int64(1), numSub(t, old.Client(t), ch))
	key := redistest.Key(t, "key")
	kw, err := m.Keyspace(ctx, key)
	require.NoError(t, err)
	defer kw.Close()

	sc := redis.NewSentinelClient(&redis.Options{Addr: sn.SentinelAddr})
	t.Cleanup(func() { _ = sc.Close() })
	switched := sc.Subscribe(ctx, "+switch-master")
	t.Cleanup(func() { _ = switched.Close() })
	_, err = switched.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, sc.Failover(ctx, redistest.SentinelMasterName).Err())
	_, err = switched.ReceiveMessage(ctx)
	require.NoError(t, err, "+switch-master")

	newRDB := next.Client(t)
	require.Eventually(t, func() bool { return numSub(t, newRDB, ch) == 1 },
		15*time.Second, 10*time.Millisecond, "the subscription moves to the new primary")
	role, _ := old.Do(t, "ROLE").([]any)
	assert.Equal(t, "master", role[0], "moved only once Sentinel reconfigured the former primary")
	assert.True(t, woken(w, 10*time.Second), "the re-subscription wakes the waiter")

	require.NoError(t, newRDB.Publish(ctx, ch, "x").Err())
	assert.True(t, woken(w, 10*time.Second), "a message on the new primary wakes the waiter")

	_ = kw.Events()
	require.NoError(t, newRDB.Set(ctx, key, "x", 0).Err())
	require.NoError(t, newRDB.Del(ctx, key).Err())
	assert.Equal(t, []string{pubsub.EventDel}, event(t, kw, 10*time.Second), "the key's del on the new primary")
	assert.Equal(t, 2, m.Stats().Channels)
}
