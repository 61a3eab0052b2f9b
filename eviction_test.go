package redisync_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// evictionWatch is a Client with a log and an observer of its eviction
// warnings.
type evictionWatch struct {
	c   *redisync.Client
	log *syncBuffer
	mu  sync.Mutex
	got []redisync.EvictionPolicy
}

func watchEvictions(t *testing.T, rdb redis.UniversalClient, opts ...redisync.Option) *evictionWatch {
	t.Helper()
	w := &evictionWatch{log: &syncBuffer{}}
	opts = append(opts,
		redisync.WithLogger(slog.New(slog.NewTextHandler(w.log, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		redisync.WithObserver(redisync.Observer{Eviction: func(p redisync.EvictionPolicy) {
			w.mu.Lock()
			w.got = append(w.got, p)
			w.mu.Unlock()
		}}))
	w.c = redisync.New(rdb, opts...)
	t.Cleanup(func() { _ = w.c.Close() })
	return w
}

func (w *evictionWatch) events() []redisync.EvictionPolicy {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]redisync.EvictionPolicy(nil), w.got...)
}

// warnings returns the Warn records of the log that name eviction.
func (w *evictionWatch) warnings() []string {
	var out []string
	for _, l := range strings.Split(w.log.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "maxmemory-policy") {
			out = append(out, l)
		}
	}
	return out
}

// lockSome takes and releases n locks at once (so that go-redis dials
// more than one connection).
func lockSome(t *testing.T, c *redisync.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := rlock.New(c, redistest.Key(t, fmt.Sprint(i)))
			if err := l.Lock(ctx); err != nil {
				errs <- err
				return
			}
			errs <- l.Unlock(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// reads returns the Debug records of the policies read.
func (w *evictionWatch) reads() []string {
	var out []string
	for _, l := range strings.Split(w.log.String(), "\n") {
		if strings.Contains(l, "level=DEBUG") && strings.Contains(l, "the primary's maxmemory-policy") {
			out = append(out, l)
		}
	}
	return out
}

// Issue 38: a primary whose maxmemory-policy can evict keys (allkeys-lru)
// is reported once: a Warn record naming the policy, Stats and the
// Observer; a primary with noeviction is not.
func TestEvictionPolicyWarning(t *testing.T) {
	t.Parallel()
	t.Run("allkeys-lru", func(t *testing.T) {
		t.Parallel()
		s := redistest.Start(t, redistest.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"))
		w := watchEvictions(t, s.Client(t))
		lockSome(t, w.c, 20)
		require.Eventually(t, func() bool { return w.c.Stats().EvictingPrimaries == 1 }, 10*time.Second, 10*time.Millisecond,
			"no eviction warning")
		lockSome(t, w.c, 20)
		time.Sleep(200 * time.Millisecond)
		assert.Equal(t, uint64(1), w.c.Stats().EvictingPrimaries, "once per primary")
		assert.Equal(t, []redisync.EvictionPolicy{{Primary: s.Addr(), Policy: "allkeys-lru"}}, w.events())
		assert.Len(t, w.reads(), 1, "read once")
		warns := w.warnings()
		require.Len(t, warns, 1, w.log.String())
		assert.Contains(t, warns[0], "policy=allkeys-lru")
		assert.Contains(t, warns[0], "noeviction")
	})
	t.Run("volatile-lru", func(t *testing.T) {
		t.Parallel()
		// every key redisync writes has a TTL: volatile-* evicts them too
		s := redistest.Start(t, redistest.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"))
		w := watchEvictions(t, s.Client(t))
		lockSome(t, w.c, 1)
		require.Eventually(t, func() bool { return w.c.Stats().EvictingPrimaries == 1 }, 10*time.Second, 10*time.Millisecond,
			"no eviction warning")
		assert.Equal(t, []redisync.EvictionPolicy{{Primary: s.Addr(), Policy: "volatile-lru"}}, w.events())
	})
	t.Run("noeviction", func(t *testing.T) {
		t.Parallel()
		s := redistest.Start(t, redistest.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "noeviction"))
		w := watchEvictions(t, s.Client(t))
		lockSome(t, w.c, 20)
		require.Eventually(t, func() bool { return len(w.reads()) >= 1 }, 10*time.Second, 10*time.Millisecond,
			"the policy was never read")
		lockSome(t, w.c, 20)
		time.Sleep(200 * time.Millisecond)
		assert.Zero(t, w.c.Stats().EvictingPrimaries)
		assert.Empty(t, w.events())
		assert.Empty(t, w.warnings())
		reads := w.reads()
		require.Len(t, reads, 1, "read once")
		assert.Contains(t, reads[0], "policy=noeviction")
	})
}

// Issue 38: through Sentinel, the policy of the primary a failover
// promotes is read when the client first connects to it.
func TestEvictionPolicyWarningAfterFailover(t *testing.T) {
	t.Parallel()
	sen := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	sen.Replicas[0].Do(t, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	w := watchEvictions(t, sen.Client(t))
	lockSome(t, w.c, 2)
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, w.c.Stats().EvictingPrimaries, "the first primary has noeviction")

	next := sen.Failover(t)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l := rlock.New(w.c, redistest.Key(t))
		if err := l.Lock(ctx); err != nil {
			return false
		}
		_ = l.Unlock(ctx)
		return w.c.Stats().EvictingPrimaries == 1
	}, 30*time.Second, 100*time.Millisecond, "no warning for the promoted primary")
	assert.Equal(t, []redisync.EvictionPolicy{{Primary: next.Addr(), Policy: "allkeys-lru"}}, w.events())
}

// Issue 38: on a Cluster, each master is read.
func TestEvictionPolicyWarningCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	for _, s := range cl.Servers {
		s.Do(t, "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
	}
	w := watchEvictions(t, cl.Client(t))
	lockSome(t, w.c, 30) // names in every master's slots
	require.Eventually(t, func() bool { return w.c.Stats().EvictingPrimaries == 3 }, 10*time.Second, 10*time.Millisecond,
		"not every master warned: %v", w.events())
	for _, e := range w.events() {
		assert.Equal(t, "allkeys-lfu", e.Policy)
	}
}

// Issue 38: 50 locks held on a server with a small maxmemory and
// allkeys-lru, then junk writes until every lock key is evicted: each
// holder learns at its next renewal that its hold is lost, with a cause
// that names eviction, and the tokens of the next holders are above every
// earlier one (their counters were evicted too). Before, the cause was a
// generic "gone from Redis" and the tokens started again at 1.
func TestHeldLocksEvicted(t *testing.T) {
	t.Parallel()
	const n = 50
	s := redistest.Start(t, redistest.WithArgs("--maxmemory", "5mb", "--maxmemory-policy", "allkeys-lru"))
	w := watchEvictions(t, s.Client(t), redisync.WithWatchdogTimeout(3*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	locks := make([]*rlock.Lock, n)
	names := make([]string, n)
	var highest int64
	for i := range locks {
		names[i] = redistest.Key(t, fmt.Sprint(i))
		locks[i] = rlock.New(w.c, names[i], rlock.WithFencing())
		require.NoError(t, locks[i].Lock(ctx))
		highest = max(highest, locks[i].FencingToken())
	}
	require.Eventually(t, func() bool { return w.c.Stats().EvictingPrimaries == 1 }, 10*time.Second, 10*time.Millisecond,
		"no eviction warning")

	direct := s.Client(t)
	junk := strings.Repeat("x", 100<<10)
	left := func() int {
		// OBJECT ENCODING does not touch the key (its LRU clock stays)
		cmds, _ := direct.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, name := range names {
				p.ObjectEncoding(ctx, name)
				p.ObjectEncoding(ctx, keys.FenceCounter(name))
			}
			return nil
		})
		live := 0
		for _, c := range cmds {
			if c.Err() == nil {
				live++
			}
		}
		return live
	}
	for round := 0; left() > 0; round++ {
		require.Less(t, round, 200, "lock keys still there after %d MB of junk", round*5)
		_, err := direct.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range 50 {
				p.Set(ctx, fmt.Sprintf("junk:%s:%d:%d", t.Name(), round, i), junk, 0)
			}
			return nil
		})
		require.NoError(t, err)
	}

	for i, l := range locks {
		select {
		case <-l.Done():
		case <-ctx.Done():
			t.Fatalf("lock %d: its holder was not told of the eviction", i)
		}
		err := l.Err()
		require.ErrorIs(t, err, redisync.ErrLockLost, "lock %d", i)
		assert.Contains(t, err.Error(), "evicted", "lock %d", i)
		assert.Contains(t, err.Error(), "allkeys-lru", "lock %d", i)
	}
	assert.Equal(t, uint64(n), w.c.Stats().HoldsLost)

	other := redisync.New(s.Client(t))
	t.Cleanup(func() { _ = other.Close() })
	for i, name := range names {
		l := rlock.New(other, name, rlock.WithFencing())
		require.NoError(t, l.Lock(ctx), "lock %d", i)
		assert.Greater(t, l.FencingToken(), highest, "lock %d: a token below an earlier holder's", i)
		require.NoError(t, l.Unlock(ctx))
	}
}
