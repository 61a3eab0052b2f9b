package pubsub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// A subscription Redis refuses (an ACL user without SUBSCRIBE, or without
// the channel) fails at once with ErrNoPermission and Redis's text, not
// after the confirm timeout; it leaves nothing behind, and a subscription
// allowed meanwhile on the same connection is not taken for it.
func TestSubscribeRefused(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	allowed := redistest.Key(t, "allowed")
	for name, rules := range map[string][]string{
		"no subscribe": {"~*", "&*", "+@all", "-subscribe"},
		"no channel":   {"~*", "&" + allowed, "+@all"},
	} {
		t.Run(name, func(t *testing.T) {
			m := newMux(t, s.Client(t, s.User(t, rules...)), pubsub.Options{ConfirmTimeout: 15 * time.Second})
			start := time.Now()
			w, err := m.Subscribe(ctx, redistest.Key(t), pubsub.WakeOne)
			require.Error(t, err)
			assert.Nil(t, w)
			assert.ErrorIs(t, err, redisync.ErrNoPermission)
			assert.Contains(t, err.Error(), "NOPERM")
			assert.Less(t, time.Since(start), 10*time.Second, "failed at the refusal, not at the confirm timeout")
			assert.Zero(t, m.Stats().Channels)
			assert.Zero(t, m.Stats().Waiters)
		})
	}

	t.Run("next to an allowed one", func(t *testing.T) {
		rdb := s.Client(t)
		m := newMux(t, s.Client(t, s.User(t, "~*", "&"+allowed, "+@all")), pubsub.Options{ConfirmTimeout: 15 * time.Second})
		for range 5 {
			var wg sync.WaitGroup
			var ok *pubsub.Waiter
			var okErr, refusedErr error
			wg.Add(2)
			go func() { defer wg.Done(); ok, okErr = m.Subscribe(ctx, allowed, pubsub.WakeOne) }()
			go func() { defer wg.Done(); _, refusedErr = m.Subscribe(ctx, redistest.Key(t), pubsub.WakeOne) }()
			wg.Wait()
			require.NoError(t, okErr)
			assert.ErrorIs(t, refusedErr, redisync.ErrNoPermission)
			require.NoError(t, rdb.Publish(ctx, allowed, "0").Err())
			assert.True(t, woken(ok, 10*time.Second), "the allowed subscription works")
			ok.Close()
		}
	})
}
