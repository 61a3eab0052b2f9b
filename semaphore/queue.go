package semaphore

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
)

// Local FIFO order of waiters.
//
// Redis does not order waiters: whoever runs its acquire script when
// enough permits are available gets them. Left at that, a caller that needs
// 3 permits would rarely see 3 free at once while other callers of the same
// process keep taking them one at a time: it could wait forever. So, as in
// golang.org/x/sync/semaphore, the callers of one Client that want permits
// of one semaphore form a line, and only the caller at its head asks Redis;
// the others wait, without any Redis traffic or subscription, until it is
// their turn. The head leaves the line when it got its permits, gave up (its
// wait ran out, its ctx ended, the Client closed) or failed, and hands its
// turn to the next, which tries at once. So a release of n permits lets up
// to n callers of this Client through one after the other, each with one
// round trip, and never wakes the whole line.
//
// The line is the Client's (core.Lines.Join), keyed by the
// semaphore's name: the counted and the expirable semaphore of one name
// share the Redis count, so they share the line. The line orders the
// callers of one Client only; callers of different Clients (other
// processes) compete through Redis, as Redisson's do. The price of the order
// is x/sync's: while the head waits for more permits than are available,
// later callers of this Client wait behind it even if their smaller requests
// could be served.

// lineLen returns the number of callers in a line, for tests.
func lineLen(c *core.Client, name string) int { return c.Lines().Len(name) }

// waitInLine runs an acquisition for a caller of c on the semaphore called
// name: it waits for the caller's turn in the local line, then runs the
// shared waiting algorithm ([core.Waits.Until]) on the semaphore's channel
// with try as the attempt. forever waits until ctx ends; otherwise the whole
// call, turn included, takes at most wait, and wait 0 makes a single attempt
// only if no other caller of c is waiting (it does not overtake them).
//
// It returns (true, nil) when try succeeded, (false, nil) when the wait ran
// out, and an error (wrapping ctx.Err() when ctx ended) otherwise. It leaves
// the line in every case.
func waitInLine(ctx context.Context, c *core.Client, name string, forever bool, wait time.Duration, try core.Attempt) (bool, error) {
	start := time.Now()
	t := c.Lines().Join(name, !forever && wait == 0)
	if t == nil {
		return false, nil
	}
	defer t.Leave()
	if ok, err := t.Await(ctx, forever, wait); !ok || err != nil {
		return false, err
	}
	b := core.Bound{Forever: forever}
	if !forever {
		b.Wait = max(wait-time.Since(start), 0)
	}
	// The callers behind learn how the head's attempts end: an outage is
	// an error for them too, not "busy".
	reported := func(ctx context.Context) (bool, time.Duration, error) {
		t.Asking()
		ok, retry, err := try(ctx)
		failed := err // nil: Redis answered
		if ctx.Err() != nil {
			failed = nil // the caller gave up: no answer expected, none missing
		}
		t.Report(failed)
		return ok, retry, err
	}
	return c.Waits().Until(ctx, &core.PubSub{Channel: keys.SemaphoreChannel(name), Wake: wake}, b, reported)
}
