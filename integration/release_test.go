package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// A semaphore release whose reply is lost for good — the network
// partitioned for longer than Release re-sends it (its detached context,
// 10 s), and every copy sent meanwhile lost with the connections — is
// completed in the background once Redis is reachable again: Release
// returns its error, and the permits still come back. Before, they stayed
// taken for good (counted permits, and expirable ones without a lease).
//
// The client's request lifetime is about 15 s (timeouts of 1.5 s, 3
// re-sends), so the release's first request can still be applied, or
// refused as late while Redis can still tell that it did not run, when the
// partition ends after 10.5 s.
//
// With "counted, past the record": the client's request lifetime is about
// 2 s, and the partition lasts 10.5 s, far past the release's request
// record; the client's ledger on the counted semaphore
// (lua/prelude_ledger.lua) still tells the re-sent release whether it ran.
func TestLostReleaseIsCompleted(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"expirable", "counted", "counted, past the record"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			lostReleaseIsCompleted(t, kind)
		})
	}
}

func lostReleaseIsCompleted(t *testing.T, kind string) {
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	timeout, retries := 1500*time.Millisecond, 3
	if kind == "counted, past the record" {
		kind, timeout, retries = "counted", 300*time.Millisecond, 1
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: retries,
		ReadTimeout: timeout, WriteTimeout: timeout, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	direct := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")

	var release func(ctx context.Context) error
	switch kind {
	case "expirable":
		es := semaphore.NewExpirable(c, name)
		require.NoError(t, es.SetPermits(ctx, 3))
		id, err := es.Acquire(ctx, 0) // no lease: only its release gives it back
		require.NoError(t, err)
		release = func(ctx context.Context) error { return es.Release(ctx, id) }
	case "counted":
		cs := semaphore.New(c, name)
		require.NoError(t, cs.AddPermits(ctx, 3))
		require.NoError(t, cs.Acquire(ctx, 2))
		release = func(ctx context.Context) error { return cs.Release(ctx, 2) }
	}
	state := permitState(direct, kind, name, 3)

	p.Block()
	start := time.Now()
	err := release(ctx)
	require.Error(t, err, "a release through a partition")
	p.CutAll() // the copies held by the partition are lost with their connections
	time.Sleep(time.Until(start.Add(10500 * time.Millisecond)))
	p.Unblock()

	eventuallyAllFree(t, 5*time.Second, state, 3)
	time.Sleep(200 * time.Millisecond) // a second copy would show now
	available, acquired := state()
	assert.Equal(t, []int64{3, 0}, []int64{available, acquired}, "permits after the completion (given back once)")
	assert.Zero(t, c.Stats().ReleasesFailed, "releases that could not be completed")
}
