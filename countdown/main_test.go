package countdown_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// newClient returns a redisync client over rdb, closed when the test ends.
func newClient(t *testing.T, rdb redis.UniversalClient, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c := redisync.New(rdb, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// sharedClient returns a redisync client with its own go-redis client on the
// shared server.
func sharedClient(t *testing.T, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	return newClient(t, redistest.Shared(t).Client(t), opts...)
}

// eventually fails the test unless cond holds within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitersOf returns how many waiters c's pub/sub multiplexer holds.
func waitersOf(c *redisync.Client) int { return (*core.Client)(c).Mux().Stats().Waiters }

// channelsOf returns how many channels c's pub/sub multiplexer holds.
func channelsOf(c *redisync.Client) int { return (*core.Client)(c).Mux().Stats().Channels }
