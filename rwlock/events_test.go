package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// Events reports the hash deleted by the last release and by an outside
// DEL; a watched read hold and a watched write hold end within a round
// trip of an outside DEL, with ErrLockLost; ending ctx closes the channel
// and leaves no subscription. Without the flags Events says so.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs("--notify-keyspace-events", "Kgx"))
	rdb := s.Client(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	rw := rwlock.New(c, name)
	ectx, cancel := context.WithCancel(ctx)
	events, err := rw.Events(ectx)
	require.NoError(t, err)
	next := func() redisync.KeyEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
		}
		return redisync.KeyEvent{}
	}

	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RUnlock(ctx))
	assert.Equal(t, redisync.KeyEvent{Key: name, Kind: redisync.KeyDeleted}, withoutTime(next()))

	for _, side := range []struct {
		name string
		lock func(context.Context) error
		hold func(context.Context) *redisync.Hold
	}{{"read", rw.RLock, rw.ReadHold}, {"write", rw.Lock, rw.WriteHold}} {
		octx := redisync.WithOwner(ctx)
		require.NoError(t, side.lock(octx))
		h := side.hold(octx)
		before := c.Stats().Renewals
		done := h.Done()
		redistest.Eventually(t, 5*time.Second, "the hold's watch", func() error {
			if clienttest.Stats(c).Waiters < 2 || c.Stats().Renewals == before {
				return assert.AnError
			}
			return nil
		})
		require.NoError(t, rdb.Del(ctx, name).Err())
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s hold: Done not closed after an outside DEL", side.name)
		}
		require.ErrorIs(t, h.Err(), redisync.ErrLockLost, side.name)
		assert.Equal(t, redisync.KeyDeleted, next().Kind)
	}

	cancel()
	for range events {
	}
	clienttest.NoSubscriptions(t, c)

	_, err = rwlock.New(clienttest.Shared(t), name).Events(ctx)
	require.ErrorIs(t, err, redisync.ErrKeyspaceEventsOff)
}

func withoutTime(ev redisync.KeyEvent) redisync.KeyEvent {
	ev.Time = time.Time{}
	return ev
}
