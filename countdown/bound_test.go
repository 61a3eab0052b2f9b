package countdown_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// Regression (issue 34): a wait was no time limit when Redis did not
// answer: TryWait(ctx, wait) waited for a read on its way as long as
// go-redis allowed (its ReadTimeout). Its wait now bounds its reads too (on
// a go-redis client with ContextTimeoutEnabled): with the server stopped,
// it returns an error at the end of its wait: Redis never answered, and
// an outage is an error, never "still closed". (The channel is
// subscribed beforehand by another waiter: a subscription to a stopped
// server is the pub/sub connection's to bound, not the latch's.)
func TestTryWaitBoundsRequests(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t) // its own server: it is stopped
	c := clienttest.New(t, s.Client(t, func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		o.ReadTimeout = 30 * time.Second // far beyond the guard below: only the cut returns sooner
	}))
	l := countdown.New(c, redistest.Key(t, "latch"))
	ok, err := l.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	wctx, cancel := context.WithCancel(ctx)
	waiting := make(chan error, 1)
	go func() { waiting <- l.Wait(wctx) }()
	require.Eventually(t, func() bool { return clienttest.Stats(c).Waiters == 1 }, 10*time.Second, redistest.Tick, "waiter subscribed")

	s.Pause(t)
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := l.TryWait(ctx, 300*time.Millisecond)
		done <- result{ok, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("TryWait(ctx, 300ms) still running after 15 s: its read was not cut at the end of the wait")
	}
	s.Resume(t)
	cancel()
	require.ErrorIs(t, <-waiting, context.Canceled)
	require.Error(t, r.err, "no answer within the wait read as \"still closed\"") // an outage is an error
	require.False(t, r.ok)
}
