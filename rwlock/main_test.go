package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// TestMain starts the shared server before the tests, for the Example
// functions (exampleAddr), and checks for leaked goroutines after them.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// newClient returns a redisync client on the shared server, closed when the
// test ends.
func newClient(t *testing.T, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c := redisync.New(redistest.Shared(t).Client(t), opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testCtx bounds a test so that a hang fails instead of blocking the run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// owner is the owner a handle acts for in ctx, built the way Redisson builds
// it: "<client id>:<token>".
func owner(c *redisync.Client, ctx context.Context) string {
	tok, _ := redisync.OwnerToken(ctx)
	return fmt.Sprintf("%s:%d", c.ID(), tok)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCount(t *testing.T, what string, got int64, err error, want int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != want {
		t.Fatalf("%s = %d, want %d", what, got, want)
	}
}

func wantBool(t *testing.T, what string, got bool, err error, want bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// eventually polls f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waiters is the number of waiters registered in c's pub/sub multiplexer.
func waiters(c *redisync.Client) int { return (*core.Client)(c).Mux().Stats().Waiters }

// waitWaiters waits until the clients together have n registered waiters.
func waitWaiters(t *testing.T, n int, cs ...*redisync.Client) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		got := 0
		for _, c := range cs {
			got += waiters(c)
		}
		if got != n {
			return fmt.Errorf("%d waiters, want %d", got, n)
		}
		return nil
	})
}

// noSubscriptions checks that c's multiplexer holds no channel and no waiter.
func noSubscriptions(t *testing.T, c *redisync.Client) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		if s := (*core.Client)(c).Mux().Stats(); s.Channels != 0 || s.Waiters != 0 {
			return fmt.Errorf("pubsub still has %d channels, %d waiters", s.Channels, s.Waiters)
		}
		return nil
	})
}

// snapshot is the lock's hash and the TTL state of the timeout keys of the
// given owners, for "nothing changed" checks.
func snapshot(t *testing.T, rdb redis.UniversalClient, name string, owners ...string) string {
	t.Helper()
	ctx := context.Background()
	h, err := rdb.HGetAll(ctx, name).Result()
	must(t, err)
	s := fmt.Sprint(h)
	for _, o := range owners {
		for i := int64(1); i <= 3; i++ {
			n, err := rdb.Exists(ctx, keys.RWTimeoutKey(name, o, i)).Result()
			must(t, err)
			s += fmt.Sprintf(" %s:%d=%d", o, i, n)
		}
	}
	return s
}

// ownerCtx returns a context carrying a fresh owner, and that owner's name
// in c.
func ownerCtx(t *testing.T, c *redisync.Client) (context.Context, string) {
	ctx := redisync.WithOwner(testCtx(t))
	return ctx, owner(c, ctx)
}

// newRW returns a handle on a fresh lock name.
func newRW(t *testing.T, c *redisync.Client, opts ...rwlock.Option) *rwlock.RWLock {
	return rwlock.New(c, redistest.Key(t, "rw"), opts...)
}

// waitClosed fails the test with msg unless done is closed within d.
// wokenBy starts acquire in the background, waits until it waits on c,
// runs release, and fails the test with msg unless acquire then succeeds
// within 5s.
func wokenBy(t *testing.T, c *redisync.Client, acquire func() error, release func(), msg string) {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- acquire() }()
	waitWaiters(t, 1, c)
	release()
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal(msg)
	}
}

func waitClosed(t *testing.T, done <-chan struct{}, d time.Duration, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal(msg)
	}
}
