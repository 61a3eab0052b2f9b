package clienttest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// Recorded returns a redisync client on s whose commands rec records.
func Recorded(t testing.TB, s *redistest.Server) (*redisync.Client, *redistest.Recorder) {
	t.Helper()
	rdb := s.Client(t)
	rec := &redistest.Recorder{}
	rdb.AddHook(rec)
	return New(t, rdb), rec
}

// ScriptIs reports whether the script call args (EVALSHA's, or EVAL's
// after NOSCRIPT) ran script.
func ScriptIs(args []any, script *redis.Script) bool {
	if len(args) < 2 {
		return false
	}
	if src, ok := args[1].(string); ok && args[0] == "eval" {
		sum := sha1.Sum([]byte(src))
		return hex.EncodeToString(sum[:]) == script.Hash()
	}
	return args[1] == script.Hash()
}

// HandoffRacingCancel runs 30 rounds in which a locks, b (a handle of the
// same client on the same lock) waits in the client's local line
// (lineLen counts it), and b's wait is cancelled around a's Unlock, which
// may hand the lock to b: b returns either holding the lock (it then
// unlocks) or with ctx's error, and afterwards the lock is free (locked
// reports it), the line is empty and no hold of c is renewed.
func HandoffRacingCancel(t *testing.T, ctx context.Context, c *redisync.Client, a, b redisync.Locker, lineLen func() int, locked func(context.Context) (bool, error)) {
	t.Helper()
	for i := range 30 {
		require.NoError(t, a.Lock(ctx))
		wctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() { got <- b.Lock(wctx) }()
		require.Eventually(t, func() bool { return lineLen() == 1 }, 5*time.Second, time.Millisecond)
		go func() {
			time.Sleep(time.Duration(i%6) * 50 * time.Microsecond)
			cancel()
		}()
		require.NoError(t, a.Unlock(ctx))
		if err := <-got; err == nil {
			require.NoError(t, b.Unlock(ctx), "round %d: b returned holding the lock", i)
		} else {
			require.ErrorIs(t, err, context.Canceled)
		}
		cancel()
		require.Eventually(t, func() bool {
			l, err := locked(ctx)
			return err == nil && !l
		}, 5*time.Second, time.Millisecond, "round %d: a hold was left behind", i)
		assert.Zero(t, lineLen(), "round %d: a line entry was left behind", i)
		assert.Zero(t, (*core.Client)(c).Holds().Stats().Holds, "round %d: a hold is renewed", i)
	}
	NoSubscriptions(t, c)
}

// Exclusion watches a section guarded by a lock: how many callers are in
// it now, the most that were at once, and how many went through.
type Exclusion struct {
	inside, most, total atomic.Int64
}

// Enter records a caller entering the section.
func (x *Exclusion) Enter() {
	n := x.inside.Add(1)
	for m := x.most.Load(); n > m; m = x.most.Load() {
		if x.most.CompareAndSwap(m, n) {
			break
		}
	}
	x.total.Add(1)
}

// Leave records a caller leaving the section.
func (x *Exclusion) Leave() { x.inside.Add(-1) }

// Pass records a caller going through the section at once.
func (x *Exclusion) Pass() { x.Enter(); x.Leave() }

// Inside returns the callers in the section now.
func (x *Exclusion) Inside() int64 { return x.inside.Load() }

// Most returns the most callers that were in the section at once.
func (x *Exclusion) Most() int64 { return x.most.Load() }

// Total returns how many callers went through the section.
func (x *Exclusion) Total() int64 { return x.total.Load() }

// Hammer starts n goroutines that each take a handle from newLocker and
// lock it, pass through x and unlock it, over and over, until stop, which
// waits for them. Failures are reported on t and end that goroutine.
func Hammer(t testing.TB, ctx context.Context, n int, newLocker func() redisync.Locker, x *Exclusion) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := newLocker()
			for {
				select {
				case <-done:
					return
				default:
				}
				if !assert.NoError(t, l.Lock(ctx)) {
					return
				}
				x.Pass()
				if !assert.NoError(t, l.Unlock(ctx)) {
					return
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// Queued returns the ids of the Clients in the queue of waiting Clients
// whose sorted set is waiters (keys.LockWaiters, keys.SemaphoreWaiters),
// first first (docs/wake.md).
func Queued(t testing.TB, rdb redis.UniversalClient, waiters string) []string {
	t.Helper()
	ids, err := rdb.ZRange(context.Background(), waiters, 0, -1).Result()
	require.NoError(t, err)
	return ids
}

// WaitQueued waits up to 5 s until the queue waiters holds n Clients.
func WaitQueued(t testing.TB, rdb redis.UniversalClient, waiters string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(Queued(t, rdb, waiters)) == n }, 5*time.Second,
		2*time.Millisecond, "%d clients queued", n)
}

// Async runs f in a goroutine; the channel gets its result.
func Async(f func() error) <-chan error {
	got := make(chan error, 1)
	go func() { got <- f() }()
	return got
}

// Received waits up to d for got's result, which must be no error.
func Received(t testing.TB, got <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-got:
		require.NoError(t, err, what)
	case <-time.After(d):
		t.Fatalf("%s: not woken within %v", what, d)
	}
}
