package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/hold"
)

// Release releases one hold of side s by the owner acting in ctx. It runs
// on a detached context, so a cancelled ctx still releases. Without a
// context owner it releases the hold the handle took without one, from any
// goroutine. It returns an error wrapping errs.ErrNotHeld when this client holds
// nothing for that owner (after clearing what Redis may keep of it), or
// when Redis no longer had the hold (it was lost). Without a context owner
// and nothing taken through the handle, it sends nothing.
func (l *Lock) Release(ctx context.Context, s *Side) error {
	token, own, err := l.owner(ctx)
	if err != nil {
		return err
	}
	base := l.op(s, token)
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
	call := sideCall{Lock: l, s: s}
	return call.release(ctx, base)
}

// release is Release for the owner of base, on a detached context,
// holding the owner's lock.
func (l sideCall) release(ctx context.Context, base Op) error {
	s := l.s
	hk := hold.Key{Key: base.Name, Field: base.Field}
	ctx, cancel := l.Lock.C.bg.Detached(ctx)
	defer cancel()
	ol, err := l.Lock.C.owners.lock(ctx, hk)
	if err != nil {
		return l.Lock.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	}
	r := &releaser{ctx: ctx, s: s, op: base}
	defer l.unlockSettled(hk, ol, r)
	r.op.Lease = l.Lock.lease()
	l.Lock.setRequestKey(&r.op)
	if r.op.Publish, err = l.Lock.C.PublishCommand(ctx); err != nil {
		return l.Lock.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	}
	cur := l.Lock.C.holds.Count(hk)
	if cur == 0 {
		// This client holds nothing for the owner (never acquired, lost,
		// released). Whatever Redis keeps for this client's owner is stale
		// (a lease about to run out, a field left by a failed release): the
		// release clears it, and changes nothing else.
		if _, err := r.send(); err != nil {
			l.Lock.C.log.Debug("redisync: clearing a stale hold failed", "kind", s.Kind, "name", l.Lock.Name, "err", err)
		}
		return l.Lock.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	}
	r.op.Count = cur - 1
	if o, chain := l.claimNext(hk, r.op); o != nil {
		return l.handOff(ctx, hk, r.op, o, chain)
	}
	r.op.Sync = l.Lock.C.replicas.NewSyncIn(&r.op.sync)
	remaining, err := l.Lock.C.holds.Lower(hk, r.op.Count, r.send)
	if err != nil && r.op.Count == 0 && s.Line != "" {
		l.Lock.C.lines.Wake(s.Line) // the release may not have published
	}
	switch {
	case err != nil:
		return l.Lock.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	case remaining < 0:
		return l.Lock.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	case r.op.Sync.SyncErr() != nil:
		return l.Lock.fail(s, fmt.Errorf("%sreleased on the primary (it took effect: do not release again): %w", s.What, r.op.Sync.Err))
	}
	return nil
}

// releaser sends one release (op) of side s, and keeps the request key of
// a context owner's release whose reply was lost (unsettled), which is
// settled before the owner's lock is given back (request.Requests.Settle).
type releaser struct {
	ctx       context.Context
	s         *Side
	op        Op
	unsettled string
}

// send runs the side's release script once.
func (r *releaser) send() (int64, error) {
	remaining, err := r.s.Scripts.RunRelease(r.ctx, &r.op)
	if errs.MayHaveRun(err) && !r.op.Fresh {
		r.unsettled = r.op.ReqKey
	}
	return remaining, err
}

// unlockSettled gives back the owner's lock ol on hk after r's release:
// at once, or once a release whose reply was lost is settled.
func (l sideCall) unlockSettled(hk hold.Key, ol *ownerLock, r *releaser) {
	// The closure for Settle is made only when it is needed.
	if r.unsettled == "" || !l.Lock.C.reqs.Settle(r.unsettled, func() { l.Lock.C.owners.unlock(hk, ol) }) {
		l.Lock.C.owners.unlock(hk, ol)
	}
}

// claimNext returns, for the release op of hold hk, the offer of the next
// caller in the lock's local line that the release may hand the lock to
// (handoff.go), claimed, and the chain the hold is part of; nil when the
// release frees the lock in Redis instead.
func (l sideCall) claimNext(hk hold.Key, op Op) (*Offer, hold.Chain) {
	s := l.s
	if !op.Fresh || op.Count != 0 || s.Handoff == nil || s.Line == "" {
		return nil, hold.Chain{}
	}
	h := l.Lock.C.holds.Live(hk)
	if h == nil {
		return nil, hold.Chain{}
	}
	chain := h.Chain()
	return l.Lock.C.lines.Claim(s.Line, chain, &l.Lock.C.owners), chain
}

// handOff releases the owner's last hold (op) and acquires the lock for the
// caller whose offer o the release claimed, in one script; the caller's
// wait ends with the outcome (acceptor.End). It answers the releaser as
// Release does.
func (l sideCall) handOff(ctx context.Context, hk hold.Key, op Op, o *Offer, chain hold.Chain) error {
	s := l.s
	to := o.Op
	var out HandoffOutcome
	sent := time.Now()
	remaining, err := l.Lock.C.holds.Lower(hk, 0, func() (int64, error) {
		var err error
		out, err = s.Handoff.RunHandoff(ctx, &op, &to)
		return out.Remaining, err
	})
	handed := Handed{Sent: sent, Chain: chain}
	switch {
	case err != nil:
		// An error reply of the script ran nothing; without a reply, or
		// after a re-send, the acquisition may have taken place.
		handed.Unknown = errs.MayHaveRun(err)
	case out.Acquired:
		handed.Acquired, handed.Fence = true, out.Fence
	}
	o.Finish(handed)
	switch {
	case err != nil:
		return l.Lock.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	case remaining < 0:
		return l.Lock.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), op.Owner, errs.ErrNotHeld))
	}
	return nil
}
