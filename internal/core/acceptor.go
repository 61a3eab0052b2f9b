package core

import (
	"context"

	"github.com/redisync/redisync/internal/core/hold"
)

// acceptor lets a caller waiting in a lock's local line be handed the lock
// (wait.Lined.Handoff).
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

// newAcceptor makes the caller's turn accept handoffs of a fresh hold
// (base is a fresh hold's op without an owner yet: attempt gives it one).
func (l sideCall) newAcceptor(ctx context.Context, base Op, turn *Turn) *acceptor {
	s := l.s
	op := l.Lock.attempt(ctx, s, base)
	op.Count = 1
	op.Lease = l.Lock.lease()
	op.Fencing = l.Lock.Fencing
	a := &acceptor{call: l, base: base, turn: turn}
	a.first = Offer{Op: op, done: make(chan struct{})}
	turn.offers(&a.first)
	return a
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
	hk := hold.Key{Key: op.Name, Field: op.Field}
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
	var renew *hold.RenewSpec
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
