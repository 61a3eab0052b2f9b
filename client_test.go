package redisync_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

func TestClientIDAndRedis(t *testing.T) {
	rdb := redistest.Shared(t).Client(t)
	c := redisync.New(rdb)
	defer c.Close()
	_, err := uuid.Parse(c.ID())
	assert.NoError(t, err, "the default id is a UUID")
	assert.Same(t, rdb, c.Redis())
	other := redisync.New(rdb)
	defer other.Close()
	assert.NotEqual(t, c.ID(), other.ID())

	named := redisync.New(rdb, redisync.WithID("billing-7"))
	defer named.Close()
	assert.Equal(t, "billing-7", named.ID())
}

// New does no I/O: a client over an unreachable address is built and closed
// without error.
func TestNewDoesNoIO(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(time.Second))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
}

// The logger hears about what no call can report, such as a lost hold.
func TestLoggerHearsLoss(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, nil))
	c := redisync.New(s.Client(t), redisync.WithLogger(logger), redisync.WithWatchdogTimeout(600*time.Millisecond))
	defer c.Close()
	name := redistest.Key(t)
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, s.Client(t).Del(ctx, name).Err())
	<-l.Done()
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, buf.String(), "hold ended")
	assert.Contains(t, buf.String(), name)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Warnings nobody saw: without WithLogger, Warn records went to a
// logger that discards. They go to slog.Default() now.
func TestWarningsGoToTheDefaultLogger(t *testing.T) {
	var buf syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	s := redistest.Start(t, redistest.WithArgs("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"))
	c := redisync.New(s.Client(t))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	redistest.Eventually(t, 5*time.Second, "the eviction warning in slog.Default()", func() error {
		if !strings.Contains(buf.String(), "level=WARN") {
			return errors.New("no Warn record yet")
		}
		return nil
	})
	assert.NotContains(t, buf.String(), "level=DEBUG", "Debug records stay out")
}
