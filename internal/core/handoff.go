package core

import (
	"context"
	"time"
)

// In-process handoff.
//
// When a hold ends and the next caller in the client's local line for the
// lock waits (and is not asking Redis at that moment), the release and that
// caller's acquisition are one script (Handoffer.RunHandoff): the lock goes from one
// owner to the next in one round trip, with no PUBLISH and no waiter woken
// to try again. While the lock is held through the line (HeldHere), its
// head does not ask Redis at all: the release hands the lock to it, or
// publishes (a message makes the head ask Redis even before this client
// has counted the hold ended), or the hold is lost and the head is woken
// in-process (Lines.left). Other processes see the lock held all
// along; their waiters re-check when its lease would end, and are woken by
// the release that ends the chain of handoffs. A caller that took the lock
// from Redis drops the line's subscription (sideCall.acquireInLine), so that the next
// head subscribes anew, at the end of the channel's subscribers: Redis
// delivers in subscription order, and the other processes' waiters hear
// the next release first.
//
// So that they get their turn, a chain is bounded as Go's sync.Mutex bounds
// its fast path: a hold taken from Redis starts a chain, and a release hands
// the lock on only to a caller that was already waiting when the chain
// began, or while the chain is younger than HandoffWindow. Past both, the
// release frees the lock in Redis and publishes, and the next local caller
// competes with everyone else. Every caller waiting in this client when a
// chain begins is served by it, so no caller of this client waits for more
// than one chain of its own client per chain of every other process.

// HandoffWindow is how long a chain of in-process handoffs may also serve
// callers that arrived after it began.
const HandoffWindow = time.Millisecond

// A hold's place in a chain (Chain) is when the chain began (a hold
// taken from Redis) and the last arrival (Turn.seq) it serves in any case.

// chainAllows reports whether the chain ch may hand the lock on to the
// caller that arrived as seq.
func chainAllows(ch Chain, seq uint64) bool {
	return seq <= ch.Last || time.Since(ch.Start) < HandoffWindow
}

// newChain returns the chain a hold taken from Redis now begins: it serves
// every caller of the client already waiting.
func (ls *Lines) newChain() Chain {
	return Chain{Start: time.Now(), Last: ls.seq.Load()}
}

// Accepts makes the turn accept handoffs of op (without its ReqKey) while
// it waits in the line, until Retract.
func (t *Turn) Accepts(op Op) {
	t.offers(&Offer{Op: op, done: make(chan struct{})})
}

// offers makes the turn accept handoffs with o, a new offer, as Accepts.
func (t *Turn) offers(o *Offer) {
	t.ls.mu.Lock()
	t.offer = o
	t.ls.mu.Unlock()
}

// BeginAsk marks the turn as asking Redis, so that no releaser claims its
// offer meanwhile; it reports false, and marks nothing, when a releaser has
// claimed it already (Handover then gives the outcome). EndAsk ends the mark.
func (t *Turn) BeginAsk() bool {
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	if t.offer != nil && t.offer.claimed {
		return false
	}
	t.trying = true
	return true
}

// EndAsk ends a BeginAsk.
func (t *Turn) EndAsk() {
	t.ls.mu.Lock()
	t.trying = false
	t.ls.mu.Unlock()
}

// HandedOver returns a channel closed when a releaser has finished a handoff
// to the turn (nil without an offer).
func (t *Turn) HandedOver() <-chan struct{} {
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	if t.offer == nil {
		return nil
	}
	return t.offer.done
}

// Handover returns the offer when a releaser claimed it, after waiting for the
// outcome (the releaser's script is bounded by its timeout); the turn no
// longer accepts handoffs then (Accepts again to go on). nil when
// unclaimed.
func (t *Turn) Handover() *Offer {
	t.ls.mu.Lock()
	o := t.offer
	if o == nil || !o.claimed {
		t.ls.mu.Unlock()
		return nil
	}
	t.offer = nil
	t.ls.mu.Unlock()
	<-o.done
	return o
}

// Retract ends the turn's offer; it returns the offer, with its outcome,
// when a releaser claimed it first (as Handover).
func (t *Turn) Retract() *Offer {
	t.ls.mu.Lock()
	o := t.offer
	t.offer = nil
	t.ls.mu.Unlock()
	if o == nil || !o.claimed {
		return nil
	}
	<-o.done
	return o
}

// Claim is for the releaser of the last hold of a lock whose local line is
// key: it returns the offer of the caller at the head of the line when it
// accepts a handoff, is not asking Redis, the chain allows it and its
// owner's lock is free; the offer is then claimed (the owner's lock taken
// for the caller) and the releaser must Finish it. nil otherwise.
func (ls *Lines) Claim(key string, chain Chain, owners *ownerLocks) *Offer {
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
		o.Op, o.fill = o.fill.firstOp(), nil
	}
	ol, ok := owners.tryLock(HoldKey{Key: o.Op.Name, Field: o.Op.Field})
	if !ok {
		return nil
	}
	o.claimed, o.ol = true, ol
	return o
}

// Held counts one more live hold taken by a caller of the line key, so
// that the line's head waits for its release instead of asking Redis
// (HeldHere), until the hold ends (left). A hold records it with
// Hold.Through.
func (ls *Lines) Held(key string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.held == nil {
		ls.held = make(map[string]int)
	}
	ls.held[key]++
}

// left forgets a hold taken through the line key (Held), when it ends.
// When the hold was lost, or its release failed, rather than released
// (nothing is published, nothing handed on), it wakes the head of the
// line, which waits without asking Redis while the lock is held here.
// After a release it does not: the head hears the release's message in
// its turn among the channel's subscribers (last, if this client took the
// lock from Redis), as the other processes' waiters do.
func (ls *Lines) left(key string, lost bool) {
	if key == "" {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.held[key]--; ls.held[key] > 0 {
		return
	}
	delete(ls.held, key)
	if lost {
		ls.wakeHead(key)
	}
}

// Wake wakes the head of the line key if it waits for a handoff: to
// ask Redis again after a release that may not have published.
func (ls *Lines) Wake(key string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.wakeHead(key)
}

// wakeHead wakes the head of the line key if it waits for a handoff, with
// an empty outcome (not handed: it asks Redis). ls.mu must be held.
func (ls *Lines) wakeHead(key string) {
	if l := ls.m[key]; l != nil && len(l.q) > 0 {
		if o := l.q[0].offer; o != nil && !o.claimed {
			if o.fill != nil { // its op is the caller's next offers' (acceptor.Take)
				o.Op, o.fill = o.fill.firstOp(), nil
			}
			o.claimed = true
			o.Finish(Handed{})
		}
	}
}

// HeldHere reports whether a caller of the line key holds the lock in this
// client: its release will hand the lock on or publish, so the line's head
// need not ask Redis meanwhile.
func (ls *Lines) HeldHere(key string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.held[key] > 0
}

// acceptor lets a caller waiting in a lock's local line be handed the lock
// (Lined.Handoff).
type acceptor struct {
	call sideCall
	base Op // the caller's own attempts' base (sideCall.acquire)
	// first is the turn's first offer, allocated with the acceptor
	// (Turn.Accepts makes the next ones); its Op is the acquisition a
	// releaser makes for the caller, which nobody changes.
	first Offer
	turn  *Turn
	// handed: the caller got the lock by a handoff.
	handed bool
}

// initAcceptor makes a the acceptor by which the caller's turn accepts
// handoffs of a fresh hold (base is a fresh hold's op without an owner
// yet: attempt gives it one).
//
// The first offer's op is made by the releaser that claims it (firstOp,
// under the lines' lock), not here: most acquisitions are never handed
// the lock.
func (l sideCall) initAcceptor(a *acceptor, base Op, turn *Turn) {
	*a = acceptor{call: l, base: base, turn: turn}
	a.first = Offer{fill: a, done: make(chan struct{})}
	turn.offers(&a.first)
}

// firstOp makes the op of the caller's first offer: a new fresh owner
// (Lock.attempt), count 1, the lock's lease and fencing. Its context is
// only the request deadline's, which uses no value of it.
func (a *acceptor) firstOp() Op {
	l := a.call
	op := l.Lock.attempt(context.Background(), l.s, a.base)
	op.Count = 1
	op.Lease = l.Lock.lease()
	op.Fencing = l.Lock.Fencing
	return op
}

// BeginTry lets the caller ask Redis unless a caller of this client holds
// the lock (and force is false) or a releaser claimed it (Turn.BeginAsk).
func (a *acceptor) BeginTry(force bool) bool {
	return (force || !a.call.Lock.C.lines.HeldHere(a.call.s.Line)) && a.turn.BeginAsk()
}

// EndTry ends a BeginTry.
func (a *acceptor) EndTry() { a.turn.EndAsk() }

// Handed is closed when a releaser has finished a handoff to the caller.
func (a *acceptor) Handed() <-chan struct{} { return a.turn.HandedOver() }

// Take takes the outcome of a handoff a releaser claimed (took), and
// otherwise accepts the next one.
func (a *acceptor) Take() bool {
	o := a.turn.Handover()
	if o == nil {
		return false
	}
	if a.took(o) {
		return true
	}
	a.turn.Accepts(a.first.Op) // ready for the next release
	return false
}

// Withdraw ends the caller's readiness, taking the outcome of a handoff
// claimed meanwhile.
func (a *acceptor) Withdraw() bool {
	o := a.turn.Retract()
	return o != nil && a.took(o)
}

// took takes the outcome of the handoff o: the hold when the caller got the
// lock; an undo in the background when the reply was lost. It gives back
// the owner's lock Claim took.
func (a *acceptor) took(o *Offer) bool {
	call, l, s, op := a.call, a.call.Lock, a.call.s, o.Op
	hk := HoldKey{Key: op.Name, Field: op.Field}
	unlock := func() {
		if o.ol != nil { // nil: a wake-up, not a handoff (heldEnded)
			l.C.owners.unlock(hk, o.ol)
		}
	}
	r := o.res
	switch {
	case r.Unknown:
		if ok, _ := call.undo(op, unlock); !ok {
			unlock()
		}
		return false
	case !r.Acquired:
		unlock()
		return false
	}
	var renew *RenewSpec
	if l.Fixed == 0 {
		renew = s.Scripts.Renewal(&op)
	}
	h := l.C.holds.AcquiredAs(s.label(l.C.opts.Hooks != nil), r.Sent, hk, op.Count, r.Fence, op.Lease, renew)
	h.SetChain(r.Chain)
	h.Through(s.Line, &l.C.lines)
	unlock()
	l.took(h, op)
	a.handed = true
	return true
}
