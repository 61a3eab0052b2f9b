package semaphore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
)

// countedClient returns a redisync client on the shared server and the
// counter of the commands it sends.
func countedClient(t *testing.T) (*redisync.Client, *redistest.Counter) {
	t.Helper()
	cc := new(redistest.Counter)
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(cc)
	return clienttest.New(t, rdb), cc
}

// allInvalidNothingSent checks that every call in invalid failed with
// ErrInvalidArgument and that cc counted no command.
func allInvalidNothingSent(t *testing.T, invalid map[string]error, cc *redistest.Counter) {
	t.Helper()
	for what, err := range invalid {
		assert.ErrorIs(t, err, redisync.ErrInvalidArgument, what)
	}
	require.Zero(t, cc.Load(), "commands sent")
}

// proxied returns a redisync client whose connections go through a fault
// injecting proxy to the shared server.
func proxied(t *testing.T, mods ...func(*redis.Options)) (*redisync.Client, *redis.Client, *redistest.Proxy) {
	t.Helper()
	p := redistest.NewProxy(t, redistest.Shared(t).Addr())
	opt := &redis.Options{Addr: p.Addr()}
	for _, m := range mods {
		m(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return clienttest.New(t, rdb), rdb, p
}

// waiters returns the number of pub/sub waiters of c.
func waiters(c *core.Client) int { return c.Mux().Stats().Waiters }

// channels returns the number of channels c is subscribed to.
func channels(c *core.Client) int { return c.Mux().Stats().Channels }

// result is what a goroutine's call returned, and when.
type result struct {
	err error
	at  time.Time
}

// async runs f in a goroutine and returns a channel for its result.
func async(f func() error) <-chan result {
	ch := make(chan result, 1)
	go func() {
		err := f()
		ch <- result{err, time.Now()}
	}()
	return ch
}

// pending fails the test if ch delivers within d.
func pending(t *testing.T, ch <-chan result, d time.Duration, what string) {
	t.Helper()
	select {
	case r := <-ch:
		require.FailNowf(t, "returned early", "%s returned early (err %v)", what, r.err)
	case <-time.After(d):
	}
}

// await returns ch's result, failing the test after d.
func await(t *testing.T, ch <-chan result, d time.Duration, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		require.FailNowf(t, "no return", "%s did not return within %v", what, d)
		return result{}
	}
}

// eachClient runs section sections times in each of clients goroutines (c
// is the goroutine's index) and fails the test with the errors returned; a
// goroutine stops at its first error.
func eachClient(t *testing.T, clients, sections int, section func(c int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range sections {
				if err := section(c); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// mostHolders runs sections 10 ms sections in each of clients goroutines,
// each between acquire(c), which takes a permit for client c and returns
// its release, and that release. It returns the most sections that were
// inside at once.
func mostHolders(t *testing.T, clients, sections int, acquire func(c int) (release func() error, err error)) int64 {
	t.Helper()
	var inside, most atomic.Int64
	eachClient(t, clients, sections, func(c int) error {
		release, err := acquire(c)
		if err != nil {
			return err
		}
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(10 * time.Millisecond) // the section's work, for others to overlap with
		inside.Add(-1)
		return release()
	})
	return most.Load()
}
