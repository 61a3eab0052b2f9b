package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/request"
)

// Release releases one hold of side s by the owner acting in ctx. It runs
// on a detached context, so a cancelled ctx still releases. Without a
// context owner it releases the hold the handle took without one, from any
// goroutine. It returns an error wrapping [errs.ErrNotHeld], and changes
// nothing, when this client holds nothing for that owner (it sends
// nothing then), or when Redis no longer had the hold (it was lost).
func (l *Lock) Release(ctx context.Context, s *Side) error {
	token, own, err := l.token(ctx)
	if err != nil {
		return err
	}
	if !own {
		if x := ownerlessHolder(l, s); x != l {
			// Held through another handle of the name: one mutex
			// (lock.go: "Ownerless holds").
			return x.Release(ctx, s)
		}
		defer l.C.ownerless.drop(l) // after the gate's Leave
	}
	base := l.baseRequest(s, token, own)
	if !own {
		if !l.gate.Holds(s.Shared) {
			return l.fail(s, fmt.Errorf("%snot locked through this handle: %w", s.sideOf(), errs.ErrNotHeld))
		}
		defer l.gate.Leave(s.Shared)
		if s.Fresh {
			// The hold the handle took without a context owner.
			if base = l.freshHold(); base.Owner == "" {
				return l.fail(s, fmt.Errorf("%snot locked through this handle: %w", s.sideOf(), errs.ErrNotHeld))
			}
		}
	}
	r := &releaser{lock: l, side: s, req: base}
	return r.release(ctx)
}

// releaser is one release of side by the owner of req: its steps, the
// release (req) it sends, on its detached context, and the request key of
// a context owner's release whose reply was lost (unsettled), which is
// settled before the owner's lock is given back
// ([request.Requests.Settle]).
type releaser struct {
	lock      *Lock
	ctx       context.Context
	side      *Side
	req       Request
	unsettled string
}

// release is Release for the owner of r.req, on a detached context,
// holding the owner's lock.
func (r *releaser) release(ctx context.Context) error {
	l, s, base := r.lock, r.side, r.req
	hk := HoldKey{Key: base.Name, Field: base.Field}
	ctx, cancel := l.C.bg.Detached(ctx)
	defer cancel()
	r.ctx = ctx
	ol, err := l.C.owners.lock(ctx, hk)
	if err != nil {
		return l.fail(s, fmt.Errorf("%s: %w", s.step("release"), err))
	}
	defer r.unlockSettled(hk, ol)
	r.req.Lease = l.lease()
	l.setRequestKey(&r.req)
	if r.req.Publish, err = l.C.PublishCommand(ctx); err != nil {
		return l.fail(s, fmt.Errorf("%s: %w", s.step("release"), err))
	}
	cur := l.C.holds.Count(hk)
	if cur == 0 {
		// This client holds nothing for the owner (never acquired, lost,
		// released, or held by another process or an earlier Client with
		// the same id: a hold is never adopted). ErrNotHeld changes
		// nothing: whatever Redis keeps for the owner is left to its lease
		// (it is not renewed).
		return l.fail(s, fmt.Errorf("%sowner %s holds nothing through this Client: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	}
	r.req.Count = cur - 1
	if handed, err := r.handoff(hk); handed {
		return err
	}
	r.req.Sync = l.C.pipe.NewSyncIn(&r.req.sync)
	h := l.C.holds.beginRelease(hk, r.req.Count)
	sent := time.Now()
	remaining, err := r.send()
	h.released(r.req.Count, remaining, err, sent)
	if err != nil && r.req.Count == 0 && s.Line != "" {
		l.C.lines.wake(s.Line) // the release may not have published
	}
	switch {
	case err != nil:
		return l.fail(s, fmt.Errorf("%s: %w", s.step("release"), err))
	case remaining < 0:
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	case r.req.Sync.SyncErr() != nil:
		return l.fail(s, fmt.Errorf("%s on the primary, so it took effect and must not be retried: %w", s.step("released"), r.req.Sync.Err))
	}
	return nil
}

// send runs the side's release script once ([releaser.run]), and keeps
// the request key of a context owner's release whose reply was lost.
func (r *releaser) send() (int64, error) {
	remaining, err := r.run()
	if errs.MayHaveRun(err) && !r.req.Fresh {
		r.unsettled = r.req.ReqKey
	}
	return remaining, err
}

// run sends the release (or undo) r.req, with its deadline (a fresh
// hold's: its mark's end) and its runner.
func (r *releaser) run() (int64, error) {
	c, ctx, req := r.lock.C, r.ctx, &r.req
	if req.Fresh {
		req.MarkUntil = c.reqs.MarkUntil(ctx, req.Deadline)
	} else {
		req.Deadline = c.reqs.Deadline(ctx)
	}
	req.Runner = c.pipe.Runner(req.Sync)
	return r.side.Scripts.RunRelease(ctx, req)
}

// unlockSettled gives back the owner's lock ol on hk after r's release:
// at once, or once a release whose reply was lost is settled.
func (r *releaser) unlockSettled(hk HoldKey, ol *ownerLock) {
	c := r.lock.C
	// The closure for Settle is made only when it is needed.
	if r.unsettled == "" || !c.reqs.Settle(r.unsettled, func() { c.owners.unlock(hk, ol) }) {
		c.owners.unlock(hk, ol)
	}
}

// record records the hold req took (sent when the script was sent, with
// fencing token fence) and makes it the handle's latest ([Lock.latest]).
// A hold taken through a local line with handoffs is on a chain: chain,
// the one a handoff goes on with, or (zero) a new one for a hold taken
// from Redis. req is a pointer: the acquisition, already on the heap (the
// scripts take it by pointer), is not copied once more.
func (l *Lock) record(s *Side, req *Request, hk HoldKey, sent time.Time, fence int64, chain Chain) {
	var renew *RenewSpec
	if l.Fixed == 0 {
		renew = s.Scripts.Renewal(req)
	}
	h := l.C.holds.acquiredAs(shutdownRelease{lock: l, side: s, req: freshCopy(req)}, sent, hk, req.Count, fence, req.Lease, renew)
	tookOwnerless(l, s, *req) // a hold without a context owner: the name's (lock.go)
	if req.Count == 1 && s.Handoff != nil && s.Line != "" {
		if chain.Start.IsZero() {
			chain = l.C.lines.newChain() // a hold taken from Redis begins a chain
		}
		h.through(s.Line, &l.C.lines, chain)
	}
	l.mu.Lock()
	l.latest = h
	if l.Fencing {
		l.fence = h.FencingToken()
	}
	if req.Fresh {
		l.fresh = &h.shut.req // the hold's copy, set when it began
	}
	l.mu.Unlock()
}

// freshCopy is the handle's copy of a fresh hold's acquisition req: it
// keeps no Sync (that points into the acquisition's own Request) nor the
// runner made from it, so a later release sets its own.
func freshCopy(req *Request) Request {
	r := *req
	r.Sync, r.Runner = nil, nil
	return r
}

// shutdownRelease is how Shutdown releases one hold: the handle and side
// that took it and the request of the acquisition that started it (its
// owner, its field, and for a fresh hold its request key and deadline).
type shutdownRelease struct {
	lock *Lock
	side *Side
	req  Request
}

// primitive is the label of the hold for observers: its primitive and
// side ("" for a hold that is not a lock's).
func (sr *shutdownRelease) primitive() string {
	if sr.side == nil {
		return ""
	}
	return sr.side.label(true)
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
		r := &releaser{lock: l, ctx: ctx, side: s, req: acq}
		req := &r.req
		req.Sync = nil
		req.Count = acq.Count - 1
		req.UndoKey = acq.ReqKey
		req.ReqKey = l.requestKey()
		req.Publish = ""
		var err error
		if req.Publish, err = l.C.PublishCommand(ctx); err == nil {
			err = l.C.reqs.ResendUntil(ctx, until, func() error {
				_, err := r.run()
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

// In-process handoff.
//
// When a hold ends and the next caller in the client's local line for the
// lock waits (and is not asking Redis at that moment), the release and that
// caller's acquisition are one script ([Handoffer].RunHandoff): the lock
// goes from one owner to the next in one round trip, with no PUBLISH and no
// waiter woken to try again. While the lock is held through the line
// ([Lines.heldHere]), its head does not ask Redis at all: the release hands
// the lock off to it, or publishes (a message makes the head ask Redis even
// before this client has counted the hold ended), or the hold is lost and
// the head is woken in-process ([Lines.left]). Other processes see the
// lock held all along; their waiters re-check when its lease would end,
// and are woken by the release that ends the chain of handoffs. A caller
// that took the lock from Redis drops the line's subscription
// ([acquisition.inLine]), so that the next head subscribes anew, at the
// end of the channel's subscribers: Redis delivers in subscription order,
// and the other processes' waiters hear the next release first.
//
// So that they get their turn, a chain is bounded as Go's sync.Mutex bounds
// its fast path: a hold taken from Redis starts a chain, and a release hands
// the lock off only to a caller that was already waiting when the chain
// began, or while the chain is younger than HandoffWindow. Past both, the
// release frees the lock in Redis and publishes, and the next local caller
// competes with everyone else. Every caller waiting in this client when a
// chain begins is served by it, so no caller of this client waits for more
// than one chain of its own client per chain of every other process.
//
// The releaser's side first: [releaser.handoff] claims the offer of the
// caller at the head of the line ([Lines.claim]: the turn's [Offer],
// line.go, the acquisition to make for it), runs the script and finishes
// the offer. The waiter's side after it: its [acceptor], which the wait
// asks before each attempt ([acceptor.beginAsking]) and takes a handoff
// with ([acceptor.takeOffered], [acceptor.withdraw]).

// handoff hands the lock off, when the release r.req ends the owner's
// hold hk on a side with handoffs, to the caller at the head of the lock's
// local line, if the hold's chain allows it: it claims the caller's offer
// ([Lines.claim]), then releases the hold and acquires the lock for that
// caller in one script; the caller's wait ends with the outcome
// ([Offer].finish). It reports false, having sent nothing, when there is
// no caller to hand the lock off to (the release frees the lock in Redis
// instead), and otherwise answers the releaser as Release does.
func (r *releaser) handoff(hk HoldKey) (handed bool, err error) {
	l, s, ctx, req := r.lock, r.side, r.ctx, &r.req
	if !req.Fresh || req.Count != 0 || s.Handoff == nil || s.Line == "" {
		return false, nil
	}
	h := l.C.holds.Live(hk)
	if h == nil {
		return false, nil
	}
	chain := h.Chain()
	o := l.C.lines.claim(s.Line, chain, &l.C.owners)
	if o == nil {
		return false, nil
	}
	to := *o.Req
	h = l.C.holds.beginRelease(hk, 0)
	sent := time.Now()
	req.MarkUntil = l.C.reqs.MarkUntil(ctx, req.Deadline)
	req.Sync = l.C.pipe.NewSyncIn(&req.sync) // a handoff waits for the replicas too
	req.Runner = l.C.pipe.Runner(req.Sync)
	out, err := s.Handoff.RunHandoff(ctx, req, &to)
	result := offerResult{Sent: sent, Chain: chain}
	if err == nil {
		if serr := req.Sync.SyncErr(); serr != nil {
			// Handed off on the primary: the waiter holds it, but a
			// promoted replica has the releaser's hold, until the end of
			// its acknowledged lease: the waiter's lease runs from there
			// (Hold.ackedAt) until a renewal is acknowledged.
			l.C.log.Warn("redisync: a handoff was not acknowledged by the replicas in time; the handed hold lasts only as long as the releaser's acknowledged lease unless a renewal is acknowledged",
				"lock", req.Name, "err", serr)
			result.Sent = h.ackedAt(sent)
		}
	}
	h.released(0, out.Remaining, err, sent)
	switch {
	case err != nil:
		// An error reply of the script ran nothing; without a reply, or
		// after a re-send, the acquisition may have taken place.
		result.Unknown = errs.MayHaveRun(err)
	case out.Acquired:
		result.Acquired, result.Fence = true, out.Fence
	}
	o.finish(result)
	switch {
	case err != nil:
		return true, l.fail(s, fmt.Errorf("%s: %w", s.step("release"), err))
	case out.Remaining < 0:
		return true, l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), req.Owner, errs.ErrNotHeld))
	}
	return true, nil
}

// claim is for the releaser of the last hold of a lock whose local line is
// key: it returns the offer of the caller at the head of the line when it
// accepts a handoff, is not asking Redis, the chain allows it and its
// owner's lock is free; the offer is then claimed (the owner's lock taken
// for the caller) and the releaser must finish it. nil otherwise.
func (ls *Lines) claim(key string, chain Chain, owners *ownerLocks) *Offer {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil || len(l.q) == 0 {
		return nil
	}
	t := l.q[0]
	o := t.offer
	if o == nil || o.claimed || t.asking || !chainAllows(chain, t.seq) {
		return nil
	}
	o.make()
	ol, ok := owners.tryLock(HoldKey{Key: o.Req.Name, Field: o.Req.Field})
	if !ok {
		return nil
	}
	o.claimed, o.ol = true, ol
	o.doneChan() // the caller waits for it (acceptor.takeOffer)
	return o
}

// acceptor lets a caller waiting in a lock's local line be handed the lock
// ([acquisition.acceptor]).
type acceptor struct {
	lock *Lock
	side *Side
	// first is the turn's first offer, allocated with the acceptor
	// (accept makes the next ones); its Req, once made ([Offer.make]), is
	// the acquisition a releaser makes for the caller, which nobody
	// changes.
	first Offer
	turn  *Turn
}

// init makes a the acceptor by which the caller's turn accepts handoffs of
// a fresh hold (base is a fresh hold's request without an owner yet:
// [Lock.withFreshOwner] gives it one). The first offer's request is made
// by the releaser that claims it ([Offer.make]), not here: most
// acquisitions are never handed the lock.
func (a *acceptor) init(l *Lock, s *Side, turn *Turn, base *Request) {
	*a = acceptor{lock: l, side: s, turn: turn}
	a.first = Offer{base: base, lock: l, side: s}
	a.setOffer(&a.first)
}

// setOffer makes the caller's turn accept handoffs with o, a new offer,
// until a releaser claims it ([Lines.claim]) or the caller withdraws.
func (a *acceptor) setOffer(o *Offer) {
	a.turn.ls.mu.Lock()
	a.turn.offer = o
	a.turn.ls.mu.Unlock()
}

// beginAsking reports whether the caller may ask Redis now, and marks its
// turn as doing so, so that no releaser claims its offer meanwhile
// (endAsking ends the mark): false once a releaser has claimed the offer
// (takeOffered then gives the outcome), and, unless force, while a caller
// of this client holds the lock ([Lines.heldHere]: its release hands it
// off or publishes).
func (a *acceptor) beginAsking(force bool) bool {
	if !force && a.lock.C.lines.heldHere(a.side.Line) {
		return false
	}
	t := a.turn
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	if t.offer != nil && t.offer.claimed {
		return false
	}
	t.asking = true
	return true
}

// endAsking ends a beginAsking.
func (a *acceptor) endAsking() {
	a.turn.ls.mu.Lock()
	a.turn.asking = false
	a.turn.ls.mu.Unlock()
}

// offerDone returns a channel closed when a releaser has finished a
// handoff to the caller, or woken it (nil without an offer).
func (a *acceptor) offerDone() <-chan struct{} {
	a.turn.ls.mu.Lock()
	defer a.turn.ls.mu.Unlock()
	if a.turn.offer == nil {
		return nil
	}
	return a.turn.offer.doneChan()
}

// takeOffered takes the outcome of a handoff a releaser claimed, waiting
// for it, and reports whether the caller now holds the lock
// ([acceptor.accept]); otherwise the turn accepts the next one. false too
// when none was claimed.
func (a *acceptor) takeOffered() bool {
	o := a.takeOffer(false)
	if o == nil {
		return false
	}
	if a.accept(o) {
		return true
	}
	a.setOffer(&Offer{Req: a.first.Req}) // ready for the next release
	return false
}

// withdraw ends the caller's readiness when its wait ends, taking the
// outcome of a handoff claimed at that moment: it reports whether the
// caller holds the lock after all.
func (a *acceptor) withdraw() bool {
	o := a.takeOffer(true)
	return o != nil && a.accept(o)
}

// takeOffer returns the turn's offer when a releaser claimed it, after
// waiting for the outcome (the releaser's script is bounded by its
// timeout), and nil otherwise. The turn accepts no handoff after it
// returned one, nor after a withdrawal (end), which ends an unclaimed
// offer too.
func (a *acceptor) takeOffer(end bool) *Offer {
	t := a.turn
	t.ls.mu.Lock()
	o := t.offer
	if o == nil || (!o.claimed && !end) {
		t.ls.mu.Unlock()
		return nil
	}
	t.offer = nil
	t.ls.mu.Unlock()
	if !o.claimed {
		return nil
	}
	<-o.done
	return o
}

// accept takes the outcome of the handoff o: the hold when the caller got
// the lock ([Lock.record]); an undo in the background when the reply was
// lost. It gives back the owner's lock [Lines.claim] took.
func (a *acceptor) accept(o *Offer) bool {
	l, s, req := a.lock, a.side, o.Req // made (Offer.make) once claimed or woken
	hk := HoldKey{Key: req.Name, Field: req.Field}
	unlock := func() {
		if o.ol != nil { // nil: a wake-up, not a handoff (Lines.wakeHead)
			l.C.owners.unlock(hk, o.ol)
		}
	}
	r := o.res
	switch {
	case r.Unknown:
		if ok, _ := l.undo(s, *req, unlock); !ok {
			unlock()
		}
		return false
	case !r.Acquired:
		unlock()
		return false
	}
	l.record(s, req, hk, r.Sent, r.Fence, r.Chain)
	unlock()
	return true
}
