package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// A classic connection that is killed and comes back counts as one
// reconnect (issue 17: redisync.pubsub.reconnects stayed 0 after the most
// common reconnect, since only replacements after a dead ping counted).
func TestKilledConnectionCountsAsReconnect(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	w, err := m.Subscribe(ctx, redistest.Key(t), pubsub.WakeOne)
	require.NoError(t, err)
	defer w.Close()
	require.Zero(t, m.Stats().Reconnects)

	require.NoError(t, rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err())
	assert.True(t, woken(w, 10*time.Second), "waiter not woken after the reconnect")
	assert.Eventually(t, func() bool { return m.Stats().Reconnects == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, m.Stats().Channels)
}
