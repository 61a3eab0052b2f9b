package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// keyspaceArgs turns on the keyspace notifications lock events need.
var keyspaceArgs = []string{"--notify-keyspace-events", "Kgx"}

// nextEvent waits at most 5 s for the next event on ch.
func nextEvent(t *testing.T, ch <-chan redisync.KeyEvent) redisync.KeyEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "events channel closed")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return redisync.KeyEvent{}
}

// closedWithin reports whether done closes within d.
func closedWithin(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Events reports the lock's key deleted by an Unlock, by a ForceUnlock
// and by an outside DEL, and expired when a fixed lease runs out, for
// every lock kind; ending ctx closes the channel and leaves no
// subscription.
func TestEventsDeletedAndExpired(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	rdb := s.Client(t)
	c := clienttest.New(t, s.Client(t), redisync.WithKeyPrefix("app:"))
	for _, kind := range []struct {
		name string
		new  func(name string, opts ...rlock.Option) interface {
			redisync.Locker
			Events(context.Context) (<-chan redisync.KeyEvent, error)
			ForceUnlock(context.Context) (bool, error)
		}
	}{
		{"lock", func(n string, o ...rlock.Option) interface {
			redisync.Locker
			Events(context.Context) (<-chan redisync.KeyEvent, error)
			ForceUnlock(context.Context) (bool, error)
		} {
			return rlock.New(c, n, o...)
		}},
		{"fair", func(n string, o ...rlock.Option) interface {
			redisync.Locker
			Events(context.Context) (<-chan redisync.KeyEvent, error)
			ForceUnlock(context.Context) (bool, error)
		} {
			return rlock.NewFair(c, n, o...)
		}},
		{"spin", func(n string, o ...rlock.Option) interface {
			redisync.Locker
			Events(context.Context) (<-chan redisync.KeyEvent, error)
			ForceUnlock(context.Context) (bool, error)
		} {
			return rlock.NewSpin(c, n, o...)
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			name := redistest.Key(t)
			l := kind.new(name)
			ectx, cancel := context.WithCancel(ctx)
			events, err := l.Events(ectx)
			require.NoError(t, err)

			require.NoError(t, l.Lock(ctx))
			require.NoError(t, l.Unlock(ctx))
			ev := nextEvent(t, events)
			assert.Equal(t, redisync.KeyDeleted, ev.Kind)
			assert.Equal(t, "app:"+name, ev.Key, "the Redis key, prefix included")
			assert.WithinDuration(t, time.Now(), ev.Time, 5*time.Second)

			require.NoError(t, l.Lock(ctx))
			ok, err := l.ForceUnlock(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, redisync.KeyDeleted, nextEvent(t, events).Kind)

			short := kind.new(name, rlock.WithLease(20*time.Millisecond))
			require.NoError(t, short.Lock(ctx))
			assert.Equal(t, redisync.KeyExpired, nextEvent(t, events).Kind)

			require.NoError(t, rdb.HSet(ctx, "app:"+name, "x:1", 1).Err())
			require.NoError(t, rdb.Del(ctx, "app:"+name).Err())
			assert.Equal(t, redisync.KeyDeleted, nextEvent(t, events).Kind, "an outside DEL")

			cancel()
			select {
			case _, open := <-events:
				assert.False(t, open, "closed when ctx ends")
			case <-time.After(5 * time.Second):
				t.Fatal("not closed after ctx ended")
			}
			clienttest.NoSubscriptions(t, c)
			assert.Eventually(t, func() bool {
				n, _ := rdb.PubSubNumSub(ctx, "__keyspace@0__:app:"+name).Result()
				return n["__keyspace@0__:app:"+name] == 0
			}, 5*time.Second, 10*time.Millisecond, "unsubscribed in Redis")
		})
	}
}

// When the server publishes no keyspace notifications, Events says so
// with ErrKeyspaceEventsOff and the CONFIG SET to run, instead of a
// channel that never fires; with KeyspaceEventsOff it never subscribes.
// Nothing is left behind. A closed Client gives ErrClosed.
func TestEventsOff(t *testing.T) {
	ctx := context.Background()
	c := clienttest.Shared(t)
	l := rlock.New(c, redistest.Key(t))
	_, err := l.Events(ctx)
	require.ErrorIs(t, err, redisync.ErrKeyspaceEventsOff)
	assert.Contains(t, err.Error(), "CONFIG SET notify-keyspace-events")
	clienttest.NoSubscriptions(t, c)

	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	off := clienttest.New(t, s.Client(t), redisync.WithKeyspaceEvents(redisync.KeyspaceEventsOff))
	_, err = rlock.New(off, redistest.Key(t)).Events(ctx)
	require.ErrorIs(t, err, redisync.ErrKeyspaceEventsOff)

	on := clienttest.New(t, s.Client(t))
	require.NoError(t, on.Close())
	_, err = rlock.New(on, redistest.Key(t)).Events(ctx)
	require.ErrorIs(t, err, redisync.ErrClosed)

	_, err = rlock.New(clienttest.Shared(t, redisync.WithKeyspaceEvents(7)), "x").Events(ctx)
	require.ErrorIs(t, err, redisync.ErrInvalidArgument)
}

// Closing the Client closes the Events channel.
func TestEventsClosedWithClient(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	c := redisync.New(s.Client(t))
	events, err := rlock.New(c, redistest.Key(t)).Events(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case _, open := <-events:
		assert.False(t, open)
	case <-time.After(5 * time.Second):
		t.Fatal("not closed by Close")
	}
}

// watched asks for done (a hold's Done) and returns it once the hold's
// watch has subscribed to its key's notifications and made its first
// re-check (a renewal: one racing with the test's PEXPIRE would undo it).
func watched(t *testing.T, c *redisync.Client, done func() <-chan struct{}) <-chan struct{} {
	t.Helper()
	before := c.Stats().Renewals
	ch := done()
	redistest.Eventually(t, 5*time.Second, "the hold's keyspace subscription and first re-check", func() error {
		if clienttest.Stats(c).Waiters == 0 || c.Stats().Renewals == before {
			return assert.AnError
		}
		return nil
	})
	return ch
}

// outside is how a hold is lost in the loss tests: an outside DEL of the
// key, or its expiry forced with PEXPIRE key 1.
var outside = []struct {
	name string
	do   func(ctx context.Context, rdb redis.UniversalClient, key string) error
}{
	{"del", func(ctx context.Context, rdb redis.UniversalClient, key string) error { return rdb.Del(ctx, key).Err() }},
	{"expire", func(ctx context.Context, rdb redis.UniversalClient, key string) error {
		// Not 1 ms: Redis deletes a key whose new expiry is already past
		// when it checks (a millisecond may tick over within PEXPIRE on
		// a busy machine), and publishes "del", not "expired".
		return rdb.PExpire(ctx, key, 5*time.Millisecond).Err()
	}},
}

// forceUnlock is a ForceUnlock by another process (as redisync unlock
// -force does): the holder's client learns of it only from Redis.
var forceUnlock = struct {
	name string
	do   func(ctx context.Context, rdb redis.UniversalClient, key string) error
}{"force-unlock", func(ctx context.Context, rdb redis.UniversalClient, key string) error {
	c := redisync.New(rdb)
	defer c.Close()
	_, err := rlock.New(c, key).ForceUnlock(ctx)
	return err
}}

// With keyspace notifications on, a watched hold ends within a round trip
// of an outside DEL, a ForceUnlock elsewhere or an expiry (not at the next renewal, 10 s later with
// the default 30 s lease), with ErrLockLost; the hold's watch goes with
// it. Each test logs the time from the outside change to Done.
func TestHoldLostByEvent(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	rdb := s.Client(t)
	c := clienttest.New(t, s.Client(t))
	for _, o := range append(outside, forceUnlock) {
		t.Run(o.name, func(t *testing.T) {
			name := redistest.Key(t)
			l := rlock.New(c, name)
			require.NoError(t, l.Lock(ctx))
			done := watched(t, c, l.Done)
			start := time.Now()
			require.NoError(t, o.do(ctx, rdb, name))
			require.True(t, closedWithin(done, 5*time.Second), "Done closes long before the next renewal (10 s)")
			t.Logf("%s: Done closed %v after the outside change (events on, 30s lease)", o.name, time.Since(start))
			require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
			assert.Contains(t, l.Err().Error(), "gone")
			clienttest.NoSubscriptions(t, c)
		})
	}
}

// Keyspace notifications do not end a hold by themselves: the key deleted
// by the holder's own release, or deleted and taken again by another
// owner, is re-checked by the renewal script; a hold that is still the
// owner's after a notification (another key's change, an event of a
// re-subscription) goes on. Unlock after Done was watched leaves no
// subscription.
func TestHoldEventRechecks(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	rdb := s.Client(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)

	// Another client's hold on the key: the re-created key is not ours.
	other := clienttest.New(t, s.Client(t))
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(ctx))
	done := watched(t, c, l.Done)
	require.NoError(t, rdb.Del(ctx, name).Err())
	require.NoError(t, rlock.New(other, name).Lock(ctx))
	require.True(t, closedWithin(done, 5*time.Second))
	require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	require.NoError(t, rlock.New(other, name).Unlock(ctx))
	_ = l.Unlock(ctx) // opens the handle's gate after the loss

	// The holder's own Unlock deletes the key: released, not lost.
	require.NoError(t, l.Lock(ctx))
	done = watched(t, c, l.Done)
	require.NoError(t, l.Unlock(ctx))
	require.True(t, closedWithin(done, time.Second))
	assert.ErrorIs(t, l.Err(), redisync.ErrNotHeld)
	clienttest.NoSubscriptions(t, c)

	// A re-entered hold survives the re-check of a notification that
	// reached it after its key was written again (PEXPIRE on a live key
	// publishes no del/expired: nothing happens).
	ctxo := redisync.WithOwner(ctx)
	require.NoError(t, l.Lock(ctxo))
	h := l.Hold(ctxo)
	hdone := watched(t, c, h.Done)
	require.NoError(t, rdb.PExpire(ctx, name, time.Minute).Err())
	assert.False(t, closedWithin(hdone, 200*time.Millisecond))
	require.NoError(t, h.Err())
	require.NoError(t, l.Unlock(ctxo))
	clienttest.NoSubscriptions(t, c)
}

// With keyspace events off (the option, or the server's flags), a hold
// is lost as before: at its next renewal, and no keyspace subscription
// is made.
func TestHoldLostWithoutEvents(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithArgs(keyspaceArgs...))
	rdb := s.Client(t)
	for _, tc := range []struct {
		name string
		c    *redisync.Client
		rdb  redis.UniversalClient
	}{
		{"option off", clienttest.New(t, s.Client(t), redisync.WithKeyspaceEvents(redisync.KeyspaceEventsOff),
			redisync.WithWatchdogTimeout(900*time.Millisecond)), rdb},
		{"flags off", clienttest.Shared(t, redisync.WithWatchdogTimeout(900*time.Millisecond)), redistest.Shared(t).Client(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.Key(t)
			l := rlock.New(tc.c, name)
			require.NoError(t, l.Lock(ctx))
			done := l.Done()
			require.NoError(t, tc.rdb.Del(ctx, name).Err())
			require.True(t, closedWithin(done, 5*time.Second), "the renewal finds it gone")
			require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
			assert.Equal(t, 0, clienttest.Stats(tc.c).Channels, "no keyspace subscription")
		})
	}
}

// On a Cluster, a hold's watch and Events subscribe on the master of the
// key's slot: an outside DEL there ends the hold within a round trip, and
// Events reports it.
func TestEventsCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3, redistest.ClusterServerArgs(keyspaceArgs...))
	cc := cl.Client(t)
	c := clienttest.New(t, cl.Client(t))
	for _, o := range outside {
		t.Run(o.name, func(t *testing.T) {
			name := redistest.Key(t)
			l := rlock.New(c, name)
			events, err := l.Events(ctx)
			require.NoError(t, err)
			require.NoError(t, l.Lock(ctx))
			done := watched(t, c, l.Done)
			start := time.Now()
			require.NoError(t, o.do(ctx, cc, name))
			require.True(t, closedWithin(done, 5*time.Second), "Done closes long before the next renewal (10 s)")
			t.Logf("cluster %s: Done closed %v after the outside change (events on, 30s lease)", o.name, time.Since(start))
			require.ErrorIs(t, l.Err(), redisync.ErrLockLost)
			want := map[string]redisync.KeyEventKind{"del": redisync.KeyDeleted, "expire": redisync.KeyExpired}[o.name]
			assert.Equal(t, want, nextEvent(t, events).Kind)
		})
	}
}
