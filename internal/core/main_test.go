package core

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// TestMain stops the shared server after the tests and checks for leaked
// goroutines (a wait that kept its subscription, a watchdog left running).
func TestMain(m *testing.M) { redistest.Main(m) }

// testClient returns a Client over rdb with o, closed when the test ends.
func testClient(t *testing.T, rdb redis.UniversalClient, o Options) *Client {
	t.Helper()
	c := NewClient(rdb, o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// sharedClient returns a Client with o over a go-redis client of its own on
// the shared server.
func sharedClient(t *testing.T, o Options) *Client {
	t.Helper()
	return testClient(t, redistest.Shared(t).Client(t), o)
}
