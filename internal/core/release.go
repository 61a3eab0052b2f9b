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
			// (doc.go: "Ownerless holds").
			return x.Release(ctx, s)
		}
		defer l.C.ownerless.drop(l) // after the gate's Leave
	}
	base := l.baseRequest(s, token, own)
	if !own {
		if !l.gate.Holds(s.Shared) {
			return s.fail(l.Name, fmt.Errorf("%snot locked through this handle: %w", s.sideOf(), errs.ErrNotHeld))
		}
		defer l.gate.Leave(s.Shared)
		if s.Fresh {
			// The hold the handle took without a context owner.
			if base = l.freshHold(); base.Owner == "" {
				return s.fail(l.Name, fmt.Errorf("%snot locked through this handle: %w", s.sideOf(), errs.ErrNotHeld))
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

// stay sets r.req.Stay when callers of this client still wait for the
// lock (none took it over): the client joins the lock's queue, if it has
// one, before the release wakes its first client.
func (r *releaser) stay() {
	s := r.side
	r.req.Stay = r.req.Count == 0 && s.Queue != nil && s.Line != "" && r.lock.C.lines.Len(s.Line) > 0
}

// stayed records that the release r.req, which answered remaining or
// err, put the client in the lock's queue (stay).
func (r *releaser) stayed(remaining int64, err error) {
	if r.req.Stay && err == nil && remaining == 0 {
		r.lock.C.lines.setQueued(r.side.Queue.Waiters, true)
	}
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
		return s.fail(l.Name, fmt.Errorf("%s: %w", s.step("release"), err))
	}
	defer r.unlockSettled(hk, ol)
	r.req.Lease = l.lease()
	l.setRequestKey(&r.req)
	if r.req.Publish, err = l.C.PublishCommand(ctx); err != nil {
		return s.fail(l.Name, fmt.Errorf("%s: %w", s.step("release"), err))
	}
	cur := l.C.holds.Count(hk)
	if cur == 0 {
		// This client holds nothing for the owner (never acquired, lost,
		// released, or held by another process or an earlier Client with
		// the same id: a hold is never adopted). ErrNotHeld changes
		// nothing: whatever Redis keeps for the owner is left to its lease
		// (it is not renewed).
		return s.fail(l.Name, fmt.Errorf("%sowner %s holds nothing through this Client: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	}
	r.req.Count = cur - 1
	if handed, err := r.handoff(hk); handed {
		return err
	}
	r.stay()
	r.req.Sync = l.C.pipe.NewSyncIn(&r.req.sync)
	h := l.C.holds.beginRelease(hk, r.req.Count)
	sent := time.Now()
	remaining, err := r.send()
	if err == nil && remaining < 0 && r.req.Sync.SyncErr() != nil {
		// "Not held" from a server whose replicas did not acknowledge: it
		// may be an old primary that a split brain left serving (a pooled
		// connection to it), which never had the hold. That answer is no
		// proof that the hold is gone: the release failed, and the hold
		// stays in Redis until its lease ends.
		err = fmt.Errorf("the server that answered \"not held\" did not reach its replicas (an old primary?): %w", r.req.Sync.Err)
	}
	h.released(r.req.Count, remaining, err, sent)
	r.stayed(remaining, err)
	if err != nil && r.req.Count == 0 && s.Line != "" {
		l.C.lines.wake(s.Line) // the release may not have published
	}
	switch {
	case err != nil:
		return s.fail(l.Name, fmt.Errorf("%s: %w", s.step("release"), err))
	case remaining < 0:
		return s.fail(l.Name, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	case r.req.Sync.SyncErr() != nil:
		return s.fail(l.Name, fmt.Errorf("%s on the primary, so it took effect and must not be retried: %w", s.step("released"), r.req.Sync.Err))
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
	tookOwnerless(l, s, *req, h) // a hold without a context owner: the name's (lock.go)
	if q := s.Queue; q != nil && req.Count == 1 && (req.Join || !chain.Start.IsZero()) {
		// the acquisition of a waiter, or a handoff, took the client out
		// of the queue
		l.C.lines.setQueued(q.Waiters, false)
	}
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

// The releaser's side of the in-process handoff (handoff.go).

// handoff hands the lock off, when the release r.req ends the owner's
// hold hk on a side with handoffs, to the caller at the head of the lock's
// local line, if the hold's chain allows it: it claims the caller's
// [Handoff] ([Lines.Claim]), then releases the hold and acquires the lock
// for that caller in one script; the caller's wait ends with the outcome
// ([Handoff.Finish]). It reports false, having sent nothing, when there is
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
	ho, next := l.C.lines.Claim(s.Line, chain, &l.C.owners)
	if ho == nil {
		return false, nil
	}
	to := *next
	h = l.C.holds.beginRelease(hk, 0)
	sent := time.Now()
	req.MarkUntil = l.C.reqs.MarkUntil(ctx, req.Deadline)
	req.Sync = l.C.pipe.NewSyncIn(&req.sync) // a handoff waits for the replicas too
	req.Runner = l.C.pipe.Runner(req.Sync)
	out, err := s.Handoff.RunHandoff(ctx, req, &to)
	result := HandoffResult{Sent: sent, Chain: chain}
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
	ho.Finish(result)
	switch {
	case err != nil:
		return true, s.fail(l.Name, fmt.Errorf("%s: %w", s.step("release"), err))
	case out.Remaining < 0:
		return true, s.fail(l.Name, fmt.Errorf("%sowner %s: %w", s.sideOf(), req.Owner, errs.ErrNotHeld))
	}
	return true, nil
}
