package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

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
// The waiter's side: its turn's offer ([Offer]: the acquisition to make for
// it) and its [acceptor], which the lined wait asks before each try
// (beginTry) and takes a handoff with (takeHandoff, withdraw). The
// releaser's side: [Lines.claim] and [releaser.handoff].

// HandoffWindow is how long a chain of in-process handoffs may also serve
// callers that arrived after it began.
const HandoffWindow = time.Millisecond

// chainAllows reports whether the chain ch may hand the lock off to the
// caller that arrived as seq.
func chainAllows(ch Chain, seq uint64) bool {
	return seq <= ch.Last || time.Since(ch.Start) < HandoffWindow
}

// newChain returns the chain a hold taken from Redis now begins: it serves
// every caller of the client already waiting.
func (ls *Lines) newChain() Chain {
	return Chain{Start: time.Now(), Last: ls.seq.Load()}
}

// Offer is a caller's readiness, while it waits in a local line, to be
// handed the lock: the acquisition to make for it, and where the outcome
// goes. A releaser claims it ([Lines.claim]) only while the caller is at
// the head of the line and not asking Redis itself.
type Offer struct {
	// Req is the acquisition for the caller: a fresh hold's owner, field,
	// request key and deadline ([Lock.withFreshOwner]), count, lease,
	// fencing.
	Req Request
	// fill, when set, makes Req when a releaser claims the offer: a
	// caller's first offer, whose fresh owner would otherwise be made (a
	// request key, one allocation) at every uncontended acquisition.
	fill *acceptor
	done chan struct{} // closed once res is set
	res  Handoff
	// claimed: a releaser took the offer, holding the owner's lock ol for
	// the caller, which must take the outcome ([acceptor.takeHandoff]).
	claimed bool
	ol      *ownerLock
}

// Handoff is the outcome of a handoff, for the caller it was made for.
type Handoff struct {
	// Acquired: the caller holds the lock (count Req.Count, fencing token
	// Fence), from Sent on: the lease began after Sent.
	Acquired bool
	Fence    int64
	Sent     time.Time
	Chain    Chain // the chain the hold goes on with
	// Unknown: the handoff's reply was lost; the acquisition may or may
	// not have happened, and the caller must undo it ([Lock.undo]).
	Unknown bool
}

// finish sets a claimed offer's outcome and wakes its caller.
func (o *Offer) finish(h Handoff) {
	o.res = h
	close(o.done)
}

// acceptor lets a caller waiting in a lock's local line be handed the lock
// ([Lined].Handoff).
type acceptor struct {
	lock *Lock
	side *Side
	base *Request // the caller's own attempts' base ([acquisition.inLine])
	// first is the turn's first offer, allocated with the acceptor
	// (accept makes the next ones); its Req is the acquisition a releaser
	// makes for the caller, which nobody changes.
	first Offer
	turn  *Turn
	// handed: the caller got the lock by a handoff.
	handed bool
}

// init makes a the acceptor by which the caller's turn accepts handoffs of
// a fresh hold (base is a fresh hold's request without an owner yet:
// [Lock.withFreshOwner] gives it one).
//
// The first offer's request is made by the releaser that claims it
// (firstRequest, under the lines' lock), not here: most acquisitions are
// never handed the lock.
func (a *acceptor) init(l *Lock, s *Side, turn *Turn, base *Request) {
	*a = acceptor{lock: l, side: s, base: base, turn: turn}
	a.first = Offer{fill: a, done: make(chan struct{})}
	a.setOffer(&a.first)
}

// firstRequest makes the request of the caller's first offer: a new fresh
// owner ([Lock.withFreshOwner]), count 1, the lock's lease and fencing.
// Its context is only the request deadline's, which uses no value of it.
func (a *acceptor) firstRequest() Request {
	l := a.lock
	req := l.withFreshOwner(context.Background(), a.side, *a.base)
	req.Count = 1
	req.Lease = l.lease()
	req.Fencing = l.Fencing
	return req
}

// setOffer makes the caller's turn accept handoffs with o, a new offer,
// until a releaser claims it ([Lines.claim]) or the caller withdraws.
func (a *acceptor) setOffer(o *Offer) {
	a.turn.ls.mu.Lock()
	a.turn.offer = o
	a.turn.ls.mu.Unlock()
}

// beginTry reports whether the caller may ask Redis now, and marks its
// turn as doing so, so that no releaser claims its offer meanwhile (endTry
// ends the mark): false once a releaser has claimed the offer
// (takeHandoff then gives the outcome), and, unless force, while a caller
// of this client holds the lock ([Lines.heldHere]: its release hands it
// off or publishes).
func (a *acceptor) beginTry(force bool) bool {
	if !force && a.lock.C.lines.heldHere(a.side.Line) {
		return false
	}
	t := a.turn
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	if t.offer != nil && t.offer.claimed {
		return false
	}
	t.trying = true
	return true
}

// endTry ends a beginTry.
func (a *acceptor) endTry() {
	a.turn.ls.mu.Lock()
	a.turn.trying = false
	a.turn.ls.mu.Unlock()
}

// handoffDone returns a channel closed when a releaser has finished a
// handoff to the caller (nil without an offer).
func (a *acceptor) handoffDone() <-chan struct{} {
	a.turn.ls.mu.Lock()
	defer a.turn.ls.mu.Unlock()
	if a.turn.offer == nil {
		return nil
	}
	return a.turn.offer.done
}

// takeHandoff takes the outcome of a handoff a releaser claimed, waiting
// for it, and reports whether the caller now holds the lock
// ([acceptor.took]); otherwise the turn accepts the next one. false too
// when none was claimed.
func (a *acceptor) takeHandoff() bool {
	o := a.takeOffer(false)
	if o == nil {
		return false
	}
	if a.took(o) {
		return true
	}
	a.setOffer(&Offer{Req: a.first.Req, done: make(chan struct{})}) // ready for the next release
	return false
}

// withdraw ends the caller's readiness when its wait ends, taking the
// outcome of a handoff claimed at that moment: it reports whether the
// caller holds the lock after all.
func (a *acceptor) withdraw() bool {
	o := a.takeOffer(true)
	return o != nil && a.took(o)
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

// took takes the outcome of the handoff o: the hold when the caller got the
// lock; an undo in the background when the reply was lost. It gives back
// the owner's lock Claim took.
func (a *acceptor) took(o *Offer) bool {
	l, s, req := a.lock, a.side, o.Req
	hk := HoldKey{Key: req.Name, Field: req.Field}
	unlock := func() {
		if o.ol != nil { // nil: a wake-up, not a handoff (Lines.wakeHead)
			l.C.owners.unlock(hk, o.ol)
		}
	}
	r := o.res
	switch {
	case r.Unknown:
		if ok, _ := l.undo(s, req, unlock); !ok {
			unlock()
		}
		return false
	case !r.Acquired:
		unlock()
		return false
	}
	var renew *RenewSpec
	if l.Fixed == 0 {
		renew = s.Scripts.Renewal(&req)
	}
	h := l.C.holds.acquiredAs(s.label(l.C.opts.Hooks != nil), r.Sent, hk, req.Count, r.Fence, req.Lease, renew)
	h.setChain(r.Chain)
	h.through(s.Line, &l.C.lines)
	unlock()
	l.took(h, req)
	a.handed = true
	return true
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
	if o == nil || o.claimed || t.trying || !chainAllows(chain, t.seq) {
		return nil
	}
	if o.fill != nil {
		o.Req, o.fill = o.fill.firstRequest(), nil
	}
	ol, ok := owners.tryLock(HoldKey{Key: o.Req.Name, Field: o.Req.Field})
	if !ok {
		return nil
	}
	o.claimed, o.ol = true, ol
	return o
}

// wake wakes the head of the line key if it waits for a handoff: to
// ask Redis again after a release that may not have published.
func (ls *Lines) wake(key string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.wakeHead(key)
}

// wakeHead wakes the head of the line key if it waits for a handoff, with
// an empty outcome (not handed: it asks Redis). ls.mu must be held.
func (ls *Lines) wakeHead(key string) {
	if l := ls.m[key]; l != nil && len(l.q) > 0 {
		if o := l.q[0].offer; o != nil && !o.claimed {
			if o.fill != nil { // its request is the caller's next offers' (acceptor.takeHandoff)
				o.Req, o.fill = o.fill.firstRequest(), nil
			}
			o.claimed = true
			o.finish(Handoff{})
		}
	}
}

// claimNext returns, for the release r.req of hold hk, the offer of the
// next caller in the lock's local line that the release may hand the lock
// off to, claimed ([Lines.claim]), and the chain the hold is part of; nil
// when the release frees the lock in Redis instead.
func (r *releaser) claimNext(hk HoldKey) (*Offer, Chain) {
	l, s, req := r.lock, r.side, &r.req
	if !req.Fresh || req.Count != 0 || s.Handoff == nil || s.Line == "" {
		return nil, Chain{}
	}
	h := l.C.holds.Live(hk)
	if h == nil {
		return nil, Chain{}
	}
	chain := h.Chain()
	return l.C.lines.claim(s.Line, chain, &l.C.owners), chain
}

// handoff releases the owner's last hold (r.req) and acquires the lock
// for the caller whose offer o the release claimed, in one script; the
// caller's wait ends with the outcome ([Offer].finish). It answers the
// releaser as Release does.
func (r *releaser) handoff(hk HoldKey, o *Offer, chain Chain) error {
	l, s, ctx, req := r.lock, r.side, r.ctx, &r.req
	to := o.Req
	var out HandoffOutcome
	h := l.C.holds.beginRelease(hk, 0)
	sent := time.Now()
	req.MarkUntil = l.C.reqs.MarkUntil(ctx, req.Deadline)
	req.Sync = l.C.replicas.NewSyncIn(&req.sync) // a handoff waits for the replicas too
	req.Runner = l.C.replicas.Runner(req.Sync)
	out, err := s.Handoff.RunHandoff(ctx, req, &to)
	result := Handoff{Sent: sent, Chain: chain}
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
		return l.fail(s, fmt.Errorf("%s: %w", s.step("release"), err))
	case out.Remaining < 0:
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), req.Owner, errs.ErrNotHeld))
	}
	return nil
}
