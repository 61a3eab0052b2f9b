package pubsub_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// event waits for w's next keyspace event.
func event(t *testing.T, w *pubsub.Waiter, within time.Duration) []string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case <-w.C():
			if ev := w.Events(); len(ev) > 0 {
				return ev
			}
		case <-deadline:
			return nil
		}
	}
}

// Keyspace delivers a key's deletion and expiry, not its other changes,
// on a single node whose notify-keyspace-events has Kgx; Close leaves no
// subscription.
func TestKeyspaceSingleNode(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs("--notify-keyspace-events", "Kgx"))
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	key := redistest.Key(t)
	w, err := m.Keyspace(ctx, key)
	require.NoError(t, err)

	require.NoError(t, rdb.HSet(ctx, key, "a", 1).Err())
	require.NoError(t, rdb.PExpire(ctx, key, time.Minute).Err()) // "expire": not passed on
	require.NoError(t, rdb.Del(ctx, key).Err())
	assert.Equal(t, []string{pubsub.EventDel}, event(t, w, 5*time.Second))

	require.NoError(t, rdb.Set(ctx, key, "x", time.Millisecond).Err())
	assert.Equal(t, []string{pubsub.EventExpired}, event(t, w, 5*time.Second))

	w.Close()
	assert.Eventually(t, func() bool { return numSub(t, rdb, "__keyspace@0__:"+key) == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 0, m.Stats().Channels)
}

// Without the flags, Keyspace fails with ErrKeyspaceEventsOff and says
// what to set; with KeyspaceOn it subscribes without asking; with
// KeyspaceOff it never subscribes. Nothing is left behind.
func TestKeyspaceFlagsOff(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	key := redistest.Key(t)

	m := newMux(t, s.Client(t), pubsub.Options{})
	_, err := m.Keyspace(ctx, key)
	require.ErrorIs(t, err, redisync.ErrKeyspaceEventsOff)
	assert.Contains(t, err.Error(), "CONFIG SET notify-keyspace-events Kgx")
	assert.Equal(t, pubsub.Stats{}, m.Stats())

	off := newMux(t, s.Client(t), pubsub.Options{Keyspace: pubsub.KeyspaceOff})
	_, err = off.Keyspace(ctx, key)
	require.ErrorIs(t, err, redisync.ErrKeyspaceEventsOff)

	on := newMux(t, s.Client(t), pubsub.Options{Keyspace: pubsub.KeyspaceOn})
	w, err := on.Keyspace(ctx, key)
	require.NoError(t, err, "declared on: no CONFIG GET")
	w.Close()
}

// An ACL user without CONFIG GET gets an error that says so and what to
// do, wrapping ErrNoPermission.
func TestKeyspaceConfigRefused(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t, s.User(t, "+@all", "-config", "~*", "&*"))
	m := newMux(t, rdb, pubsub.Options{})
	_, err := m.Keyspace(ctx, redistest.Key(t))
	require.ErrorIs(t, err, redisync.ErrNoPermission)
	assert.False(t, errors.Is(err, redisync.ErrKeyspaceEventsOff))
	assert.Contains(t, err.Error(), "+config|get")
	assert.Contains(t, err.Error(), "KeyspaceEventsOn")
}

// On a Cluster the notifications are published only on the key's master:
// Keyspace subscribes there, and after the key's slot migrates to another
// master the subscription follows it and events keep arriving.
func TestKeyspaceClusterMigration(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, redistest.ClusterServerArgs("--notify-keyspace-events", "Kgx"))
	cc := cl.Client(t)
	m := newMux(t, cl.Client(t), pubsub.Options{})
	key := redistest.Key(t)
	w, err := m.Keyspace(ctx, key)
	require.NoError(t, err)
	defer w.Close()

	slot := keys.Slot(key)
	from := cl.MasterOf(t, slot)
	assert.Equal(t, int64(1), numSub(t, from.Client(t), "__keyspace@0__:"+key), "subscribed on the key's master")
	require.NoError(t, cc.Set(ctx, key, "x", 0).Err())
	require.NoError(t, cc.Del(ctx, key).Err())
	assert.Equal(t, []string{pubsub.EventDel}, event(t, w, 5*time.Second))

	// Moving the key to another master, MIGRATE deletes it on the old
	// one, which publishes del.
	require.NoError(t, cc.Set(ctx, key, "x", 0).Err())
	to := cl.Servers[(slices.Index(cl.Servers, from)+1)%len(cl.Servers)]
	cl.MigrateSlot(t, slot, to)
	assert.Equal(t, []string{pubsub.EventDel}, event(t, w, 5*time.Second), "MIGRATE deletes the key on the old master")
	require.Eventually(t, func() bool { return numSub(t, to.Client(t), "__keyspace@0__:"+key) == 1 },
		15*time.Second, 10*time.Millisecond, "subscribed on the slot's new master")
	assert.Equal(t, int64(0), numSub(t, from.Client(t), "__keyspace@0__:"+key), "not on the old one")
	// 5 ms, not 1: an expiry already past when Redis checks it (a
	// millisecond may tick over within PEXPIRE) is a deletion, "del".
	require.NoError(t, cc.PExpire(ctx, key, 5*time.Millisecond).Err())
	assert.Equal(t, []string{pubsub.EventExpired}, event(t, w, 5*time.Second))
}

// After a failover (CLUSTER FAILOVER), the key's notifications are
// published on the promoted replica: the subscription moves there (the
// slot map check) and events keep arriving.
func TestKeyspaceClusterFailover(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1), redistest.ClusterServerArgs("--notify-keyspace-events", "Kgx"))
	cc := cl.Client(t)
	m := newMux(t, cl.Client(t), pubsub.Options{})
	key := redistest.Key(t)
	w, err := m.Keyspace(ctx, key)
	require.NoError(t, err)
	defer w.Close()

	old := cl.MasterOf(t, keys.Slot(key))
	next := cl.ReplicaOf(t, old)
	cl.Failover(t, next)
	require.Eventually(t, func() bool { return numSub(t, next.Client(t), "__keyspace@0__:"+key) == 1 },
		15*time.Second, 10*time.Millisecond, "subscribed on the promoted replica")
	assert.Equal(t, int64(0), numSub(t, old.Client(t), "__keyspace@0__:"+key), "not on the former master")
	_ = w.Events()

	require.NoError(t, cc.Set(ctx, key, "x", 0).Err())
	require.NoError(t, cc.Del(ctx, key).Err())
	assert.Equal(t, []string{pubsub.EventDel}, event(t, w, 5*time.Second))
}

// The Client's keyspace events mode is this type: its option's values are
// the Mux's, and they print as the option's documentation names them.
func TestKeyspaceModeIsTheClientsMode(t *testing.T) {
	var m redisync.KeyspaceEventsMode = pubsub.KeyspaceOn
	assert.Equal(t, redisync.KeyspaceEventsOn, m)
	assert.Equal(t, pubsub.KeyspaceAuto, redisync.KeyspaceEventsAuto)
	assert.Equal(t, pubsub.KeyspaceOff, redisync.KeyspaceEventsOff)
	for mode, want := range map[pubsub.KeyspaceMode]string{pubsub.KeyspaceAuto: "auto", pubsub.KeyspaceOn: "on", pubsub.KeyspaceOff: "off", 7: "KeyspaceMode(7)"} {
		assert.Equal(t, want, mode.String())
	}
}
