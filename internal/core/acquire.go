package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/request"

	"github.com/redisync/redisync/internal/core/errs"
)

// Acquire takes one hold of side s, waiting until ctx ends (forever) or at
// most within (0: one attempt). It returns (true, nil) when held, (false,
// nil) when the wait ran out, and an error otherwise (wrapping ctx.Err()
// when ctx ended); on failure it holds nothing, locally or in Redis. Each
// call after the argument checks is one observed wait (BeginWait).
//
// With s.Line, the callers of this client that wait for the lock (any
// handle, any owner) line up locally in arrival order, and only the head
// of the line asks Redis and subscribes: one waiter per client contends in
// Redis instead of all of them, and a release wakes one. The head leaves
// the line when it got the lock, gave up or failed, and the next caller
// tries at once, on the subscription the head hands it (the channel stays
// subscribed while the line lasts). An owner that already holds the lock,
// on any side, re-enters (or is refused an upgrade) without lining up (the
// caller it would wait behind may wait for it), and a single
// attempt (wait 0) does not overtake the line: it is made only when the
// line is empty, and reports false otherwise.
func (l *Lock) Acquire(ctx context.Context, s *Side, forever bool, within time.Duration) (ok bool, err error) {
	token, own, err := l.owner(ctx)
	if err != nil {
		return false, err
	}
	if !own && s.Fresh {
		token = freshOwner
	}
	if !forever && within < 0 {
		return false, l.Invalid("negative wait %v", within)
	}
	ctx, obs := l.C.BeginWait(ctx, s.Kind, s.What, l.Name, forever, within)
	defer func() { obs.End(ok, err) }()
	start := time.Now()
	if !own {
		ok, err := l.gate.Enter(ctx, s.Shared, forever, within, l.C.closing)
		if err != nil || !ok {
			if err != nil {
				err = l.fail(s, err)
			}
			return false, err
		}
	}
	call := sideCall{Lock: l, s: s}
	ok, err = call.acquire(ctx, token, forever, within, start)
	if !ok && !own {
		l.gate.Leave(s.Shared)
	}
	if err != nil {
		return false, l.fail(s, err)
	}
	return ok, nil
}

// acquire is Acquire past the gate: the local line (acquireInLine), then
// the wait in Redis. The whole call, from start, takes at most within
// unless forever.
func (l sideCall) acquire(ctx context.Context, token uint64, forever bool, within time.Duration, start time.Time) (bool, error) {
	s := l.s
	base := l.Lock.op(s, token)
	if s.Line != "" && !l.holdsAny(base) {
		return l.acquireInLine(ctx, base, forever, within, start)
	}
	// The attempts' base on the heap, where the attempt and the side's
	// Waiting find it, so that base itself stays on the stack.
	bp := new(Op)
	*bp = base
	return l.waitInRedis(ctx, bp, nil, nil, bound(forever, within, start))
}

// bound is what is left of a wait of at most within (unless forever) that
// began at start.
func bound(forever bool, within time.Duration, start time.Time) Bound {
	if forever {
		return Bound{Forever: true}
	}
	return Bound{Wait: max(within-time.Since(start), 0)}
}

// acquireInLine is acquire for a side whose waiters line up in the client
// (Side.Line): the caller waits for its turn at the head of the line, then
// in Redis on the subscription the line hands along, ready (without a
// context owner) to be handed the lock by a releaser of this client.
func (l sideCall) acquireInLine(ctx context.Context, base Op, forever bool, within time.Duration, start time.Time) (bool, error) {
	s := l.s
	t := l.Lock.C.lines.Join(s.Line, !forever && within == 0)
	if t == nil {
		return false, nil // others wait: a single attempt does not overtake them
	}
	defer t.Leave()
	var a *acceptor
	var lw *lineWait
	if s.Handoff != nil && base.Fresh {
		// A caller without a context owner holds nothing while it
		// waits (the gate), so a handoff gives it a fresh hold.
		lw = new(lineWait)
		a = &lw.acceptor
		l.initAcceptor(a, base, t)
	}
	if ok, err := t.Await(ctx, forever, bound(forever, within, start).Wait); !ok || err != nil {
		if a != nil && a.Withdraw() {
			return true, nil // handed the lock as the wait ended
		}
		return false, err
	}
	// The attempts' base on the heap: the acceptor's copy when there is
	// one (allocated anyway).
	var bp *Op
	if a != nil {
		bp = &a.base
	} else {
		bp = new(Op)
		*bp = base
	}
	ok, err := l.waitInRedis(ctx, bp, t, lw, bound(forever, within, start))
	if ok && (a == nil || !a.handed) {
		// Taken from Redis, maybe before other processes' waiters woken by
		// the same release: this client's subscription moves to the end
		// of the channel's subscribers (Redis delivers in subscription
		// order), so that the next release reaches it last, and the
		// processes take turns.
		t.Hand(nil)
	}
	return ok, err
}

// lineWait is what a caller who may be handed the lock waits with, in one
// allocation: its acceptor, its Lined and its attempt.
type lineWait struct {
	acceptor acceptor
	lined    Lined
	attempt  lockAttempt
}

// waitInRedis runs the attempts for the owner of *bp in the side's
// Waiting, within b. With a turn in a local line, a PubSub wait becomes a
// Lined one: the channel stays subscribed from one head of the line
// to the next (no UNSUBSCRIBE and SUBSCRIBE between them, and no release
// unseen), and the acceptor of lw, when lw is set, may be handed the lock.
func (l sideCall) waitInRedis(ctx context.Context, bp *Op, turn *Turn, lw *lineWait, b Bound) (bool, error) {
	s := l.s
	w := s.Scripts.Waiting(bp)
	st := w.Strategy
	if lw == nil {
		lw = &lineWait{} // no acceptor: only the wait and the attempt are used
	}
	if p, ok := st.(*PubSub); ok && turn != nil {
		lw.lined = Lined{PubSub: *p, Turn: turn}
		if lw.acceptor.turn != nil {
			lw.lined.Handoff = &lw.acceptor // not a nil *acceptor in the interface
		}
		st = &lw.lined
	}
	lw.attempt = lockAttempt{sideCall: l, base: bp}
	return l.wait(ctx, st, b, &lw.attempt, w.GiveUp)
}

// lockAttempt is one acquisition attempt of side s through l for the
// owner of base (for a fresh hold, a new owner per attempt): the engine's
// Attempt.
type lockAttempt struct {
	sideCall sideCall
	base     *Op
}

// Try makes the attempt (sideCall.try).
func (t *lockAttempt) Try(ctx context.Context) (bool, time.Duration, error) {
	return t.sideCall.try(ctx, t.sideCall.Lock.attempt(ctx, t.sideCall.s, *t.base))
}

// wait runs the wait (Waits.Until); when it ends without success, g
// (when set) cleans what the attempts left, on a detached context. Close
// waits for that clean-up, so that a process exiting after Close leaves
// no fair-lock queue entry behind.
func (l sideCall) wait(ctx context.Context, st Strategy, b Bound, a Attempt, g GiveUpper) (ok bool, err error) {
	c := l.Lock.C
	if g == nil {
		return c.waits.Until(ctx, st, b, a)
	}
	if !c.bg.Track() {
		return false, errs.ErrClosed
	}
	defer c.bg.Untrack()
	defer func() {
		if !ok {
			gctx, cancel := c.bg.Detached(ctx)
			defer cancel()
			g.GiveUp(gctx)
		}
	}()
	return c.waits.Until(ctx, st, b, a)
}

// holdsAny reports whether the owner of base holds the lock in this
// client: its field's hold, or its own field's (Field differs from Owner
// on an rwlock's write side, whose owner may hold read holds under its own
// name). A fresh hold's base has no owner yet, and holds nothing.
func (l sideCall) holdsAny(base Op) bool {
	if base.Owner == "" {
		return false
	}
	return l.Lock.C.holds.Count(HoldKey{Key: base.Name, Field: base.Field}) > 0 ||
		(base.Field != base.Owner && l.Lock.C.holds.Count(HoldKey{Key: base.Name, Field: base.Owner}) > 0)
}

// try makes one acquisition attempt for the owner of base, holding the
// owner's lock (ownerLocks) throughout, and after a lost reply through
// the undo (interrupted).
func (l sideCall) try(ctx context.Context, base Op) (bool, time.Duration, error) {
	s := l.s
	hk := HoldKey{Key: base.Name, Field: base.Field}
	ol, err := l.Lock.C.owners.lock(ctx, hk)
	if err != nil {
		return false, 0, err
	}
	undoing := false
	defer func() {
		if !undoing {
			l.Lock.C.owners.unlock(hk, ol)
		}
	}()
	op := new(Op) // the scripts take it by pointer: one on the heap, filled in place
	for {
		l.acquisition(op, base, hk)
		sent := time.Now() // Redis starts the lease after this
		out, err := s.Scripts.RunAcquire(ctx, op)
		if err == nil && out.Acquired && op.Sync.SyncErr() != nil {
			// Taken on the primary, not acknowledged by its replicas: a
			// failover could lose it. It is undone before the error
			// returns (for as long as the undo's bound allows).
			err = op.Sync.Err
		}
		switch {
		case err != nil:
			undoing = l.interrupted(*op, hk, ol, err)
			return false, 0, fmt.Errorf("%sacquire: %w", s.What, err)
		case out.Err != nil:
			return false, 0, out.Err
		case out.Lost && op.Count > 1:
			l.Lock.C.holds.End(hk, fmt.Errorf("%w: a reentrant acquisition found the hold gone from Redis", errs.ErrLockLost))
			continue // try afresh, as a new hold
		case !out.Acquired:
			return false, out.Retry, nil
		}
		l.hold(op, hk, sent, out.Fence)
		return true, 0, nil
	}
}

// acquisition makes *op the op of one acquisition by the owner of base,
// whose hold is hk: a new hold (count 1), or a re-entry of its live hold
// (count + 1), which keeps its fencing token: the script records it
// instead of taking a new one. op is filled in place: its Sync points into
// it.
func (l sideCall) acquisition(op *Op, base Op, hk HoldKey) {
	*op = base
	op.Count = 1
	if h := l.Lock.C.holds.Live(hk); h != nil {
		if n := h.Count(); n > 0 {
			op.Count, op.Fence = n+1, h.FencingToken()
		}
	}
	op.Lease = l.Lock.lease()
	op.Fencing = l.Lock.Fencing
	l.Lock.setRequestKey(op)
	op.Sync = l.Lock.C.replicas.NewSyncIn(&op.sync)
}

// interrupted answers an acquisition op that failed with err: without a
// reply, after a reply that says only that the last copy did not run, or
// not acknowledged by the replicas, it may have taken place, so
// it is undone (undo) in the background, still holding the owner's lock
// ol: the owner's next operation waits for it (as long as its ctx
// allows); this one waits for it at most request.UndoWait (a replica that did not
// acknowledge: until it is done). It reports whether the undo took the
// owner's lock over (then the undo unlocks it).
func (l sideCall) interrupted(op Op, hk HoldKey, ol *ownerLock, err error) bool {
	if !errs.MayHaveRun(err) {
		return false // the script's own answer: nothing ran
	}
	d := request.UndoWait
	if errors.Is(err, errs.ErrNotReplicated) {
		d = bg.ReleaseTimeout
	}
	undoing, done := l.undo(op, func() { l.Lock.C.owners.unlock(hk, ol) })
	request.AwaitUndo(done, d)
	return undoing
}

// hold records the hold op took (sent when the script was sent, with
// fencing token fence) and makes it the handle's latest; a hold taken from
// Redis through a local line with handoffs begins a chain.
// op is a pointer: the op of the acquisition, already on the heap (the
// scripts take it by pointer), is not copied to it once more.
func (l sideCall) hold(op *Op, hk HoldKey, sent time.Time, fence int64) {
	s := l.s
	var renew *RenewSpec
	if l.Lock.Fixed == 0 {
		renew = s.Scripts.Renewal(op)
	}
	h := l.Lock.C.holds.AcquiredAs(s.label(l.Lock.C.opts.Hooks != nil), sent, hk, op.Count, fence, op.Lease, renew)
	if op.Count == 1 && s.Handoff != nil && s.Line != "" {
		h.SetChain(l.Lock.C.lines.newChain()) // a hold taken from Redis begins a chain
		h.Through(s.Line, &l.Lock.C.lines)
	}
	l.Lock.took(h, *op)
}

// took makes h, just acquired (or re-entered) by op, the handle's latest
// hold; the handle's fencing token becomes the hold's.
func (l *Lock) took(h *Hold, op Op) {
	l.mu.Lock()
	l.latest = h
	if l.Fencing {
		l.fence = h.FencingToken()
	}
	if op.Fresh {
		l.fresh = op
	}
	l.mu.Unlock()
}

// undo reverts, in the background, an acquisition whose reply was lost
// (ctx ended, the connection broke): if it took place, the owner's count
// goes back to what it was; if it has not yet, it is marked cancelled so a
// late copy does nothing. An owner's undo whose own reply is lost is
// settled (request.Requests.Settle) before unlock. It calls unlock (the owner's
// lock) when done and reports whether it started, with a channel closed
// when it is done; when it did not (the client is closed), the caller
// unlocks, and the acquisition, if it took place, expires with its lease.
func (l sideCall) undo(acq Op, unlock func()) (bool, <-chan struct{}) {
	s := l.s
	// The undo is re-sent until Redis answers it, for as long as the
	// acquisition's record lives (sent before now, it ends before this).
	until := time.Now().Add(l.Lock.C.reqs.TTL() + request.RecordSlack)
	done := make(chan struct{})
	started := l.Lock.C.bg.Finish(l.Lock.C.reqs.TTL()+bg.CloseGrace, func(ctx context.Context) {
		defer close(done)
		op := acq
		op.Sync = nil
		op.Count = acq.Count - 1
		op.UndoKey = acq.ReqKey
		op.ReqKey = l.Lock.requestKey()
		op.Publish = ""
		var err error
		if op.Publish, err = l.Lock.C.PublishCommand(ctx); err == nil {
			err = l.Lock.C.reqs.ResendUntil(ctx, until, func() error {
				_, err := s.Scripts.RunRelease(ctx, &op)
				return err
			})
		}
		if err != nil {
			if errs.MayHaveRun(err) {
				l.Lock.C.ctr.undoFailed.Add(1)
			}
			l.Lock.C.log.Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
				"kind", s.Kind, "name", l.Lock.Name, "owner", op.Owner, "err", err)
		}
		// An owner's undo is a release: one whose reply was lost is
		// settled before the owner's next request (request.Requests.Settle).
		if !errs.MayHaveRun(err) || op.Fresh || op.Publish == "" || !l.Lock.C.reqs.Settle(op.ReqKey, unlock) {
			unlock()
		}
	})
	if !started {
		return false, nil
	}
	return true, done
}
