package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 40 item 1: the snapshots of the read-write lock, both semaphores
// and the latch, each in one round trip, on a single node and on a
// Cluster (names with and without a hash tag). The locks' are tested in
// package rlock.
func TestInspectSnapshots(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	single, rec := clienttest.Recorded(t, s)
	cl := redistest.StartCluster(t, 3)
	cc := clienttest.New(t, cl.Client(t))
	for _, tc := range []struct {
		what string
		c    *redisync.Client
		name string
	}{
		{"single node", single, redistest.Key(t, "p")},
		{"cluster", cc, redistest.Key(t, "p")},
		{"cluster, hash tag", cc, "{" + redistest.Key(t, "tenant") + "}:p"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ctx := context.Background()
			trips := func(what string) {
				if tc.c == single {
					// A connection the client's background work dials
					// meanwhile (its handshake) is not the snapshot's, and
					// the recorder leaves it out.
					assert.Len(t, rec.Trips(), 1, "%s: one round trip: %v", what, rec.Trips())
				}
				rec.Reset()
			}

			rw := rwlock.New(tc.c, tc.name+":rw")
			a, b := redisync.WithOwner(ctx), redisync.WithOwner(ctx)
			info, err := rw.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, rwlock.Info{}, info, "free")
			require.NoError(t, rw.Lock(a))
			require.NoError(t, rw.RLock(a)) // the writer's read hold
			rec.Reset()
			info, err = rw.Inspect(ctx)
			require.NoError(t, err)
			trips("rwlock")
			ta, _ := redisync.OwnerToken(a)
			require.NotNil(t, info.Writer)
			assert.Equal(t, "write", info.Mode)
			assert.Equal(t, rwlock.Holder{Owner: owner(tc.c, ta), Count: 1}, *info.Writer)
			assert.Equal(t, []rwlock.Holder{{Owner: owner(tc.c, ta), Count: 1}}, info.Readers)
			assert.Greater(t, info.TTL, 20*time.Second)
			require.NoError(t, rw.Unlock(a))
			require.NoError(t, rw.RLock(b))
			info, err = rw.Inspect(ctx)
			require.NoError(t, err)
			assert.Equal(t, "read", info.Mode)
			assert.Nil(t, info.Writer)
			assert.Len(t, info.Readers, 2)
			require.NoError(t, rw.RUnlock(a))
			require.NoError(t, rw.RUnlock(b))

			sem := semaphore.New(tc.c, tc.name+":sem")
			_, err = sem.TrySetPermits(ctx, 3)
			require.NoError(t, err)
			require.NoError(t, sem.Acquire(ctx, 2))
			rec.Reset()
			si, err := sem.Inspect(ctx)
			require.NoError(t, err)
			trips("semaphore")
			assert.Equal(t, semaphore.Info{Available: 1}, si)

			x := semaphore.NewExpirable(tc.c, tc.name+":xsem")
			require.NoError(t, x.SetPermits(ctx, 3))
			short, err := x.Acquire(ctx, 50*time.Millisecond)
			require.NoError(t, err)
			long, err := x.Acquire(ctx, time.Minute)
			require.NoError(t, err)
			forever, err := x.Acquire(ctx, 0)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				lt, err := x.LeaseTime(ctx, short)
				return err != nil || lt <= 0
			}, 5*time.Second, redistest.Tick, "the short lease runs out")
			rec.Reset()
			xi, err := x.Inspect(ctx)
			require.NoError(t, err)
			trips("expirable semaphore")
			assert.EqualValues(t, 1, xi.Available, "the expired permit counts as available, as the next script sees it")
			require.Len(t, xi.Permits, 2)
			assert.Equal(t, long, xi.Permits[0].ID)
			assert.Greater(t, xi.Permits[0].Lease, 50*time.Second)
			assert.Equal(t, semaphore.Permit{ID: forever, Lease: -1}, xi.Permits[1])
			avail, err := x.AvailablePermits(ctx)
			require.NoError(t, err)
			assert.Equal(t, xi.Available, avail, "Inspect agrees with AvailablePermits")

			l := countdown.New(tc.c, tc.name+":latch")
			_, err = l.TrySetCount(ctx, 2)
			require.NoError(t, err)
			_, err = l.Count(ctx) // its script loaded: on a server that never ran it, NOSCRIPT costs a round trip
			require.NoError(t, err)
			rec.Reset()
			li, err := l.Inspect(ctx)
			require.NoError(t, err)
			trips("latch")
			assert.Equal(t, countdown.Info{Count: 2}, li)
		})
	}
}

func owner(c *redisync.Client, token uint64) string {
	return c.ID() + ":" + strconv.FormatUint(token, 10)
}
