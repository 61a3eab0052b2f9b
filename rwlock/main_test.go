package rwlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// TestMain starts the shared server before the tests, for the Example
// functions (exampleAddr), and checks for leaked goroutines after them.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

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

// snapshot is the lock's hash and the TTL state of the timeout keys of the
// given owners, for "nothing changed" checks.
func snapshot(t *testing.T, rdb redis.UniversalClient, name string, owners ...string) string {
	t.Helper()
	ctx := context.Background()
	h, err := rdb.HGetAll(ctx, name).Result()
	require.NoError(t, err)
	s := fmt.Sprint(h)
	for _, o := range owners {
		for i := int64(1); i <= 3; i++ {
			n, err := rdb.Exists(ctx, keys.RWTimeoutKey(name, o, i)).Result()
			require.NoError(t, err)
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

// wokenBy starts acquire in the background, waits until it waits on c,
// runs release, and fails the test with msg unless acquire then succeeds
// within 5s.
func wokenBy(t *testing.T, c *redisync.Client, acquire func() error, release func(), msg string) {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- acquire() }()
	clienttest.WaitWaiters(t, 1, c)
	release()
	select {
	case err := <-got:
		require.NoError(t, err, msg)
	case <-time.After(5 * time.Second):
		require.FailNow(t, msg)
	}
}

// waitClosed fails the test with msg unless done is closed within d.
func waitClosed(t *testing.T, done <-chan struct{}, d time.Duration, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		require.FailNow(t, msg)
	}
}
