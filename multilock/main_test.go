package multilock_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestMain starts the shared server for the examples (exampleAddr), then
// stops it and checks for leaked goroutines after the tests.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// watchdog is the watchdog timeout of test clients: short, so that a lock
// left behind by a failing test frees itself soon.
const watchdog = 1500 * time.Millisecond

// newClient returns a redisync client on s, with its own go-redis client
// set up as the package doc advises for RedLock members
// (ContextTimeoutEnabled) and changed by mods, closed when the test ends.
func newClient(t *testing.T, s *redistest.Server, mods ...func(*redis.Options)) *redisync.Client {
	t.Helper()
	rdb := s.Client(t, append([]func(*redis.Options){func(o *redis.Options) { o.ContextTimeoutEnabled = true }}, mods...)...)
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(watchdog))
	t.Cleanup(func() { _ = c.Close() })
	return c
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

// testCtx bounds a test so that a hang fails instead of blocking the run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// locked reports whether the lock called name exists on s, asking the
// server directly.
func locked(t *testing.T, s *redistest.Server, name string) bool {
	t.Helper()
	return s.Do(t, "EXISTS", name).(int64) == 1
}

// requireFree fails the test unless none of names exists on s.
func requireFree(t *testing.T, s *redistest.Server, names ...string) {
	t.Helper()
	for _, name := range names {
		require.False(t, locked(t, s, name), "%s on %s is still locked", name, s.Addr())
	}
}

// holdElsewhere takes the lock called name on s through another client,
// as another process would, and returns its handle.
func holdElsewhere(t *testing.T, s *redistest.Server, name string) *rlock.Lock {
	t.Helper()
	l := rlock.New(newClient(t, s), name)
	require.NoError(t, l.Lock(testCtx(t)))
	return l
}

// waitForWaiters waits until c's pub/sub multiplexer has n waiters.
func waitForWaiters(t *testing.T, c *redisync.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := waitersOf(c)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually fails the test unless cond holds within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noWatchdogHolds checks that c renews nothing any more.
func noWatchdogHolds(t *testing.T, c *redisync.Client) {
	t.Helper()
	eventually(t, 5*time.Second, "watchdog holds", func() error {
		if n := (*core.Client)(c).WatchdogStats().Holds; n != 0 {
			return fmt.Errorf("%d holds renewed", n)
		}
		return nil
	})
}

// waitersOf is the number of waiters in c's pub/sub multiplexer.
func waitersOf(c *redisync.Client) int { return (*core.Client)(c).Mux().Stats().Waiters }

// waitDialRetries waits until no go-redis pool is retrying to dial. After
// as many failed dials as its pool size (a stopped server), a go-redis pool
// starts a goroutine that re-dials every second until the pool is closed,
// and it notices the close only after its sleep: up to a second after
// Close. Waiting here keeps the leak check in TestMain from seeing it.
func waitDialRetries(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !bytes.Contains(buf[:n], []byte("(*ConnPool).tryDial")) {
			return
		}
		if time.Now().After(deadline) {
			t.Error("a go-redis pool still re-dials 5s after its client was closed")
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockInBackground runs l.Lock(ctx) in a goroutine. The function it returns
// waits (at most 20 s) for that Lock to succeed, failing the test otherwise
// with what named, and returns when Lock returned.
func lockInBackground(ctx context.Context, t *testing.T, l redisync.Locker) func(what string) time.Time {
	type result struct {
		at  time.Time
		err error
	}
	ch := make(chan result, 1)
	go func() {
		err := l.Lock(ctx)
		ch <- result{time.Now(), err}
	}()
	return func(what string) time.Time {
		t.Helper()
		select {
		case r := <-ch:
			require.NoError(t, r.err, what)
			return r.at
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not get in", what)
			return time.Time{}
		}
	}
}
