package semaphore

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/pubsub"
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
// shared waiting algorithm ([core.Waits.UntilQueued]) in the semaphore's
// queue of waiting Clients q, with try as the attempt. forever waits until
// ctx ends; otherwise the whole call, turn included, takes at most wait,
// and wait 0 makes a single attempt only if no other caller of c is
// waiting (it does not overtake them).
//
// It returns (true, nil) when try succeeded, (false, nil) when the wait ran
// out, and an error (wrapping ctx.Err() when ctx ended) otherwise. It leaves
// the line in every case.
func waitInLine(ctx context.Context, c *core.Client, name string, forever bool, wait time.Duration,
	q *core.Queue, try core.QueuedAttempt) (bool, error) {
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
	reported := func(ctx context.Context, join bool) (bool, time.Duration, bool, error) {
		t.Asking()
		ok, retry, first, err := try(ctx, join)
		failed := err // nil: Redis answered
		if ctx.Err() != nil {
			failed = nil // the caller gave up: no answer expected, none missing
		}
		t.Report(failed)
		return ok, retry, first, err
	}
	// Only the head of the line waits in Redis: one waiter per Client
	// hears the Client's own channel and, first in the queue, the
	// semaphore's; any message wakes it (a passed-on wake-up says "0").
	return c.Waits().UntilQueued(ctx, &core.PubSub{Channel: keys.SemaphoreChannel(name), Wake: pubsub.WakeOne, Queue: q}, b, reported)
}

// The semaphore's queue of waiting Clients (lua/prelude_wake.lua,
// docs/wake.md), which the counted and the expirable semaphore of a name
// share, as they share its count and its local line: a Client whose line head waits for permits listens on a
// channel of its own and joins the queue in Redis; a release wakes the
// first live Client there instead of every waiting process, and an
// acquisition that leaves permits (or that took the first place) wakes the
// next, which so chains through a release of n permits. The Client first
// in the queue also listens on the semaphore's channel, where releases
// that know nothing of the queue publish: a Redisson client's, AddPermits,
// TrySetPermits, the expirable semaphore's.

// newQueue returns the queue of Clients waiting for the semaphore called
// name.
func newQueue(name string) *core.Queue {
	return &core.Queue{Lock: name, Channel: keys.SemaphoreChannel(name), Waiters: keys.SemaphoreWaiters(name),
		State: keys.SemaphoreWaitState(name), WakePrefix: keys.SemaphoreWakePrefix(name)}
}

// queue returns the semaphore's queue of waiting Clients.
func (b *base) queue() *core.Queue {
	if b.q == nil {
		return newQueue(b.h.Name) // a zero handle: never used, its check fails first
	}
	return b.q
}

// wakeArgs returns what a release names of the queue: its keys, the
// Clients' channels and whether a publish counts every receiver there.
func (s *Semaphore) wakeArgs(pub string) (waiters, state, prefix, probe string) {
	q := s.queue()
	return q.Waiters, q.State, q.WakePrefix, probeArg(s.h.C, pub)
}

// probeArg is core.Probe as the scripts' argument: "1" or "0".
func probeArg(c *core.Client, pub string) string {
	if core.Probe(c, pub) {
		return "1"
	}
	return "0"
}

// waitQueued is wait for the semaphores: their callers wait in the
// Client's line, and its line heads in the semaphore's queue of waiting
// Clients q.
func (b *base) waitQueued(ctx context.Context, forever bool, wait time.Duration, q *core.Queue, try core.QueuedAttempt) (ok bool, err error) {
	ctx, obs := b.h.C.BeginWait(ctx, b.h.Kind, "", b.h.Name, forever, wait)
	defer func() { obs.End(ok, err) }()
	ok, err = waitInLine(ctx, b.h.C, b.h.Name, forever, wait, q, try)
	if err != nil {
		return false, fmt.Errorf("%s %q: %w", b.h.Kind, b.h.Name, errs.ReplyError(err))
	}
	return ok, nil
}
