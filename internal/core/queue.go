package core

import (
	"context"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/lua"
)

// The lock's queue of waiting Clients (lua/prelude_wake.lua, docs/wake.md).
//
// A Client waiting for a lock whose waits are queued ([PubSub].Queue)
// listens on a channel of its own and joins the lock's queue with the
// attempts it makes once it listens ([loop.joining]); a release wakes the
// first live Client of the queue, on its channel, instead of every
// waiting process. The Client leaves the queue when one of its
// acquisitions succeeds (the script does it) and when nobody of it waits
// any more (the subscription closes: waitEnded). While the holder is one
// the queue did not record (a Redisson client's), the Client listens on
// the lock's channel too ([loop.listen]), where such a holder's release
// publishes.

// waitEnded is the end of c's wait in the lock's queue q (its
// subscription closed: nobody of c waits for the lock any more): when c
// is still queued ([Lines.queued]), it leaves the queue.
func waitEnded(c *Client, q Queue) {
	if c.lines.takeQueued(q.Waiters) {
		leaveQueue(c, q)
	}
}

// leaveQueue takes c out of the lock's queue q in the background
// (lock_wait_leave), passing a wake-up it may have been given on to the
// next Client. A client closing leaves nothing to do: its entry is passed
// over by the next release, which finds it no longer listening (or, with
// classic pub/sub on a Cluster, when its time runs out).
func leaveQueue(c *Client, q Queue) {
	c.bg.Finish(bg.ReleaseTimeout, func(ctx context.Context) {
		cmd, err := c.PublishCommand(ctx)
		if err == nil {
			_, err = lua.LockWaitLeaveArgs{Lock: q.Lock, Channel: q.Channel, Waiters: q.Waiters, WaitState: q.State,
				Client: c.id, WakePrefix: q.WakePrefix, Publish: cmd, Probe: Probe(c, cmd), Message: q.Message}.Run(ctx, c.Direct())
		}
		if err != nil && ctx.Err() == nil {
			c.log.Debug("redisync: leaving a lock's queue of waiting clients failed; the entry runs out by itself",
				"lock", q.Lock, "err", err)
		}
	})
}
