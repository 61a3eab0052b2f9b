package rlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// inspector is what every lock kind of the package has for Inspect.
type inspector interface {
	redisync.Locker
	Inspect(context.Context) (Info, error)
	FencingToken() int64
}

// Inspect of every lock kind, on a single node (in one round trip) and on
// a Cluster (names with and without a hash tag): free, held by a context
// owner twice, fenced.
func TestInspect(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	c, rec := clienttest.Recorded(t, s)
	cl := redistest.StartCluster(t, 3)
	cc := clienttest.New(t, cl.Client(t))
	for _, tc := range []struct {
		what string
		c    *redisync.Client
		name string
	}{
		{"single node", c, redistest.Key(t, "lock")},
		{"cluster", cc, redistest.Key(t, "lock")},
		{"cluster, hash tag", cc, "{" + redistest.Key(t, "tenant") + "}:lock"},
	} {
		kinds := map[string]inspector{
			"lock":      New(tc.c, tc.name+":lock", WithFencing()),
			"fair lock": NewFair(tc.c, tc.name+":fair", WithFencing()),
			"spin lock": NewSpin(tc.c, tc.name+":spin", WithFencing()),
		}
		for kind, l := range kinds {
			t.Run(tc.what+"/"+kind, func(t *testing.T) {
				ctx := context.Background()
				info, err := l.Inspect(ctx)
				require.NoError(t, err)
				assert.Empty(t, info.Holders, "free")
				assert.Zero(t, info.TTL)
				assert.Zero(t, info.FencingToken, "never fenced")

				owner := redisync.WithOwner(ctx)
				require.NoError(t, l.Lock(owner))
				require.NoError(t, l.Lock(owner))
				tok, _ := redisync.OwnerToken(owner)
				rec.Reset()
				info, err = l.Inspect(ctx)
				require.NoError(t, err)
				if tc.c == c {
					assert.Len(t, rec.Trips(), 1, "one round trip: %v", rec.Trips())
				}
				require.Len(t, info.Holders, 1)
				if kind == "fair lock" {
					assert.NotNil(t, info.Queue, "a fair lock's queue, empty")
					assert.Empty(t, info.Queue)
				} else {
					assert.Nil(t, info.Queue, "no queue") // printed "Queue:[]" by %+v
				}
				assert.Equal(t, tc.c.ID()+":"+formatToken(tok), info.Holders[0].Owner)
				assert.EqualValues(t, 2, info.Holders[0].Count)
				assert.Greater(t, info.TTL, 20*time.Second, "the watchdog's 30 s lease")
				fence := l.FencingToken() // the server's clock in µs, at least (tokens never go backwards)
				assert.Positive(t, fence)
				assert.Equal(t, fence, info.FencingToken)
				require.NoError(t, l.Unlock(owner))
				require.NoError(t, l.Unlock(owner))

				info, err = l.Inspect(ctx)
				require.NoError(t, err)
				assert.Empty(t, info.Holders, "released")
				assert.Zero(t, info.TTL)
				assert.Equal(t, fence, info.FencingToken, "the counter stays")
			})
		}
	}
}

// A FairLock's Inspect lists the owners waiting, in turn order.
func TestInspectFairQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.Shared(t)
	name := redistest.Key(t, "fair")
	l := NewFair(c, name)
	require.NoError(t, l.Lock(ctx))
	waiter := redisync.WithOwner(ctx)
	wctx, cancel := context.WithCancel(waiter)
	done := make(chan error, 1)
	go func() { done <- l.Lock(wctx) }()
	tok, _ := redisync.OwnerToken(waiter)
	require.Eventually(t, func() bool {
		info, err := l.Inspect(ctx)
		return err == nil && len(info.Queue) == 1 && info.Queue[0] == c.ID()+":"+formatToken(tok)
	}, 5*time.Second, redistest.Tick, "the waiter is queued")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, l.Unlock(ctx))
	info, err := New(c, name).Inspect(ctx)
	require.NoError(t, err)
	assert.Nil(t, info.Queue, "a Lock has no queue")
}

func formatToken(tok uint64) string { return strconv.FormatUint(tok, 10) }
