package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Regression (an independent all-faults run): an expirable-semaphore
// permit that never expires stayed acquired with no holder, for good. An
// Acquire(ctx, 0) was sent on a connection the network then stalled; the
// caller's ctx ended and it got its error; the undo of the acquisition
// could not get through either, and gave up after 10 s; the stalled
// request then reached Redis before its deadline and took the permit.
// Now the undo is re-sent until Redis answers it (for as long as it can
// matter: the permit's lease, or for good without one), and the expirable
// semaphore's undo finds the permits by their ids however late it lands.
//
// The test stalls the acquisition's connection for 12.5 s and cuts every
// other connection off for 12 s (the undo's, go-redis's re-sends'), so
// that both outlast the old undo's 10 s; the acquisition then arrives
// before its deadline (the client's request lifetime is 15 s).
func TestLateAcquisitionIsUndone(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"expirable", "counted"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			lateAcquisitionIsUndone(t, kind)
		})
	}
}

func lateAcquisitionIsUndone(t *testing.T, kind string) {
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	// One connection, which the stall holds; go-redis's re-sends and the
	// undo dial new ones, which the partition holds. Timeouts of 1.5 s and
	// 3 re-sends make a request lifetime of about 15 s.
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 1, MaxRetries: 3,
		ReadTimeout: 1500 * time.Millisecond, WriteTimeout: 1500 * time.Millisecond,
		DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	direct := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")

	var acquire func(ctx context.Context) error
	switch kind {
	case "expirable":
		es := semaphore.NewExpirable(c, name)
		require.NoError(t, es.SetPermits(ctx, 3))
		id, err := es.Acquire(ctx, 0) // loads the scripts on the server
		require.NoError(t, err)
		require.NoError(t, es.Release(ctx, id))
		acquire = func(ctx context.Context) error { _, err := es.Acquire(ctx, 0); return err }
	case "counted":
		cs := semaphore.New(c, name)
		require.NoError(t, cs.AddPermits(ctx, 3))
		require.NoError(t, cs.Acquire(ctx, 1)) // loads the scripts on the server
		require.NoError(t, cs.Release(ctx, 1))
		acquire = func(ctx context.Context) error { return cs.Acquire(ctx, 1) }
	}
	state := permitState(direct, kind, name, 3)
	require.NoError(t, rdb.Ping(ctx).Err()) // the connection is idle in the pool

	const stall, cut = 12500 * time.Millisecond, 12 * time.Second
	stalledAt := time.Now()
	require.NotZero(t, p.Stall(stall))
	errc := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		errc <- acquire(actx)
	}()
	redistest.Eventually(t, time.Second, "the acquisition held by the stall", func() error {
		if p.Held() == 0 {
			return fmt.Errorf("nothing held yet")
		}
		return nil
	})
	p.Block() // every other connection: the re-sends, the undo
	err := <-errc
	require.ErrorIs(t, err, context.DeadlineExceeded, "the caller's error")
	time.Sleep(time.Until(stalledAt.Add(cut)))
	p.Unblock()
	time.Sleep(time.Until(stalledAt.Add(stall + 500*time.Millisecond)))
	require.NotZero(t, p.LateDelivered(), "the stalled acquisition was not delivered late: the test proves nothing")

	eventuallyAllFree(t, 10*time.Second, state, 3)
	assert.Zero(t, c.Stats().UndosFailed, "undos that never reached Redis")
}
