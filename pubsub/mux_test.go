package pubsub_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

func newMux(t *testing.T, rdb redis.UniversalClient, opts pubsub.Options) *pubsub.Mux {
	t.Helper()
	m := pubsub.New(rdb, opts)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func woken(w *pubsub.Waiter, within time.Duration) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(within):
		return false
	}
}

func numSub(t *testing.T, rdb *redis.Client, ch string) int64 {
	t.Helper()
	n, err := rdb.PubSubNumSub(context.Background(), ch).Result()
	require.NoError(t, err)
	return n[ch]
}

// Subscribe returns only once Redis counts the subscription.
func TestSubscribeIsConfirmed(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	ch := redistest.Key(t)
	w, err := m.Subscribe(ctx, ch, pubsub.WakeOne)
	require.NoError(t, err)
	assert.EqualValues(t, 1, numSub(t, rdb, ch))
	// A message published right after Subscribe returns is delivered.
	require.NoError(t, rdb.Publish(ctx, ch, "0").Err())
	assert.True(t, woken(w, 5*time.Second))
	w.Close()
	assert.Eventually(t, func() bool { return numSub(t, rdb, ch) == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, pubsub.Stats{Conns: 1}, m.Stats())
}

// WakeOne wakes the oldest idle waiter; WakeAll wakes everyone.
func TestPolicies(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})

	one := redistest.Key(t, "one")
	var ws []*pubsub.Waiter
	for i := 0; i < 3; i++ {
		w, err := m.Subscribe(ctx, one, pubsub.WakeOne)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	require.NoError(t, rdb.Publish(ctx, one, "0").Err())
	assert.True(t, woken(ws[0], 5*time.Second), "the oldest waiter is woken first")
	assert.False(t, woken(ws[1], 50*time.Millisecond))
	// A woken waiter that stays (its re-check failed) is still the oldest.
	require.NoError(t, rdb.Publish(ctx, one, "0").Err())
	assert.True(t, woken(ws[0], 5*time.Second))
	ws[0].Close() // it got what it waited for and left
	require.NoError(t, rdb.Publish(ctx, one, "0").Err())
	assert.True(t, woken(ws[1], 5*time.Second))
	assert.False(t, woken(ws[2], 50*time.Millisecond))
	for _, w := range ws {
		w.Close()
	}

	all := redistest.Key(t, "all")
	ws = ws[:0]
	for i := 0; i < 5; i++ {
		w, err := m.Subscribe(ctx, all, pubsub.WakeAll)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	require.NoError(t, rdb.Publish(ctx, all, "1").Err())
	for i, w := range ws {
		assert.True(t, woken(w, 5*time.Second), "waiter %d", i)
		w.Close()
	}

	// A payload-driven policy: wake as many as the payload says.
	n := redistest.Key(t, "n")
	upTo := func(payload string, waiters int) int { v, _ := strconv.Atoi(payload); return v }
	ws = ws[:0]
	for i := 0; i < 4; i++ {
		w, err := m.Subscribe(ctx, n, upTo)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	require.NoError(t, rdb.Publish(ctx, n, "2").Err())
	assert.True(t, woken(ws[0], 5*time.Second))
	assert.True(t, woken(ws[1], 5*time.Second))
	assert.False(t, woken(ws[2], 50*time.Millisecond))
	for _, w := range ws {
		w.Close()
	}
}

// A waiter that leaves with an unconsumed wake-up passes it on.
func TestCloseHandsWakeUpOn(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	ch := redistest.Key(t)
	a, err := m.Subscribe(ctx, ch, pubsub.WakeOne)
	require.NoError(t, err)
	b, err := m.Subscribe(ctx, ch, pubsub.WakeOne)
	require.NoError(t, err)
	require.NoError(t, rdb.Publish(ctx, ch, "0").Err())
	require.Eventually(t, func() bool { return len(a.C()) == 1 }, 5*time.Second, time.Millisecond)
	a.Close()
	assert.True(t, woken(b, time.Second), "the wake-up a left unconsumed must reach b")
	b.Close()
}

// Many waiters on many channels share one connection; each channel is
// subscribed once and unsubscribed after its last waiter leaves.
func TestOneConnectionManyChannels(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	var mu sync.Mutex
	var ws []*pubsub.Waiter
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := m.Subscribe(ctx, "chan:"+strconv.Itoa(i%20), pubsub.WakeOne)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			ws = append(ws, w)
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, pubsub.Stats{Channels: 20, Waiters: 100, Conns: 1}, m.Stats())
	chans, err := rdb.PubSubChannels(ctx, "chan:*").Result()
	require.NoError(t, err)
	assert.Len(t, chans, 20)
	list, err := rdb.ClientList(ctx).Result()
	require.NoError(t, err)
	assert.Equal(t, 1, countSubscribers(list))
	for _, w := range ws {
		w.Close()
	}
	assert.Eventually(t, func() bool {
		chans, err := rdb.PubSubChannels(ctx, "chan:*").Result()
		return err == nil && len(chans) == 0
	}, 5*time.Second, 5*time.Millisecond)
}

func countSubscribers(clientList string) int {
	n := 0
	for _, line := range splitLines(clientList) {
		for _, f := range splitFields(line) {
			if len(f) > 4 && f[:4] == "sub=" && f != "sub=0" {
				n++
			}
		}
	}
	return n
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// A wait cancelled before Redis confirmed its subscription leaves at once:
// the channel stops counting in Channels, counts in Leaving until the
// confirmation arrives, and is then unsubscribed; the other channels on the
// connection are untouched.
func TestCancelledBeforeConfirmation(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	kept, left := redistest.Key(t, "kept"), redistest.Key(t, "left")
	w, err := m.Subscribe(ctx, kept, pubsub.WakeOne) // opens the connection
	require.NoError(t, err)
	defer w.Close()

	s.Pause(t) // the SUBSCRIBE is written, but not confirmed
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = m.Subscribe(short, left, pubsub.WakeOne)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, pubsub.Stats{Channels: 1, Leaving: 1, Waiters: 1, Conns: 1}, m.Stats())
	s.Resume(t)

	assert.Eventually(t, func() bool { return m.Stats().Leaving == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Eventually(t, func() bool { return numSub(t, rdb, left) == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, pubsub.Stats{Channels: 1, Waiters: 1, Conns: 1}, m.Stats())
	require.NoError(t, rdb.Publish(ctx, kept, "0").Err())
	assert.True(t, woken(w, 5*time.Second), "the channel kept is still served")
}

// Subscribing and leaving in quick succession never leaves the server
// subscribed to a channel nobody waits on, nor a waiter that Redis does not
// serve.
func TestChurn(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	ch := redistest.Key(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				w, err := m.Subscribe(ctx, ch, pubsub.WakeAll)
				if !assert.NoError(t, err) {
					return
				}
				w.Close()
			}
		}()
	}
	wg.Wait()
	w, err := m.Subscribe(ctx, ch, pubsub.WakeAll)
	require.NoError(t, err)
	require.NoError(t, rdb.Publish(ctx, ch, "1").Err())
	assert.True(t, woken(w, 5*time.Second), "a subscription after churn must be served")
	w.Close()
	assert.Eventually(t, func() bool { return numSub(t, rdb, ch) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// After the connection is killed, go-redis reconnects and re-subscribes;
// every waiter is woken to re-check (messages may have been lost), and new
// messages arrive again.
func TestReconnectWakesEveryone(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	rdb := s.Client(t)
	m := newMux(t, s.Client(t), pubsub.Options{})
	ch := redistest.Key(t)
	var ws []*pubsub.Waiter
	for i := 0; i < 3; i++ {
		w, err := m.Subscribe(ctx, ch, pubsub.WakeOne)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	require.NoError(t, rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err())
	for i, w := range ws {
		assert.True(t, woken(w, 10*time.Second), "waiter %d not woken after reconnect", i)
	}
	require.Eventually(t, func() bool { return numSub(t, rdb, ch) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, rdb.Publish(ctx, ch, "0").Err())
	assert.True(t, woken(ws[0], 5*time.Second))
	for _, w := range ws {
		w.Close()
	}
}

// A connection that stops answering (the server is paused) is replaced
// after an unanswered ping, and the waiters are woken once it is back.
func TestUnresponsiveConnectionReplaced(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	m := newMux(t, s.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
		o.DialTimeout = 300 * time.Millisecond
	}), pubsub.Options{PingInterval: 200 * time.Millisecond})
	w, err := m.Subscribe(ctx, redistest.Key(t), pubsub.WakeOne)
	require.NoError(t, err)
	s.Pause(t)
	// Not a synchronisation: the fault lasts a second, longer than a ping
	// interval and a read timeout, so the ping goes unanswered.
	time.Sleep(time.Second)
	s.Resume(t)
	assert.True(t, woken(w, 10*time.Second), "waiter not woken after the connection was replaced")
	assert.GreaterOrEqual(t, m.Stats().Reconnects, 1)
	w.Close()
}

// Subscribe honours ctx, and Close wakes waiters and refuses new ones.
func TestCancelAndClose(t *testing.T) {
	s := redistest.Shared(t)
	m := pubsub.New(s.Client(t), pubsub.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Subscribe(ctx, redistest.Key(t), pubsub.WakeOne)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, m.Stats().Waiters)

	w, err := m.Subscribe(context.Background(), redistest.Key(t), pubsub.WakeOne)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	assert.True(t, woken(w, time.Second), "Close must wake waiters")
	w.Close()
	_, err = m.Subscribe(context.Background(), redistest.Key(t), pubsub.WakeOne)
	assert.ErrorIs(t, err, pubsub.ErrClosed)
	require.NoError(t, m.Close(), "Close is idempotent")
}

// In sharded mode each channel is subscribed with SSUBSCRIBE on the master
// of its slot, over one connection per master, and SPUBLISH wakes it.
func TestShardedOneConnectionPerMaster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client(t)
	m := newMux(t, cl.Client(t), pubsub.Options{Sharded: func(context.Context) (bool, error) { return true, nil }})
	var ws []*pubsub.Waiter
	for i := 0; i < 60; i++ {
		w, err := m.Subscribe(ctx, "{"+redistest.Key(t)+"}:chan", pubsub.WakeOne)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	st := m.Stats()
	assert.Equal(t, 3, st.Conns, "one connection per master: %+v", st)
	for _, s := range cl.Servers {
		list, _ := s.Do(t, "CLIENT", "LIST").(string)
		n := 0
		for _, line := range splitLines(list) {
			for _, f := range splitFields(line) {
				if len(f) > 5 && f[:5] == "ssub=" && f != "ssub=0" {
					n++
				}
			}
		}
		assert.Equal(t, 1, n, "sharded subscriber connections on %s", s.Addr())
	}
	name := "{" + redistest.Key(t) + "}:woken"
	w, err := m.Subscribe(ctx, name, pubsub.WakeOne)
	require.NoError(t, err)
	require.NoError(t, cc.SPublish(ctx, name, "0").Err())
	assert.True(t, woken(w, 5*time.Second))
	w.Close()
	for _, w := range ws {
		w.Close()
	}
	assert.Eventually(t, func() bool { return m.Stats().Channels == 0 }, 5*time.Second, 5*time.Millisecond)
}
