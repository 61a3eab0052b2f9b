package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// fipsAddrEnv carries the server's address to the copy of the test binary
// TestFIPS140Only runs in FIPS 140-3 mode.
const fipsAddrEnv = "REDISYNC_TEST_FIPS_ADDR"

// The library runs in FIPS 140-3 mode (GODEBUG=fips140=only), where SHA-1
// panics: it computes no script digest at run time (package lua's are
// recorded when its bindings are generated). The test runs its own binary
// again in that mode, where a lock, a semaphore and both rate limiters go
// through a round against the shared server, a waiter woken by pub/sub
// among them. Before the digests were recorded, that binary panicked at
// package lua's initialization.
func TestFIPS140Only(t *testing.T) {
	if addr := os.Getenv(fipsAddrEnv); addr != "" {
		fipsRound(t, addr)
		return
	}
	addr := redistest.Shared(t).Addr()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFIPS140Only$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=only", fipsAddrEnv+"="+addr)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test binary in FIPS 140-only mode:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestFIPS140Only", "%s", out)
	assert.NotContains(t, strings.ToLower(string(out)), "panic")
}

// fipsRound is TestFIPS140Only's round in FIPS 140-only mode.
func fipsRound(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb, redisync.WithRecheckInterval(time.Minute))
	name := redistest.Key(t)

	l, w := rlock.New(c, name+":lock"), rlock.New(c, name+":lock")
	require.NoError(t, l.Lock(ctx))
	errc := make(chan error, 1)
	go func() { errc <- w.Lock(ctx) }()
	clienttest.WaitWaiters(t, 1, c)
	require.NoError(t, l.Unlock(ctx))
	waitDone(t, "the lock's waiter", errc)
	require.NoError(t, w.Unlock(ctx))

	s := semaphore.New(c, name+":sem")
	ok, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Acquire(ctx, 1))
	require.NoError(t, s.Release(ctx, 1))
	n, err := s.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)

	rl := ratelimit.New(c, name+":rate")
	ok, err = rl.TrySetRate(ctx, ratelimit.Overall, 2, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = rl.TryAcquire(ctx, 2, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = rl.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	assert.False(t, ok, "the rate is spent")

	g := ratelimit.NewGCRA(c, name+":gcra", ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 1})
	ok, err = g.Allow(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = g.Allow(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "the burst is spent")
}
