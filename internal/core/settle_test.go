package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// Settle marks a request cancelled unless it ran (its record stays), for
// longer than the request's lifetime, and then gives the owner's lock back;
// a closing client starts nothing and leaves the unlock to the caller.
func TestSettle(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t, Options{})
	rdb := c.Redis()
	lost, ran := redistest.Key(t, "lost"), redistest.Key(t, "ran")
	require.NoError(t, rdb.Set(ctx, ran, "0", time.Minute).Err())

	for _, req := range []string{lost, ran} {
		done := make(chan struct{})
		require.True(t, c.Requests().Settle(req, func() { close(done) }))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Settle never gave the owner's lock back")
		}
	}
	assert.Equal(t, "cancelled", rdb.Get(ctx, lost).Val(), "a request that never ran")
	assert.Greater(t, rdb.PTTL(ctx, lost).Val(), c.Requests().TTL(), "the mark must outlive the request's deadline")
	assert.Equal(t, "0", rdb.Get(ctx, ran).Val(), "the record of a request that ran")

	require.NoError(t, c.Close())
	assert.False(t, c.Requests().Settle(redistest.Key(t, "closed"), func() { t.Error("unlock called by a Settle that did not start") }))
}
