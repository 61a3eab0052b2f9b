package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// A candidate killed while it waits (its process cut off, so it neither
// leaves the queue nor re-checks) does not hold up the election: once its
// entry's deadline has passed it is dropped from the queue, by the next
// candidate's re-check, and the next candidate leads.
func TestKilledCandidateDropped(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	queue := "redisson_lock_queue:{" + name + "}"
	queued := func(n int64) {
		t.Helper()
		redistest.Eventually(t, 5*time.Second, "candidates queued", func() error {
			if got := rdb.LLen(ctx, queue).Val(); got != n {
				return fmt.Errorf("%d queued, want %d", got, n)
			}
			return nil
		})
	}
	leader, err := election.New(clienttest.New(t, s.Client(t)), name).Campaign(ctx, "leader")
	require.NoError(t, err)

	// The candidate to kill, through a proxy, first in the queue.
	dc, proxy := clienttest.Proxied(t, s, redis.Options{MaxRetries: -1})
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	go func() { _, _ = election.New(dc, name).Campaign(dctx, "dead") }()
	queued(1)
	// The next candidate, behind it.
	won := make(chan *election.Leadership, 1)
	go func() {
		l, err := election.New(clienttest.New(t, s.Client(t)), name).Campaign(ctx, "next")
		if assert.NoError(t, err) {
			won <- l
		}
	}()
	queued(2)
	proxy.Block() // killed: nothing it sends reaches Redis any more
	defer func() {
		proxy.CutAll() // what it sent is dropped with its connections
		proxy.Unblock()
	}()

	require.NoError(t, leader.Resign(ctx))
	resigned := time.Now()
	var next *election.Leadership
	select {
	case next = <-won:
	case <-time.After(10 * time.Second):
		t.Fatal("the next candidate never led")
	}
	t.Logf("the next candidate led %v after the resignation, past the killed one", time.Since(resigned))
	lead, err := election.New(clienttest.New(t, s.Client(t)), name).Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "next", lead.Value)
	n, err := rdb.Exists(ctx, queue, "redisson_lock_timeout:{"+name+"}").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the killed candidate's entries are gone")
	require.NoError(t, next.Resign(ctx))
}
