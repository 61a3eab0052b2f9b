package ratelimit

import (
	"context"
	"strings"
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
	"github.com/redisync/redisync/lua"
)

// scriptCounter is a go-redis hook that counts the runs of one script
// (an EVALSHA answered NOSCRIPT and the EVAL after it count once).
type scriptCounter struct {
	script *redis.Script
	n      atomic.Int64
}

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd, err)
		return err
	}
}

func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd, cmd.Err())
		}
		return err
	}
}

func (h *scriptCounter) count(cmd redis.Cmder, err error) {
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return
	}
	if clienttest.ScriptIs(cmd.Args(), h.script) {
		h.n.Add(1)
	}
}

// headDelayed reports whether the head of c's line for name has Redis's
// delay (it then sleeps on it).
func headDelayed(c *redisync.Client, name string) bool {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[lineKey{(*core.Client)(c), name}]
	return l != nil && !l.next.IsZero()
}

// Ten callers of one Client wait on one Limiter: only the head of the
// local line sends the acquire script, so the scripts sent are one per
// attempt of the head (its first, each retry a Release or a kick causes,
// the next head's first), whatever the number of waiters behind it.
func TestOnlyHeadAsksRedis(t *testing.T) {
	acquires := &scriptCounter{script: lua.RateAcquire}
	rdb := redistest.Shared(t).Client(t)
	rdb.AddHook(acquires)
	c := clienttest.New(t, rdb)
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	l := New(c, name)
	require.NoError(t, l.SetRate(ctx, Overall, 1, time.Hour))
	ok, err := l.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1), acquires.n.Load())

	const waiters = 10
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan int, waiters)
	for i := range waiters {
		go func() {
			if err := l.Acquire(wctx, 1); err == nil {
				done <- i
			} else {
				assert.ErrorIs(t, err, context.Canceled)
				done <- -1
			}
		}()
		require.Eventually(t, func() bool { return lineLen((*core.Client)(c), name) == i+1 },
			5*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool { return headDelayed(c, name) }, 5*time.Second, time.Millisecond)
	want := int64(2) // the TryAcquire, and the head's first attempt
	require.Equal(t, want, acquires.n.Load(), "only the head asked")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, want, acquires.n.Load(), "the waiters behind the head send nothing")

	// Each wake-up of the head (as a Release of this Client does) is one
	// more attempt, one more script: not one per waiter.
	for range 5 {
		kick(lineKey{(*core.Client)(c), name})
		want++
		require.Eventually(t, func() bool { return acquires.n.Load() == want }, 5*time.Second, time.Millisecond)
	}
	// Each Release: the head's attempt, granted, then the next head's
	// first attempt, short.
	for i := range 3 {
		require.NoError(t, l.Release(ctx, 1))
		select {
		case got := <-done:
			require.Equal(t, i, got, "served in order")
		case <-time.After(10 * time.Second):
			t.Fatal("the head was not served after a Release")
		}
		want += 2
		require.Eventually(t, func() bool { return acquires.n.Load() == want && headDelayed(c, name) },
			5*time.Second, time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, want, acquires.n.Load(), "5 kicks and 3 releases: 2 + 5 + 3·2 scripts for 10 waiters")
	assert.Equal(t, waiters-3, lineLen((*core.Client)(c), name))

	cancel()
	for range waiters - 3 {
		require.Equal(t, -1, <-done)
	}
	assert.Zero(t, lineLen((*core.Client)(c), name))
	assert.Equal(t, want, acquires.n.Load(), "cancelled waiters send nothing")
}
