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

// One attempt: the acquisition's request to Redis, made by the lock's wait
// (acquire.go, the loop in wait.go) for the owner of the acquisition's
// base, holding the owner's lock.

// verdict is what one attempt, or a whole wait, came to.
type verdict uint8

const (
	missed    verdict = iota // not acquired (a wait: it ran out)
	acquired                 // acquired from Redis
	handedOff                // a releaser of this client handed the lock off to the caller
	cutOff                   // the end of the wait cut an attempt on its way: not acquired
)

// acquisition is one caller's acquisition of side on lock, past the gate,
// in one allocation: the base of its attempts' requests, the end of its
// wait (zero: none), whether it made an attempt yet, and, when it accepts
// handoffs, its acceptor. Its methods are the call's steps: inLine and
// wait (acquire.go), whose loop (wait.go) makes the attempts, and one
// attempt, here: the request to Redis for the owner of the base, holding
// the owner's lock (attempt, asOwner, prepare), and the undo of one whose
// reply was lost (interrupted).
type acquisition struct {
	lock      *Lock
	side      *Side
	base      Request
	end       time.Time
	attempted bool
	acceptor  acceptor // its turn is set when the caller accepts handoffs
}

// accepting reports whether the caller accepts handoffs.
func (a *acquisition) accepting() bool { return a.acceptor.turn != nil }

// attempt is one attempt of the acquisition in a wait, for the owner of
// a.base (for a fresh hold, a new owner per attempt), cut at the end of
// the wait. When the caller accepts handoffs, it is made only when the
// acceptor lets it ask Redis ([acceptor.beginAsking]; force asks even
// while the lock is held here), and otherwise the caller takes the
// outcome of a handoff claimed meanwhile, if any (handedOff). No attempt
// is made once the wait has ended, but the first: a wait that ended
// before its first attempt (in the local line, or on a slow machine)
// makes one, uncut, as a single attempt does. An error that ctx caused is
// ctx's.
func (a *acquisition) attempt(ctx context.Context, force bool) (verdict, time.Duration, error) {
	if a.accepting() {
		acc := &a.acceptor
		if !acc.beginAsking(force) {
			if acc.takeOffered() {
				return handedOff, 0, nil
			}
			// Not handed (a release that was no handoff woke the waiter),
			// or nothing came: one more look, which may allow an attempt now.
			if !acc.beginAsking(force) {
				return missed, 0, nil
			}
		}
		defer acc.endAsking()
	}
	if err := a.lock.C.Check(); err != nil {
		return missed, 0, err
	}
	end := a.end
	if !end.IsZero() && !time.Now().Before(end) {
		if a.attempted {
			return missed, 0, nil
		}
		end = time.Time{}
	}
	a.attempted = true
	v, retry, err := a.asOwner(ctx, end, a.lock.withFreshOwner(ctx, a.side, a.base))
	if err != nil && ctx.Err() != nil {
		return missed, 0, errs.CtxError(ctx)
	}
	return v, retry, err
}

// asOwner is the attempt for the owner of base, holding the owner's lock
// ([ownerLocks]) throughout, and after a lost reply through the undo
// ([acquisition.interrupted]). The owner's lock and the acquisition are
// cut at end (zero: never), the end of the wait: when that, not ctx, cut
// them, the attempt is cut off, and an acquisition on its way is undone
// in the background.
func (a *acquisition) asOwner(ctx context.Context, end time.Time, base Request) (verdict, time.Duration, error) {
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
		if wasCut(rctx, ctx) {
			return cutOff, 0, nil
		}
		return missed, 0, err
	}
	undoing := false
	defer func() {
		if !undoing {
			c.owners.unlock(hk, ol)
		}
	}()
	req := new(Request) // the scripts take it by pointer: one on the heap, filled in place
	for {
		a.prepare(rctx, req, base, hk)
		sent := time.Now() // Redis starts the lease after this
		out, err := a.side.Scripts.RunAcquire(rctx, req)
		if err == nil && out.Acquired && req.Sync.SyncErr() != nil {
			// Taken on the primary, not acknowledged by its replicas: a
			// failover could lose it. It is undone before the error
			// returns (for as long as the undo's bound allows).
			err = req.Sync.Err
		}
		switch {
		case err != nil:
			cut := wasCut(rctx, ctx)
			undoing = a.interrupted(*req, hk, ol, err, !cut)
			if cut {
				return cutOff, 0, nil // the wait ended
			}
			return missed, 0, fmt.Errorf("%s: %w", a.side.step("acquire"), err)
		case out.Err != nil:
			return missed, 0, out.Err
		case out.Lost && req.Count > 1:
			c.holds.End(hk, fmt.Errorf("%w: a reentrant acquisition found the hold gone from Redis", errs.ErrLockLost))
			continue // try afresh, as a new hold
		case !out.Acquired:
			return missed, out.Retry, nil
		}
		a.lock.record(a.side, req, hk, sent, out.Fence, Chain{})
		return acquired, 0, nil
	}
}

// prepare makes *req the acquisition by the owner of base, whose hold is
// hk, ready to send on ctx: a new hold (count 1), or a re-entry of its
// live hold (count + 1), which keeps its fencing token: the script records
// it instead of taking a new one; its deadline (a fresh hold's has its own
// already) and its runner. req is filled in place: its Sync points into
// it.
func (a *acquisition) prepare(ctx context.Context, req *Request, base Request, hk HoldKey) {
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
	if !req.Fresh {
		req.Deadline = l.C.reqs.Deadline(ctx)
	}
	req.Runner = l.C.replicas.Runner(req.Sync)
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
