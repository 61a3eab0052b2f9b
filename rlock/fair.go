package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// FairLock is Redisson's RFairLock: a Lock whose waiters get it in the order
// they asked for it, across processes, and a release wakes only the waiter
// whose turn it is. It has Lock's methods, with the same meanings and owner
// rules, and is a redisync.Locker; WithLease, WithFencing and
// WithWaiterTimeout apply to it.
//
// Waiting owners line up in a queue in Redis. Goroutines calling through
// one handle without a context owner act for the handle's one owner: they
// line up in arrival order at the handle first, and the handle takes one
// place in the queue; every other handle, context owner and process takes
// its own. An owner that already holds the lock re-enters it without
// queueing. A waiter that gives up (TryLock's wait runs out, ctx ends, the
// Client closes) leaves the queue at once, and the waiter behind it is
// woken if that made it the head.
//
// Unlike Redisson's, a waiter that waits long is never dropped from the
// queue: its place carries a deadline on Redis's clock, which each of its
// re-checks (at least every third of the waiter timeout) pushes further. A
// waiter whose process died stops holding up the queue after the waiter
// timeout (WithWaiterTimeout, 5s by default), and the next one is woken. A
// lock key deleted from outside lets the head of the queue in at its next
// re-check.
//
// Java waiters using Redisson's fair lock queue in the same line. One
// difference remains: when a Redisson client takes the lock it shortens
// every queued deadline by its own wait timeout (5 minutes by default),
// which can make a Go waiter's entry look dead until its next re-check; if
// a Redisson client drops it meanwhile, the Go waiter joins the queue again
// at its end at that re-check. It is never stranded, but may lose its turn.
type FairLock struct{ handle }

// NewFair returns a handle on the fair lock called name. It does no I/O and
// never fails: an empty name or an invalid option (WithBackoff, a
// WithWaiterTimeout that is not positive) is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation. A FairLock and a Lock
// of the same name are the same lock, but only FairLocks wait in the queue,
// and a Lock's release wakes none of them: they see it at their next
// re-check, within a third of the waiter timeout.
func NewFair(c *redisync.Client, name string, opts ...Option) *FairLock {
	h := newHandle(c, "fair lock", name, opts)
	h.side = fairSide(h.e, h.opts.deadWaiter, h.opts.minHold)
	return &FairLock{h}
}

// fairKeys are a fair lock's keys besides its hash: the queue, the timeouts
// zset and the prefix of its waiters' channels.
type fairKeys struct{ queue, timeouts, channelPrefix string }

func newFairKeys(name string) fairKeys {
	return fairKeys{keys.FairQueue(name), keys.FairTimeouts(name), keys.LockChannel(name)}
}

// fairSide is the fair lock's configuration of the engine (fairScripts).
// A waiting owner keeps its place in the queue from one attempt to the
// next, so a handle's owner must not change per attempt: no fresh holds,
// every hold is recorded; and no local line.
func fairSide(e *core.Lock, timeout, minHold time.Duration) *core.Side {
	ls := newLockScripts(e, "0")
	ls.minHold = minHold
	return &core.Side{Kind: "fair lock", Scripts: &fairScripts{
		lockScripts:   *ls, // the lock's field and renewal
		fk:            newFairKeys(e.Name),
		timeoutMillis: core.Millis(timeout),
		recheck:       max(timeout/3, time.Millisecond),
	}}
}

// fairScripts are the fair lock's scripts: the lock's hash, owner fields
// and renewal (lockScripts); the fair scripts, which queue the owners that
// must wait; a wait on the owner's own channel, which a release publishes
// on only when the owner is at the head of the queue; and, when a wait
// ends without the lock, leaving the queue (fairLeaver).
//
// A queued owner's deadline is timeout after its latest attempt, on the
// server's clock. Each attempt's retry hint is at most a third of timeout
// (recheck), so a live waiter re-checks, and so refreshes its deadline,
// twice more before it could be taken for dead, even when no message
// comes.
type fairScripts struct {
	lockScripts
	fk            fairKeys
	timeoutMillis int64
	recheck       time.Duration
}

// RunAcquire runs fair_acquire, which queues the owner when it must wait.
func (s *fairScripts) RunAcquire(ctx context.Context, req *core.Request) (core.Outcome, error) {
	e, fk := s.e, s.fk
	pub, err := e.C.PublishCommand(ctx)
	if err != nil {
		return core.Outcome{}, err
	}
	rep, err := lua.FairAcquireArgs{Lock: req.Name, Queue: fk.queue, Timeouts: fk.timeouts,
		ChannelPrefix: fk.channelPrefix, Request: req.ReqKey, Counter: keys.FenceCounter(req.Name),
		LeaseMillis: req.LeaseMillis(), Field: req.Field, Deadline: req.Deadline, Fenced: req.Fencing,
		Count: req.Count, WaiterTimeoutMillis: s.timeoutMillis, Publish: pub, Fence: req.Fence}.Run(ctx, req.Runner)
	out, err := lockOutcome(rep.Code, rep.Value, rep.Fence, err)
	if err == nil && !out.Acquired && !out.Lost && (out.Retry <= 0 || out.Retry > s.recheck) {
		out.Retry = s.recheck
	}
	return out, err
}

// RunRelease runs fair_release, which wakes the owner at the head of the
// queue.
func (s *fairScripts) RunRelease(ctx context.Context, req *core.Request) (int64, error) {
	fk := s.fk
	undo, undoKey := req.Undoes()
	return lua.FairReleaseArgs{Lock: req.Name, Queue: fk.queue, Timeouts: fk.timeouts, ChannelPrefix: fk.channelPrefix,
		Request: req.ReqKey, UndoRequest: undoKey, LeaseMillis: req.LeaseMillis(), Field: req.Field,
		Deadline: req.Deadline, Undo: undo, Count: req.Count, Publish: req.Publish,
		MinHoldMillis: s.minHoldLeft(req)}.Run(ctx, req.Runner)
}

// Waiting waits on the owner's own channel and leaves the queue when the
// wait ends without the lock.
func (s *fairScripts) Waiting(req *core.Request) core.Waiting {
	return core.Waiting{
		PubSub: &core.PubSub{
			Channel: keys.FairChannel(s.e.Name, req.Owner),
			// Only this owner's waiters listen here, and a message means
			// it is the owner's turn: each of them may go on (the first
			// in takes the lock, the others re-enter it).
			Wake: pubsub.WakeAll,
		},
		GiveUp: &fairLeaver{e: s.e, owner: req.Owner},
	}
}

// fairLeaver takes owner out of the fair lock's queue (fairLeave) when its
// wait ends without the lock.
type fairLeaver struct {
	e     *core.Lock
	owner string
}

// GiveUp leaves the queue (fairLeave).
func (f *fairLeaver) GiveUp(ctx context.Context) { fairLeave(ctx, f.e, f.owner) }

// fairLeave takes owner out of the fair lock's queue after a wait that
// ended without the lock. A failure only delays the others: the entry is
// dropped when its deadline passes.
func fairLeave(ctx context.Context, e *core.Lock, owner string) {
	pub, err := e.C.PublishCommand(ctx)
	if err == nil {
		fk := newFairKeys(e.Name)
		_, err = lua.FairLeaveArgs{Lock: e.Name, Queue: fk.queue, Timeouts: fk.timeouts, ChannelPrefix: fk.channelPrefix,
			Owner: owner, Publish: pub, Deadline: e.C.Requests().Deadline(ctx)}.Run(ctx, e.C.Direct())
	}
	if err != nil {
		e.C.Logger().Warn("redisync: a fair lock waiter that gave up could not leave the queue; it is dropped after its deadline",
			"name", e.Name, "owner", owner, "err", err)
	}
}

// ForceUnlock deletes the lock whoever holds it and wakes the waiter at the
// head of the queue (also when the lock no longer existed), leaving the
// queue otherwise as it is. It reports whether the lock existed. Holders in
// this process see their hold end with ErrLockLost at once; holders
// elsewhere when their watchdog next renews, or when they unlock
// (ErrNotHeld). A lock key or a queue of another type than the fair
// lock's layout (and the timeouts key, when the queue has waiters) gives
// an error wrapping redisync.ErrWrongType, and nothing is deleted.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *FairLock) ForceUnlock(ctx context.Context) (bool, error) {
	if l.e == nil {
		return l.handle.ForceUnlock(ctx) // a zero value: the check's error
	}
	if err := l.e.Check(ctx); err != nil {
		return false, err
	}
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("%s %q: force unlock: %w", l.e.Kind, l.e.Name, errs.ReplyError(err))
	}
	pub, err := l.e.C.PublishCommand(ctx)
	if err != nil {
		return fail(err)
	}
	fk := newFairKeys(l.e.Name)
	n, err := lua.FairForceUnlockArgs{Lock: l.e.Name, Queue: fk.queue, Timeouts: fk.timeouts, ChannelPrefix: fk.channelPrefix,
		Publish: pub, Deadline: l.e.C.Requests().Deadline(ctx), RequestPrefix: keys.RequestPrefix(l.e.Name),
		MarkTTLMillis: core.ForcedMarkTTL}.Run(ctx, l.e.C.Direct())
	if err != nil {
		return fail(err)
	}
	l.e.ForceEnded()
	return n == lua.FairForceUnlockExisted, nil
}

var _ redisync.Locker = (*FairLock)(nil)
