package keyevents

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/pubsub"
)

// buffered is how many events the returned channel holds for a receiver
// that is busy; the subscription keeps 64 more before it drops the oldest.
const buffered = 16

// Stream subscribes to the deletions, expiries and evictions of key (the
// Redis key of the primitive kind "name", as named in errors) and returns,
// once Redis confirmed the subscription, a channel that receives them in
// the order Redis published them. The channel is closed, and the
// subscription and its goroutine gone, when ctx ends or the client
// closes. On failure nothing is left behind: the error is
// [pubsub.Mux.Keyspace]'s (redisync.ErrKeyspaceEventsOff,
// redisync.ErrNoPermission, ctx's), prefixed with kind and name.
func Stream(ctx context.Context, c *core.Client, kind, name, key string) (<-chan redisync.KeyEvent, error) {
	sub, err := c.Mux().Keyspace(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%s %q: events: %w", kind, name, err)
	}
	bgw := c.Background()
	if !bgw.Track() {
		sub.Close()
		return nil, fmt.Errorf("%s %q: events: %w", kind, name, redisync.ErrClosed)
	}
	out := make(chan redisync.KeyEvent, buffered)
	go func() {
		defer bgw.Untrack()
		relay(ctx, bgw.Closing(), sub, key, out)
	}()
	return out, nil
}

// relay passes sub's events on to out until ctx ends or closing closes,
// then closes sub and out.
func relay(ctx context.Context, closing <-chan struct{}, sub *pubsub.Waiter, key string, out chan<- redisync.KeyEvent) {
	defer close(out)
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-closing:
			return
		case <-sub.C():
		}
		now := time.Now()
		for _, ev := range sub.Events() {
			select {
			case out <- redisync.KeyEvent{Key: key, Kind: kindOf(ev), Time: now}:
			case <-ctx.Done():
				return
			case <-closing:
				return
			}
		}
	}
}

// kindOf returns the kind of a keyspace event that pubsub passes on.
func kindOf(event string) redisync.KeyEventKind {
	switch event {
	case pubsub.EventExpired:
		return redisync.KeyExpired
	case pubsub.EventEvicted:
		return redisync.KeyEvicted
	}
	return redisync.KeyDeleted
}
