package pubsub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// When its slot migrates, Redis ends a channel's sharded subscription on
// the old master (sunsubscribe): the Mux subscribes it again on the new
// master and wakes its waiter to re-check, with no message published, since
// a release published in between reached nobody (issue 33). Messages on
// the new master reach the waiter.
func TestShardedSlotMigrationWakes(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client(t)
	m := newMux(t, cl.Client(t), pubsub.Options{Sharded: func(context.Context) (bool, error) { return true, nil }})
	name := "{" + redistest.Key(t) + "}:chan"
	w, err := m.Subscribe(ctx, name, pubsub.WakeOne)
	require.NoError(t, err)
	defer w.Close()

	slot := keys.Slot(name)
	from := cl.MasterOf(t, slot)
	to := cl.Servers[(slices.Index(cl.Servers, from)+1)%len(cl.Servers)]
	cl.MigrateSlot(t, slot, to)
	assert.True(t, woken(w, 15*time.Second), "the re-subscription wakes the waiter")
	require.Eventually(t, func() bool {
		v, _ := to.Do(t, "PUBSUB", "SHARDNUMSUB", name).([]any)
		return len(v) == 2 && v[1] == int64(1)
	}, 15*time.Second, 10*time.Millisecond, "subscribed on the slot's new master")
	v, _ := from.Do(t, "PUBSUB", "SHARDNUMSUB", name).([]any)
	assert.Equal(t, int64(0), v[1], "no subscription left on the old master")

	require.NoError(t, cc.SPublish(ctx, name, "0").Err())
	assert.True(t, woken(w, 10*time.Second), "a message on the new master wakes the waiter")
	assert.Equal(t, 1, m.Stats().Channels)
}
