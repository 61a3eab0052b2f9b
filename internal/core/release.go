package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Release releases one hold of side s by the owner acting in ctx. It runs
// on a detached context, so a cancelled ctx still releases. Without a
// context owner it releases the hold the handle took without one, from any
// goroutine. It returns an error wrapping [errs.ErrNotHeld] when this
// client holds nothing for that owner (after clearing what Redis may keep
// of it), or when Redis no longer had the hold (it was lost). Without a
// context owner and nothing taken through the handle, it sends nothing.
func (l *Lock) Release(ctx context.Context, s *Side) error {
	token, own, err := l.token(ctx)
	if err != nil {
		return err
	}
	if !own {
		if x := l.ownerlessHolder(s); x != l {
			// Held through another handle of the name: one mutex
			// (ownerless.go).
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
		// released). Whatever Redis keeps for this client's owner is stale
		// (a lease about to run out, a field left by a failed release): the
		// release clears it, and changes nothing else.
		if _, err := r.send(); err != nil {
			l.C.log.Debug("redisync: clearing a stale hold failed", "kind", s.Kind, "name", l.Name, "err", err)
		}
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	}
	r.req.Count = cur - 1
	if o, chain := r.claimNext(hk); o != nil {
		return r.handoff(hk, o, chain)
	}
	r.req.Sync = l.C.replicas.NewSyncIn(&r.req.sync)
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

// send runs the side's release script once ([Lock.runRelease]).
func (r *releaser) send() (int64, error) {
	remaining, err := r.lock.runRelease(r.ctx, r.side, &r.req)
	if errs.MayHaveRun(err) && !r.req.Fresh {
		r.unsettled = r.req.ReqKey
	}
	return remaining, err
}

// runRelease sends the release (or undo) req, with its deadline (a fresh
// hold's: its mark's end) and its runner.
func (l *Lock) runRelease(ctx context.Context, s *Side, req *Request) (int64, error) {
	if req.Fresh {
		req.MarkUntil = l.C.reqs.MarkUntil(ctx, req.Deadline)
	} else {
		req.Deadline = l.C.reqs.Deadline(ctx)
	}
	req.Runner = l.C.replicas.Runner(req.Sync)
	return s.Scripts.RunRelease(ctx, req)
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
