package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/request"
)

// Acquire takes one hold of side s, waiting until ctx ends (forever) or at
// most within (0: one attempt). It returns (true, nil) when held, (false,
// nil) when the wait ran out, and an error otherwise (wrapping ctx.Err()
// when ctx ended); on failure it holds nothing, locally or in Redis. Each
// call after the argument checks is one observed wait ([Client.BeginWait]).
//
// With s.Line, the callers of this client that wait for the lock (any
// handle, any owner) line up locally in arrival order, and only the head
// of the line asks Redis and subscribes: one waiter per client contends in
// Redis instead of all of them, and a release wakes one. The head leaves
// the line when it got the lock, gave up or failed, and the next caller
// tries at once, on the subscription the head passes on (the channel stays
// subscribed while the line lasts). An owner that already holds the lock,
// on any side, re-enters (or is refused an upgrade) without lining up (the
// caller it would wait behind may wait for it), and a single
// attempt (wait 0) does not overtake the line: it is made only when the
// line is empty, and reports false otherwise.
func (l *Lock) Acquire(ctx context.Context, s *Side, forever bool, within time.Duration) (ok bool, err error) {
	token, own, err := l.token(ctx)
	if err != nil {
		return false, err
	}
	if !forever && within < 0 {
		return false, l.Invalid("negative wait %v", within)
	}
	ctx, obs := l.C.BeginWait(ctx, s.Kind, s.Part, l.Name, forever, within)
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
	ok, err = l.acquire(ctx, s, l.baseRequest(s, token, own), forever, within, start)
	if !ok && !own {
		l.gate.Leave(s.Shared)
	}
	if err != nil {
		return false, l.fail(s, err)
	}
	return ok, nil
}

// acquire is Acquire past the gate: the caller's [acquisition], in the
// local line (acquisition.inLine), then in Redis. The whole call, from
// start, takes at most within unless forever.
func (l *Lock) acquire(ctx context.Context, s *Side, base Request, forever bool, within time.Duration, start time.Time) (bool, error) {
	// The attempts' base on the heap, where the attempts and the side's
	// Waiting find it, so that base itself stays on the stack.
	a := &acquisition{lock: l, side: s, base: base, end: waitEnd(forever, within, start)}
	if s.Line != "" && !l.holdsAny(base) {
		return a.inLine(ctx, forever, within, start)
	}
	return a.inRedis(ctx, nil, bound(forever, within, start))
}

// bound is what is left of a wait of at most within (unless forever) that
// began at start.
func bound(forever bool, within time.Duration, start time.Time) Bound {
	if forever {
		return Bound{Forever: true}
	}
	return Bound{Wait: max(within-time.Since(start), 0)}
}

// waitEnd is when the requests of a wait of at most within (unless
// forever) that began at start are cut: zero, never, for a wait until ctx
// ends and for a single attempt (wait 0: one request, bounded by ctx and
// go-redis).
func waitEnd(forever bool, within time.Duration, start time.Time) time.Time {
	if forever || within <= 0 {
		return time.Time{}
	}
	return start.Add(within)
}

// acquisition is one caller's acquisition of side on lock, past the gate,
// in one allocation: the base of its attempts' requests, the end of its
// wait (zero: none), its lined wait and, when it may be handed the lock
// (acc set), its acceptor. Its methods are the call's steps; it is the
// wait's [Attempt] (Try).
type acquisition struct {
	lock     *Lock
	side     *Side
	base     Request
	end      time.Time
	tried    bool // an attempt was made
	cut      bool // the end of the wait cut an attempt
	lined    Lined
	acceptor acceptor
	acc      *acceptor // &acceptor when the caller accepts handoffs; nil otherwise
}

// inLine is the acquisition for a side whose waiters line up in the client
// ([Side.Line]): the caller waits for its turn at the head of the line, then
// in Redis on the subscription the line passes on, ready (without a
// context owner) to be handed the lock by a releaser of this client.
func (a *acquisition) inLine(ctx context.Context, forever bool, within time.Duration, start time.Time) (bool, error) {
	l, s := a.lock, a.side
	t := l.C.lines.Join(s.Line, !forever && within == 0)
	if t == nil {
		return false, nil // others wait: a single attempt does not overtake them
	}
	defer t.Leave()
	if s.Handoff != nil && a.base.Fresh {
		// A caller without a context owner holds nothing while it
		// waits (the gate), so a handoff gives it a fresh hold.
		a.acc = &a.acceptor
		a.acc.init(l, s, t, &a.base)
	}
	if ok, err := t.Await(ctx, forever, bound(forever, within, start).Wait); !ok || err != nil {
		if a.acc != nil && a.acc.withdraw() {
			return true, nil // handed the lock as the wait ended
		}
		return false, err
	}
	ok, err := a.inRedis(ctx, t, bound(forever, within, start))
	if ok && (a.acc == nil || !a.acc.handed) {
		// Taken from Redis, maybe before other processes' waiters woken by
		// the same release: this client's subscription moves to the end
		// of the channel's subscribers (Redis delivers in subscription
		// order), so that the next release reaches it last, and the
		// processes take turns.
		t.passOn(nil)
	}
	return ok, err
}

// inRedis runs the attempts for the owner of a.base in the side's
// Waiting, within b. The engine chooses the strategy: a side's Spin, or
// its PubSub, which for a caller with a turn in a local line is [Lined]:
// the channel stays subscribed from one head of the line to the next (no
// UNSUBSCRIBE and SUBSCRIBE between them, and no release unseen), and the
// caller's acceptor (a.acc), if any, may be handed the lock.
func (a *acquisition) inRedis(ctx context.Context, turn *Turn, b Bound) (bool, error) {
	ws := a.side.Scripts.Waiting(&a.base)
	var st Strategy
	switch {
	case ws.Spin != nil:
		st = ws.Spin
	case turn != nil:
		a.lined = Lined{PubSub: *ws.PubSub, Turn: turn, Handoff: a.acc}
		st = &a.lined
	default:
		st = ws.PubSub
	}
	return a.lock.wait(ctx, st, b, a, ws.GiveUp, &a.cut)
}

// Try makes one attempt ([acquisition.attempt]) for the owner of a.base
// (for a fresh hold, a new owner per attempt), cut at the end of the
// wait. None is made once the wait has ended, but the first: a wait that
// ended before its first attempt (in the local line, or on a slow
// machine) makes one, uncut, as a single attempt does.
func (a *acquisition) Try(ctx context.Context) (bool, time.Duration, error) {
	end := a.end
	if !end.IsZero() && !time.Now().Before(end) {
		if a.tried {
			return false, 0, nil
		}
		end = time.Time{}
	}
	a.tried = true
	return a.attempt(ctx, end, a.lock.withFreshOwner(ctx, a.side, a.base))
}

// wait runs the wait ([Waits.Until]); when it ends without success, g
// (when set) cleans what the attempts left, on a detached context; in the
// background when *cut (when cut is set) says that an attempt was cut at
// the end of the wait (Redis is slow: the call does not wait for it).
// Close waits for that clean-up, so that a process exiting after Close
// leaves no fair-lock queue entry behind.
func (l *Lock) wait(ctx context.Context, st Strategy, b Bound, a Attempt, g GiveUpper, cut *bool) (ok bool, err error) {
	c := l.C
	if g == nil {
		return c.waits.Until(ctx, st, b, a)
	}
	if !c.bg.Track() {
		return false, errs.ErrClosed
	}
	defer c.bg.Untrack()
	defer func() {
		if !ok && cut != nil && *cut {
			c.bg.Finish(bg.ReleaseTimeout, g.GiveUp)
		} else if !ok {
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
func (l *Lock) holdsAny(base Request) bool {
	if base.Owner == "" {
		return false
	}
	return l.C.holds.Count(HoldKey{Key: base.Name, Field: base.Field}) > 0 ||
		(base.Field != base.Owner && l.C.holds.Count(HoldKey{Key: base.Name, Field: base.Owner}) > 0)
}

// attempt makes one acquisition attempt for the owner of base, holding
// the owner's lock ([ownerLocks]) throughout, and after a lost reply
// through the undo ([acquisition.interrupted]). The owner's lock and the
// acquisition are cut at end (zero: never), the end of the wait: when
// that, not ctx, cut them, the attempt reports "not acquired", and an
// acquisition on its way is undone in the background (a.cut).
func (a *acquisition) attempt(ctx context.Context, end time.Time, base Request) (bool, time.Duration, error) {
	c := a.lock.C
	hk := HoldKey{Key: base.Name, Field: base.Field}
	rctx := ctx
	if !end.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	ol, err := c.owners.lock(rctx, hk)
	if err != nil {
		if a.cut = wasCut(rctx, ctx); a.cut {
			return false, 0, nil
		}
		return false, 0, err
	}
	undoing := false
	defer func() {
		if !undoing {
			c.owners.unlock(hk, ol)
		}
	}()
	req := new(Request) // the scripts take it by pointer: one on the heap, filled in place
	for {
		a.request(req, base, hk)
		sent := time.Now() // Redis starts the lease after this
		out, err := a.run(rctx, req)
		if err == nil && out.Acquired && req.Sync.SyncErr() != nil {
			// Taken on the primary, not acknowledged by its replicas: a
			// failover could lose it. It is undone before the error
			// returns (for as long as the undo's bound allows).
			err = req.Sync.Err
		}
		switch {
		case err != nil:
			a.cut = wasCut(rctx, ctx)
			undoing = a.interrupted(*req, hk, ol, err, !a.cut)
			if a.cut {
				return false, 0, nil // the wait ended
			}
			return false, 0, fmt.Errorf("%s: %w", a.side.step("acquire"), err)
		case out.Err != nil:
			return false, 0, out.Err
		case out.Lost && req.Count > 1:
			c.holds.End(hk, fmt.Errorf("%w: a reentrant acquisition found the hold gone from Redis", errs.ErrLockLost))
			continue // try afresh, as a new hold
		case !out.Acquired:
			return false, out.Retry, nil
		}
		a.record(req, hk, sent, out.Fence)
		return true, 0, nil
	}
}

// request makes *req the acquisition by the owner of base, whose hold is
// hk: a new hold (count 1), or a re-entry of its live hold (count + 1),
// which keeps its fencing token: the script records it instead of taking
// a new one. req is filled in place: its Sync points into it.
func (a *acquisition) request(req *Request, base Request, hk HoldKey) {
	l := a.lock
	*req = base
	req.Count = 1
	if h := l.C.holds.Live(hk); h != nil {
		if n := h.Count(); n > 0 {
			req.Count, req.Fence = n+1, h.FencingToken()
		}
	}
	req.Lease = l.lease()
	req.Fencing = l.Fencing
	l.setRequestKey(req)
	req.Sync = l.C.replicas.NewSyncIn(&req.sync)
}

// run sends the acquisition req, with its deadline (a fresh hold's has
// its own already) and its runner.
func (a *acquisition) run(ctx context.Context, req *Request) (Outcome, error) {
	c := a.lock.C
	if !req.Fresh {
		req.Deadline = c.reqs.Deadline(ctx)
	}
	req.Runner = c.replicas.Runner(req.Sync)
	return a.side.Scripts.RunAcquire(ctx, req)
}

// interrupted answers an acquisition req that failed with err: without a
// reply, after a reply that says only that the last copy did not run, or
// not acknowledged by the replicas, it may have taken place, so it is
// undone ([Lock.undo]) in the background, still holding the owner's lock
// ol: the owner's next operation waits for it (as long as its ctx
// allows). With await, this one waits for it at most [request.UndoWait]
// (a replica that did not acknowledge: until it is done); without (the
// end of the wait cut the acquisition), not at all. It reports whether
// the undo took the owner's lock over (then the undo unlocks it).
func (a *acquisition) interrupted(req Request, hk HoldKey, ol *ownerLock, err error, await bool) bool {
	if !errs.MayHaveRun(err) {
		return false // the script's own answer: nothing ran
	}
	c := a.lock.C
	undoing, done := a.lock.undo(a.side, req, func() { c.owners.unlock(hk, ol) })
	if await {
		d := request.UndoWait
		if errors.Is(err, errs.ErrNotReplicated) {
			d = bg.ReleaseTimeout
		}
		request.AwaitUndo(done, d)
	}
	return undoing
}

// wasCut reports whether a request run on rctx (ctx, cut at the end of a
// wait) failed because the wait ended, not ctx.
func wasCut(rctx, ctx context.Context) bool {
	return rctx != ctx && rctx.Err() != nil && ctx.Err() == nil
}

// record records the hold req took (sent when the script was sent, with
// fencing token fence) and makes it the handle's latest; a hold taken
// from Redis through a local line with handoffs begins a chain. req is a
// pointer: the acquisition, already on the heap (the scripts take it by
// pointer), is not copied once more.
func (a *acquisition) record(req *Request, hk HoldKey, sent time.Time, fence int64) {
	l, s := a.lock, a.side
	var renew *RenewSpec
	if l.Fixed == 0 {
		renew = s.Scripts.Renewal(req)
	}
	h := l.C.holds.acquiredAs(s.label(l.C.opts.Hooks != nil), sent, hk, req.Count, fence, req.Lease, renew)
	if req.Count == 1 && s.Handoff != nil && s.Line != "" {
		h.setChain(l.C.lines.newChain()) // a hold taken from Redis begins a chain
		h.through(s.Line, &l.C.lines)
	}
	l.took(h, *req)
}

// took makes h, just acquired (or re-entered) by req, the handle's latest
// hold; the handle's fencing token becomes the hold's. The handle's copy
// of a fresh hold's request keeps no Sync (it points into the
// acquisition's Request) nor the runner made from it: a release sets its
// own.
func (l *Lock) took(h *Hold, req Request) {
	l.mu.Lock()
	l.latest = h
	if l.Fencing {
		l.fence = h.FencingToken()
	}
	if req.Fresh {
		req.Sync, req.Runner = nil, nil
		l.fresh = req
	}
	l.mu.Unlock()
}

// undo reverts, in the background, an acquisition acq on side s whose
// reply was lost (ctx ended, the connection broke): if it took place, the
// owner's count goes back to what it was; if it has not yet, it is marked
// cancelled so a late copy does nothing. An owner's undo whose own reply
// is lost is settled ([request.Requests.Settle]) before unlock. It calls
// unlock (the owner's lock) when done and reports whether it started,
// with a channel closed when it is done; when it did not (the client is
// closed), the caller unlocks, and the acquisition, if it took place,
// expires with its lease.
func (l *Lock) undo(s *Side, acq Request, unlock func()) (bool, <-chan struct{}) {
	// The undo is re-sent until Redis answers it, for as long as the
	// acquisition's record lives (sent before now, it ends before this).
	until := time.Now().Add(l.C.reqs.TTL() + request.RecordSlack)
	done := make(chan struct{})
	started := l.C.bg.Finish(l.C.reqs.TTL()+bg.CloseGrace, func(ctx context.Context) {
		defer close(done)
		req := acq
		req.Sync = nil
		req.Count = acq.Count - 1
		req.UndoKey = acq.ReqKey
		req.ReqKey = l.requestKey()
		req.Publish = ""
		var err error
		if req.Publish, err = l.C.PublishCommand(ctx); err == nil {
			err = l.C.reqs.ResendUntil(ctx, until, func() error {
				_, err := l.runRelease(ctx, s, &req)
				return err
			})
		}
		if err != nil {
			if errs.MayHaveRun(err) {
				l.C.ctr.undoFailed.Add(1)
			}
			l.C.log.Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
				"kind", s.Kind, "name", l.Name, "owner", req.Owner, "err", err)
		}
		// An owner's undo is a release: one whose reply was lost is
		// settled before the owner's next request ([request.Requests.Settle]).
		if !errs.MayHaveRun(err) || req.Fresh || req.Publish == "" || !l.C.reqs.Settle(req.ReqKey, unlock) {
			unlock()
		}
	})
	if !started {
		return false, nil
	}
	return true, done
}
