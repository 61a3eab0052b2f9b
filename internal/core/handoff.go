package core

import (
	"context"
	"time"
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
// The waiter's side, here: its turn's offer ([Offer]: the acquisition to
// make for it) and its [acceptor], which the wait asks before each attempt
// ([acceptor.beginAsking]) and takes a handoff with ([acceptor.takeOffered],
// [acceptor.withdraw]). The releaser's side, in release.go:
// [releaser.claimNext] claims the offer ([Lines.claim], line.go) and
// [releaser.handoff] runs the script and finishes the offer.

// HandoffWindow is how long a chain of in-process handoffs may also serve
// callers that arrived after it began.
const HandoffWindow = time.Millisecond

// chainAllows reports whether the chain ch may hand the lock off to the
// caller that arrived as seq.
func chainAllows(ch Chain, seq uint64) bool {
	return seq <= ch.Last || time.Since(ch.Start) < HandoffWindow
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
	// request key, one allocation) at every uncontended acquisition
	// (rlock's TestLockAllocs counts it).
	fill *acceptor
	done chan struct{} // closed once res is set
	res  offerResult
	// claimed: a releaser took the offer, holding the owner's lock ol for
	// the caller, which must take the outcome ([acceptor.takeOffered]).
	claimed bool
	ol      *ownerLock
}

// offerResult is the outcome of a handoff, for the caller it was made
// for.
type offerResult struct {
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
func (o *Offer) finish(h offerResult) {
	o.res = h
	close(o.done)
}

// acceptor lets a caller waiting in a lock's local line be handed the lock
// ([acquisition.acceptor]).
type acceptor struct {
	lock *Lock
	side *Side
	base *Request // the caller's own attempts' base ([acquisition.inLine])
	// first is the turn's first offer, allocated with the acceptor
	// (accept makes the next ones); its Req is the acquisition a releaser
	// makes for the caller, which nobody changes.
	first Offer
	turn  *Turn
}

// init makes a the acceptor by which the caller's turn accepts handoffs of
// a fresh hold (base is a fresh hold's request without an owner yet:
// [Lock.withFreshOwner] gives it one).
//
// The first offer's request is made by the releaser that claims it
// ([acceptor.firstRequest], under the lines' lock), not here: most acquisitions are
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
	return a.turn.offer.done
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
	a.setOffer(&Offer{Req: a.first.Req, done: make(chan struct{})}) // ready for the next release
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
	l.record(s, &req, hk, r.Sent, r.Fence, r.Chain)
	unlock()
	return true
}
