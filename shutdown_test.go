package redisync_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// Issue 40 item 8: Close leaves held locks held for their lease, which
// blocks the next instance of a rolling deploy. Shutdown releases every
// hold of the Client, of callers without a context owner and of context
// owners alike, whatever their hold counts, then closes: another Client
// acquires each lock at once; the context owners' holds end with an
// error wrapping ErrLockLost and ErrClosed.
func TestShutdownReleasesEveryHold(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := redisync.New(s.Client(t))
	next := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	owner := redisync.WithOwner(ctx)

	plain := rlock.New(c, name+":plain")
	require.NoError(t, plain.Lock(ctx))
	reentered := rlock.New(c, name+":owned", rlock.WithFencing())
	require.NoError(t, reentered.Lock(owner))
	require.NoError(t, reentered.Lock(owner)) // count 2
	ownedHold := reentered.Hold(owner)
	require.NotNil(t, ownedHold)
	fair := rlock.NewFair(c, name+":fair")
	require.NoError(t, fair.Lock(ctx))
	spin := rlock.NewSpin(c, name+":spin")
	require.NoError(t, spin.Lock(ctx))
	readers := rwlock.New(c, name+":rw")
	require.NoError(t, readers.RLock(owner))
	require.NoError(t, readers.RLock(ctx))
	writer := rwlock.New(c, name+":rw2")
	require.NoError(t, writer.Lock(ctx))

	require.NoError(t, c.Shutdown(ctx))

	for _, l := range []redisync.Locker{rlock.New(next, name+":plain"), rlock.New(next, name+":owned"),
		rlock.NewFair(next, name+":fair"), rlock.NewSpin(next, name+":spin"),
		rwlock.New(next, name+":rw"), rwlock.New(next, name+":rw2")} {
		ok, err := l.TryLock(ctx, 0)
		require.NoError(t, err)
		assert.True(t, ok, "the next instance does not get a lock at once after Shutdown")
		require.NoError(t, l.Unlock(ctx))
	}
	select {
	case <-ownedHold.Done():
	default:
		t.Fatal("the context owner's hold did not end")
	}
	err := ownedHold.Err()
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.ErrorIs(t, context.Cause(ownedHold.Context()), redisync.ErrLockLost)
	assert.ErrorIs(t, plain.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, plain.Lock(ctx), redisync.ErrClosed)
	assert.NoError(t, c.Shutdown(ctx), "a second Shutdown")
}

// Close, by contrast, keeps API.md's contract: held locks stay held until
// their lease ends.
func TestCloseLeavesHoldsHeld(t *testing.T) {
	s := redistest.Shared(t)
	ctx := context.Background()
	c := redisync.New(s.Client(t))
	name := redistest.Key(t)
	require.NoError(t, rlock.New(c, name).Lock(ctx))
	require.NoError(t, c.Close())
	ok, err := rlock.New(clienttest.New(t, s.Client(t)), name).TryLock(ctx, 0)
	require.NoError(t, err)
	assert.False(t, ok)
}

// A Shutdown whose ctx is over releases nothing more and still closes:
// the holds are ended, and expire in Redis with their leases.
func TestShutdownBoundedByContext(t *testing.T) {
	s := redistest.Shared(t)
	c := redisync.New(s.Client(t))
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Shutdown(ctx)
	assert.True(t, err == nil || errors.Is(err, context.Canceled), "%v", err)
	<-l.Done()
	assert.ErrorIs(t, l.Err(), redisync.ErrClosed)
	assert.ErrorIs(t, l.Lock(context.Background()), redisync.ErrClosed)
}

// Shutdown's releases are no losses: after a clean Shutdown of four holds
// (a plain lock, a context owner's reentrant lock, both sides of two
// read-write locks) Stats counts none lost and four released at shutdown,
// and the observer's HoldEnd says Shutdown, not Lost, for each; Close of a
// hold still counts a loss.
func TestShutdownReleasesAreNoLosses(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		ends []redisync.HoldEnd
	)
	var logged strings.Builder
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logged}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := redisync.New(s.Client(t), redisync.WithLogger(logger), redisync.WithObserver(redisync.Observer{HoldEnd: func(h redisync.HoldEnd) {
		mu.Lock()
		ends = append(ends, h)
		mu.Unlock()
	}}))
	name := redistest.Key(t)
	owner := redisync.WithOwner(ctx)
	require.NoError(t, rlock.New(c, name+":plain").Lock(ctx))
	owned := rlock.New(c, name+":owned")
	require.NoError(t, owned.Lock(owner))
	require.NoError(t, owned.Lock(owner))
	require.NoError(t, rwlock.New(c, name+":r").RLock(ctx))
	require.NoError(t, rwlock.New(c, name+":w").Lock(ctx))
	// A hold released before Shutdown is neither.
	require.NoError(t, rlock.New(c, name+":done").Lock(ctx))
	require.NoError(t, rlock.New(c, name+":done").Unlock(ctx))

	require.NoError(t, c.Shutdown(ctx))
	st := c.Stats()
	assert.Zero(t, st.HoldsLost, "Shutdown's releases counted as losses")
	assert.EqualValues(t, 4, st.HoldsReleasedAtShutdown)
	mu.Lock()
	require.Len(t, ends, 5)
	shut := 0
	for _, e := range ends {
		assert.False(t, e.Lost, "%s", e.Name)
		if e.Shutdown {
			shut++
			assert.ErrorIs(t, e.Err, redisync.ErrLockLost, "what the owner sees")
			assert.ErrorIs(t, e.Err, redisync.ErrClosed)
		}
	}
	mu.Unlock()
	assert.Equal(t, 4, shut)
	assert.NotContains(t, logged.String(), "hold ended", "no warning for Shutdown's releases")

	// Close, by contrast, leaves its holds to expire: lost.
	c2 := redisync.New(s.Client(t))
	require.NoError(t, rlock.New(c2, name+":closed").Lock(ctx))
	require.NoError(t, c2.Close())
	assert.EqualValues(t, 1, c2.Stats().HoldsLost)
	assert.Zero(t, c2.Stats().HoldsReleasedAtShutdown)
}

// A hold Shutdown could not release (its ctx over) is lost, as after
// Close: it expires with its lease.
func TestShutdownUnreleasedHoldIsLost(t *testing.T) {
	s := redistest.Shared(t)
	c := redisync.New(s.Client(t))
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.Shutdown(ctx)
	assert.EqualValues(t, 1, c.Stats().HoldsLost)
	assert.Zero(t, c.Stats().HoldsReleasedAtShutdown)
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, l.Err(), redisync.ErrClosed)
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// holdScripts is a go-redis hook that, once armed, holds the next script
// call (EVALSHA or EVAL, alone or in a pipeline) before it is sent, until
// release is closed; sent is closed when it is held.
type holdScripts struct {
	armed   atomic.Bool
	sent    chan struct{}
	release chan struct{}
}

func (h *holdScripts) hold(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if n := c.Name(); (n == "evalsha" || n == "eval") && h.armed.CompareAndSwap(true, false) {
			close(h.sent)
			<-h.release
			return
		}
	}
}

func (h *holdScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.hold(cmd); return next(ctx, cmd) }
}
func (h *holdScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.hold(cmds...); return next(ctx, cmds) }
}

// Regression: Shutdown's rounds stopped at the first round that found no
// live hold, so an acquisition under way when Shutdown started, landing
// after that round, had its hold ended by Close and left in Redis to
// expire with its lease, although Shutdown says a wait that acquires
// meanwhile has its hold released too. Shutdown now waits for the
// attempts under way (within ctx), and releases what they took.
func TestShutdownReleasesAnAcquisitionLandingDuringIt(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := s.Client(t)
	hook := &holdScripts{sent: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(hook)
	c := redisync.New(rdb, redisync.WithReplicaSync(0, 0))
	name := redistest.Key(t)
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(ctx)) // the script is loaded, the client warm
	require.NoError(t, l.Unlock(ctx))

	hook.armed.Store(true)
	locked := make(chan error, 1)
	go func() { locked <- l.Lock(ctx) }()
	<-hook.sent // the acquisition is under way
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	time.Sleep(100 * time.Millisecond) // Shutdown finds no live hold
	close(hook.release)
	require.NoError(t, <-shut)
	if err := <-locked; err == nil {
		<-l.Done()
		assert.ErrorIs(t, l.Err(), redisync.ErrClosed)
	} else {
		assert.ErrorIs(t, err, redisync.ErrClosed)
	}
	n, err := redistest.Shared(t).Client(t).Exists(ctx, name).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the hold taken during Shutdown was left in Redis")
	assert.Zero(t, c.Stats().HoldsLost)
}
