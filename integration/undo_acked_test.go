package integration

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Regression (the hour-long netns fault run, twice: a counted permit lost
// with no indeterminate call to explain it). An acquisition reached the
// replica, but the replica's acknowledgement did not reach the primary
// within the wait, so the caller got ErrNotReplicated and the acquisition
// was undone — on the primary only, answered and believed done. The link
// then broke before the undo reached the replica, the replica was
// promoted, and it kept the permit taken, with no holder, for good. Now an
// undo is done only once the replicas acknowledge it; until then it is
// re-sent (it applies once), on the promoted replica too.
//
// The test: a primary whose replica replicates through a proxy; the proxy
// holds the replica's acknowledgements (Stall), then cuts the link both
// ways (Block) before the undo is sent; the primary dies, the replica is
// promoted, and the client's connections go to it.
func TestUndoAcknowledgedBeforeDone(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"counted", "expirable"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			undoAcknowledgedBeforeDone(t, kind)
		})
	}
}

func undoAcknowledgedBeforeDone(t *testing.T, kind string) {
	ctx := context.Background()
	primary, link, replica := replicatedThroughProxy(t)

	// The client dials whichever server is the primary now.
	var target atomic.Value
	target.Store(primary.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: primary.Addr(), MaxRetries: -1,
		ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, DialTimeout: time.Second,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, target.Load().(string))
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	name := redistest.Key(t, "sem")

	var acquire func() error
	switch kind {
	case "counted":
		s := semaphore.New(c, name)
		ok, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
		acquire = func() error { _, err := s.TryAcquire(ctx, 1, 0); return err }
		// The scripts loaded first: a first run is sent again with its
		// source, after a WAIT of its own.
		_, err = s.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, 1))
	case "expirable":
		s := semaphore.NewExpirable(c, name)
		ok, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)
		acquire = func() error { _, _, err := s.TryAcquire(ctx, 0, 0); return err } // no lease: taken for good if lost
		id, _, err := s.TryAcquire(ctx, 0, 0)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, id))
	}
	available := func(s *redistest.Server) string { return fmt.Sprint(s.Do(t, "GET", name)) }

	link.Stall(30 * time.Second) // the replica's acknowledgements are held
	go func() {
		// Once the acquisition has reached the replica, the link is cut
		// both ways: the undo (after the wait's second) will not.
		for available(replica) != "0" {
			time.Sleep(time.Millisecond)
		}
		link.Block()
	}()
	t.Cleanup(link.Unblock)
	err := acquire()
	require.ErrorIs(t, err, redisync.ErrNotReplicated, "taken on the primary, not acknowledged in time")
	require.Equal(t, "0", available(replica), "the replica has the acquisition")

	primary.Stop(t)
	replica.Do(t, "REPLICAOF", "NO", "ONE")
	target.Store(replica.Addr())
	redistest.Eventually(t, 20*time.Second, "the undo reaches the promoted replica", func() error {
		if got := available(replica); got != "1" {
			return fmt.Errorf("%s permits available on the promoted replica, want 1", got)
		}
		return nil
	})
}
