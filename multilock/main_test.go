package multilock_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// TestMain starts the shared server for the examples (exampleAddr), then
// stops it and checks for leaked goroutines after the tests.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// watchdog is the watchdog timeout of test clients: short, so that a lock
// left behind by a failing test frees itself soon.
const watchdog = 1500 * time.Millisecond

// memberClient returns a redisync client on s, with its own go-redis client
// set up as the package doc advises for RedLock members
// (ContextTimeoutEnabled) and changed by mods, closed when the test ends.
func memberClient(t *testing.T, s *redistest.Server, mods ...func(*redis.Options)) *redisync.Client {
	t.Helper()
	rdb := s.Client(t, append([]func(*redis.Options){func(o *redis.Options) { o.ContextTimeoutEnabled = true }}, mods...)...)
	return clienttest.New(t, rdb, redisync.WithWatchdogTimeout(watchdog))
}

// failFast makes go-redis give up on a stopped server after one retry
// instead of three, each with five dials: seconds less per call.
func failFast(o *redis.Options) {
	o.MaxRetries = 1
	o.DialerRetries = 1
}

// startServers starts n independent redis-servers for the test.
func startServers(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	// Registered first, so it runs after the clients are closed.
	t.Cleanup(func() { waitDialRetries(t) })
	ss := make([]*redistest.Server, n)
	for i := range ss {
		ss[i] = redistest.Start(t)
	}
	return ss
}

// masters is the setup of most tests: independent servers, one client on
// each, and a name unique to the test, for the lock (RedLock) or as the
// prefix of the locks (MultiLock).
type masters struct {
	ss   []*redistest.Server
	cs   []*redisync.Client
	name string
}

// startMasters starts n servers, each with a client changed by mods.
func startMasters(t *testing.T, n int, mods ...func(*redis.Options)) *masters {
	t.Helper()
	m := &masters{ss: startServers(t, n), name: redistest.Key(t)}
	for _, s := range m.ss {
		m.cs = append(m.cs, memberClient(t, s, mods...))
	}
	return m
}

// members returns one handle per server on the lock called m.name,
// through the setup's clients.
func (m *masters) members() []redisync.Locker {
	var members []redisync.Locker
	for _, c := range m.cs {
		members = append(members, rlock.New(c, m.name))
	}
	return members
}

// redLock returns a RedLock over m.members, and the members.
func (m *masters) redLock() (*multilock.MultiLock, []redisync.Locker) {
	members := m.members()
	return multilock.NewRedLock(members...), members
}

// testCtx bounds a test so that a hang fails instead of blocking the run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tryLock calls l.TryLock(ctx, wait), requires it to succeed without an
// error, and returns whether it acquired l.
func tryLock(ctx context.Context, t *testing.T, l redisync.Locker, wait time.Duration) bool {
	t.Helper()
	ok, err := l.TryLock(ctx, wait)
	require.NoError(t, err)
	return ok
}

// locked reports whether the lock called name exists on s, asking the
// server directly.
func locked(t *testing.T, s *redistest.Server, name string) bool {
	t.Helper()
	return s.Do(t, "EXISTS", name).(int64) == 1
}

// requireLocked fails the test unless every one of names exists on s.
func requireLocked(t *testing.T, s *redistest.Server, names ...string) {
	t.Helper()
	for _, name := range names {
		require.True(t, locked(t, s, name), "%s on %s is not locked", name, s.Addr())
	}
}

// requireFree fails the test unless none of names exists on s.
func requireFree(t *testing.T, s *redistest.Server, names ...string) {
	t.Helper()
	for _, name := range names {
		require.False(t, locked(t, s, name), "%s on %s is still locked", name, s.Addr())
	}
}

// unlockFrees requires the locks held, by server, to exist, unlocks l,
// and requires them to be gone.
func unlockFrees(ctx context.Context, t *testing.T, l redisync.Locker, held map[*redistest.Server][]string) {
	t.Helper()
	for s, names := range held {
		requireLocked(t, s, names...)
	}
	require.NoError(t, l.Unlock(ctx))
	for s, names := range held {
		requireFree(t, s, names...)
	}
}

// holdElsewhere takes the lock called name on s through another client,
// as another process would, and returns its handle.
func holdElsewhere(t *testing.T, s *redistest.Server, name string) *rlock.Lock {
	t.Helper()
	l := rlock.New(memberClient(t, s), name)
	require.NoError(t, l.Lock(testCtx(t)))
	return l
}

// noWatchdogHolds checks that c renews nothing any more.
func noWatchdogHolds(t *testing.T, c *redisync.Client) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Zero(ct, (*core.Client)(c).Holds().Stats().Holds, "holds renewed by the watchdog")
	}, 5*time.Second, 20*time.Millisecond)
}

// waitDialRetries waits until no go-redis pool is retrying to dial. After
// as many failed dials as its pool size (a stopped server), a go-redis pool
// starts a goroutine that re-dials every second until the pool is closed,
// and it notices the close only after its sleep: up to a second after
// Close. Waiting here keeps the leak check in TestMain from seeing it.
func waitDialRetries(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	assert.Eventually(t, func() bool {
		n := runtime.Stack(buf, true)
		return !bytes.Contains(buf[:n], []byte("(*ConnPool).tryDial"))
	}, 5*time.Second, 50*time.Millisecond, "a go-redis pool still re-dials 5s after its client was closed")
}

// background is a Lock running in a goroutine (see lockInBackground).
type background struct {
	t    *testing.T
	what string      // names the Lock in failures
	ch   chan result // Lock's error and when it returned
}

type result struct {
	at  time.Time
	err error
}

// lockInBackground runs l.Lock(ctx) in a goroutine; what names it in
// failures.
func lockInBackground(ctx context.Context, t *testing.T, l redisync.Locker, what string) *background {
	b := &background{t: t, what: what, ch: make(chan result, 1)}
	go func() {
		err := l.Lock(ctx)
		b.ch <- result{time.Now(), err}
	}()
	return b
}

// requireWaitingOn fails the test unless the Lock comes to wait through
// c's pub/sub (a waiter on c), and has still not returned a moment later.
func (b *background) requireWaitingOn(c *redisync.Client) {
	b.t.Helper()
	returned := func() bool { return len(b.ch) > 0 }
	require.Eventually(b.t, func() bool { return clienttest.Stats(c).Waiters == 1 || returned() }, 20*time.Second, 10*time.Millisecond,
		"%s never waited on the busy member", b.what)
	require.Never(b.t, returned, 200*time.Millisecond, 10*time.Millisecond,
		"%s returned while a member was held elsewhere", b.what)
}

// requireWokenBy calls release and fails the test unless the Lock then
// succeeds within 2 s: woken by the member's pub/sub, not by a fallback
// re-check.
func (b *background) requireWokenBy(release func()) {
	b.t.Helper()
	released := time.Now()
	release()
	select {
	case r := <-b.ch:
		require.NoError(b.t, r.err, b.what)
		took := r.at.Sub(released)
		b.t.Logf("%s got in %v after the release", b.what, took)
		assert.Less(b.t, took, 2*time.Second)
	case <-time.After(20 * time.Second):
		require.FailNow(b.t, b.what+" did not get in")
	}
}
