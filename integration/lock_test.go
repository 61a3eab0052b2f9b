package integration

import (
	"context"
	"fmt"
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
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// deployment is one way to reach Redis, with its own clients.
type deployment struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

// deployments starts a 3-master cluster and a sentinel-monitored master
// once per test that asks.
func deployments(t *testing.T) []deployment {
	cl := redistest.StartCluster(t, 3)
	se := redistest.StartSentinel(t)
	return []deployment{
		{"cluster", func(t *testing.T) redis.UniversalClient { return cl.Client(t) }},
		{"sentinel", func(t *testing.T) redis.UniversalClient { return se.Client(t) }},
	}
}

// The lock works the same on a Cluster and through Sentinel: reentrancy,
// fencing, a waiter woken by the release, mutual exclusion across clients,
// and renewal of holds spread over many slots.
func TestLockAcrossDeployments(t *testing.T) {
	for _, d := range deployments(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := redisync.WithOwner(context.Background()) // it re-enters
			c1 := clienttest.New(t, d.client(t), redisync.WithWatchdogTimeout(1500*time.Millisecond))
			c2 := clienttest.New(t, d.client(t), redisync.WithRecheckInterval(time.Minute))

			// Names in many slots, with and without hash tags.
			names := []string{redistest.Key(t), "orders:{" + redistest.Key(t) + "}:1", "{" + redistest.Key(t) + "}"}
			for _, name := range names {
				l := rlock.New(c1, name, rlock.WithFencing())
				require.NoError(t, l.Lock(ctx), name)
				require.NoError(t, l.Lock(ctx), name)
				n, err := l.HoldCount(ctx)
				require.NoError(t, err)
				assert.EqualValues(t, 2, n)
				assert.Positive(t, l.FencingToken())

				w := rlock.New(c2, name)
				got := make(chan time.Time, 1)
				go func() {
					if err := w.Lock(ctx); err != nil {
						t.Error(err)
					}
					got <- time.Now()
				}()
				require.Eventually(t, func() bool { return (*core.Client)(c2).Mux().Stats().Waiters == 1 }, 10*time.Second, 5*time.Millisecond)
				require.NoError(t, l.Unlock(ctx))
				released := time.Now()
				require.NoError(t, l.Unlock(ctx))
				select {
				case at := <-got:
					t.Logf("%s: waiter on %q woken %v after the release", d.name, name, at.Sub(released))
				case <-time.After(10 * time.Second):
					t.Fatalf("waiter on %q not woken", name)
				}
				require.NoError(t, w.Unlock(ctx))
			}

			// Holds in 40 slots survive several leases.
			var held []*rlock.Lock
			for i := 0; i < 40; i++ {
				l := rlock.New(c1, fmt.Sprintf("%s:%d", redistest.Key(t), i))
				require.NoError(t, l.Lock(ctx))
				held = append(held, l)
			}
			time.Sleep(3 * time.Second)
			for _, l := range held {
				assert.NoError(t, l.Err(), l.Name())
				require.NoError(t, l.Unlock(ctx))
			}

			// Mutual exclusion across clients.
			name := redistest.Key(t, "hammer")
			var inside, total atomic.Int32
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				c := clienttest.New(t, d.client(t))
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := rlock.New(c, name)
					for j := 0; j < 10; j++ {
						if !assert.NoError(t, l.Lock(ctx)) {
							return
						}
						if inside.Add(1) != 1 {
							t.Error("two holders at once")
						}
						total.Add(1)
						inside.Add(-1)
						assert.NoError(t, l.Unlock(ctx))
					}
				}()
			}
			wg.Wait()
			assert.EqualValues(t, 40, total.Load())

			// Fresh holds (no context owner), in several slots: a waiter
			// woken by the release, and a force unlock that marks the
			// hold it deletes.
			bg := context.Background()
			for _, name := range []string{redistest.Key(t, "fresh"), "orders:{" + redistest.Key(t) + "}:2", "{" + redistest.Key(t) + "}:f"} {
				l, w := rlock.New(c1, name, rlock.WithFencing()), rlock.New(c2, name)
				require.NoError(t, l.Lock(bg), name)
				assert.Positive(t, l.FencingToken(), name)
				got := make(chan error, 1)
				go func() { got <- w.Lock(bg) }()
				require.Eventually(t, func() bool { return (*core.Client)(c2).Mux().Stats().Waiters == 1 }, 10*time.Second, 5*time.Millisecond)
				require.NoError(t, l.Unlock(bg), name)
				select {
				case err := <-got:
					require.NoError(t, err, name)
				case <-time.After(10 * time.Second):
					t.Fatalf("waiter on %q not woken", name)
				}
				existed, err := l.ForceUnlock(bg)
				require.NoError(t, err, name)
				assert.True(t, existed, name)
				assert.ErrorIs(t, w.Unlock(bg), redisync.ErrNotHeld, name)
			}
		})
	}
}
