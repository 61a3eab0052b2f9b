package rwlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// checker is the in-process record of who is inside the guarded section.
type checker struct {
	mu               sync.Mutex
	readers, writers int
	maxReaders       int
	reads, writes    int
	downgrades       int
	violations       []string
}

func (c *checker) enter(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if write {
		if c.readers != 0 || c.writers != 0 {
			c.violations = append(c.violations, "writer entered with readers or a writer inside")
		}
		c.writers++
		c.writes++
		return
	}
	if c.writers != 0 {
		c.violations = append(c.violations, "reader entered with a writer inside")
	}
	c.readers++
	c.reads++
	c.maxReaders = max(c.maxReaders, c.readers)
}

func (c *checker) leave(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if write {
		c.writers--
	} else {
		c.readers--
	}
}

// downgrade turns the writer inside into a reader; it runs while the write
// side is still held, so nobody else can be inside.
func (c *checker) downgrade() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writers--
	c.readers++
	c.downgrades++
	c.maxReaders = max(c.maxReaders, c.readers)
}

// TestHammer: 4 clients, 3 goroutines each, mixing reads, writes, reentrant
// writes and downgrades on one lock for a few seconds. No writer may ever
// overlap a reader or another writer, and readers must overlap.
func TestHammer(t *testing.T) {
	const (
		clients = 4
		workers = 3
		run     = 3 * time.Second
	)
	name := redistest.Key(t, "rw")
	ctx, cancel := context.WithTimeout(context.Background(), run+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(run)
	var chk checker

	var wg sync.WaitGroup
	for range clients {
		// A short watchdog timeout makes renewals run during the hammer.
		c := clienttest.Shared(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
		for range workers {
			rw := rwlock.New(c, name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each worker is one owner: it re-enters and downgrades.
				ctx := redisync.WithOwner(ctx)
				for time.Now().Before(deadline) {
					if !assert.NoError(t, step(ctx, rw, &chk)) {
						return
					}
					// Not a synchronisation: a random pause between sections.
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				}
			}()
		}
	}
	wg.Wait()

	chk.mu.Lock()
	defer chk.mu.Unlock()
	t.Logf("%d reads (up to %d at once), %d writes, %d downgrades", chk.reads, chk.maxReaders, chk.writes, chk.downgrades)
	assert.Empty(t, chk.violations[:min(len(chk.violations), 10)], "%d violations in all", len(chk.violations))
	require.Positive(t, chk.reads, "the hammer did not read")
	require.Positive(t, chk.writes, "the hammer did not write")
	require.GreaterOrEqual(t, chk.maxReaders, 2, "readers never overlapped")
	require.Zero(t, chk.readers, "readers left inside")
	require.Zero(t, chk.writers, "writers left inside")
}

// step runs one random guarded section.
func step(ctx context.Context, rw *rwlock.RWLock, chk *checker) error {
	hold := func() { time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) } // work inside the section
	switch n := rand.IntN(10); {
	case n < 7: // read
		if err := rw.RLock(ctx); err != nil {
			return err
		}
		chk.enter(false)
		hold()
		chk.leave(false)
		return rw.RUnlock(ctx)
	case n < 9: // write, sometimes reentrant
		if err := rw.Lock(ctx); err != nil {
			return err
		}
		chk.enter(true)
		if n == 8 {
			if err := rw.Lock(ctx); err != nil {
				return err
			}
			if err := rw.Unlock(ctx); err != nil {
				return err
			}
		}
		hold()
		chk.leave(true)
		return rw.Unlock(ctx)
	default: // write, then downgrade to read
		if err := rw.Lock(ctx); err != nil {
			return err
		}
		chk.enter(true)
		hold()
		if err := rw.RLock(ctx); err != nil {
			return err
		}
		chk.downgrade()
		if err := rw.Unlock(ctx); err != nil {
			return err
		}
		hold()
		chk.leave(false)
		return rw.RUnlock(ctx)
	}
}
