// Package clienttest gives tests redisync clients, closed when the test
// ends, and waits on their pub/sub multiplexers. It is apart from
// internal/redistest because it imports the root package, which imports
// internal/core, whose own tests use redistest: redistest importing the
// root package would be an import cycle.
package clienttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/pubsub"
)

// New returns a redisync client over rdb with opts. It is closed when the
// test finishes (t.Cleanup); rdb is not (redistest's clients close
// themselves).
func New(t testing.TB, rdb redis.UniversalClient, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c := redisync.New(rdb, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Shared returns a redisync client with opts, over a go-redis client of its
// own on the package's shared server (redistest.Shared). Both are closed
// when the test finishes.
func Shared(t testing.TB, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	return New(t, redistest.Shared(t).Client(t), opts...)
}

// Stats returns a snapshot of c's pub/sub multiplexer: its channels, its
// waiters, its connections.
func Stats(c *redisync.Client) pubsub.Stats { return (*core.Client)(c).Mux().Stats() }

// WaitWaiters fails the test unless the clients together come to have n
// pub/sub waiters within 20 s (generous: a busy machine).
func WaitWaiters(t testing.TB, n int, cs ...*redisync.Client) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, fmt.Sprintf("%d pub/sub waiters", n), func() error {
		got := 0
		for _, c := range cs {
			got += Stats(c).Waiters
		}
		if got != n {
			return fmt.Errorf("%d waiters", got)
		}
		return nil
	})
}

// NoSubscriptions fails the test unless c's multiplexer comes to hold no
// channel and no waiter within 5 s.
func NoSubscriptions(t testing.TB, c *redisync.Client) {
	t.Helper()
	redistest.Eventually(t, 5*time.Second, "no pub/sub channel and no waiter left", func() error {
		if s := Stats(c); s.Channels != 0 || s.Waiters != 0 {
			return fmt.Errorf("%d channels, %d waiters", s.Channels, s.Waiters)
		}
		return nil
	})
}

// Proxied returns a redisync client with opts whose connections go through
// a fault proxy to s, and the proxy. ro gives the go-redis options (its Addr
// is the proxy's). The go-redis client and the redisync client are closed
// when the test finishes.
func Proxied(t testing.TB, s *redistest.Server, ro redis.Options, opts ...redisync.Option) (*redisync.Client, *redistest.Proxy) {
	t.Helper()
	proxy := redistest.NewProxy(t, s.Addr())
	ro.Addr = proxy.Addr()
	rdb := redis.NewClient(&ro)
	t.Cleanup(func() { _ = rdb.Close() })
	return New(t, rdb, opts...), proxy
}

// FailWhileCut runs release while the proxy's network is cut, so that it
// fails and never reaches Redis: the held request is dropped with its
// connection before the network comes back.
func FailWhileCut(t testing.TB, proxy *redistest.Proxy, release func() error) {
	t.Helper()
	proxy.Block()
	err := release()
	proxy.CutAll()
	proxy.Unblock()
	if err == nil {
		t.Fatal("clienttest: the release succeeded while the network was cut")
	}
}
