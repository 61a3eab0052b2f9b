package core_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestWalk runs the walk of the package's tour (doc.go), so that the
// functions it reaches can be listed: a caller without a context owner
// locks an rlock.Lock that another process holds (written with plain
// commands, so that no other client's code runs), waits, and takes it
// when the other process releases it and publishes; then, with
// REDISYNC_WALK=handoff, a second caller of the client waits behind it,
// and the first one's Unlock hands the lock off to it. The holds end
// when the client closes. List what it reaches with
//
//	go test -run TestWalk -count=1 -coverpkg=./internal/core,./rlock -coverprofile=walk.out ./internal/core/
//	go tool cover -func=walk.out | grep -v '0.0%'
func TestWalk(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	direct := s.Client(t)
	c := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)
	handoff := os.Getenv("REDISYNC_WALK") == "handoff"

	// Another process holds the lock.
	require.NoError(t, direct.HSet(ctx, name, "other:1", 1).Err())
	require.NoError(t, direct.PExpire(ctx, name, time.Minute).Err())

	first, second := rlock.New(c, name), rlock.New(c, name)
	lineLen := func() int { return (*core.Client)(c).Lines().Len(core.LockLine("rlock", name)) }
	got := make(chan error, 1)
	go func() { got <- first.Lock(ctx) }()
	clienttest.WaitWaiters(t, 1, c) // subscribed, waiting for a message
	gotSecond := make(chan error, 1)
	if handoff {
		go func() { gotSecond <- second.Lock(ctx) }()
		require.Eventually(t, func() bool { return lineLen() == 2 }, 5*time.Second, time.Millisecond)
	}

	// The other process releases the lock as a release script does.
	require.NoError(t, direct.Del(ctx, name).Err())
	require.NoError(t, direct.Publish(ctx, keys.LockChannel(name), "0").Err())
	require.NoError(t, <-got)
	if !handoff {
		return
	}

	// The second caller, at the head of the line, ready to be handed the
	// lock: the first one's Unlock hands it off.
	require.Eventually(t, func() bool {
		return (*core.Client)(c).Lines().HeadAccepts(core.LockLine("rlock", name))
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, first.Unlock(ctx))
	require.NoError(t, <-gotSecond)
}
