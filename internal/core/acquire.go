package core

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
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
				err = s.fail(l.Name, err)
			}
			return false, err
		}
	}
	// Past the gate: the caller's acquisition (its attempts' base on the
	// heap, where the attempts and the side's Waiting find it), in the
	// local line (acquisition.inLine), then in Redis (acquisition.wait).
	// The whole call, from start, takes at most within unless forever.
	a := &acquisition{lock: l, side: s, base: l.baseRequest(s, token, own), end: cutAt(forever, within, start)}
	if s.Line != "" && !a.ownerHolds() {
		ok, err = a.inLine(ctx, forever, within, start)
	} else {
		var v verdict
		v, err = a.wait(ctx, nil, bound(forever, within, start))
		ok = v == acquired
	}
	if !ok && !own {
		l.gate.Leave(s.Shared)
	}
	if err != nil {
		return false, s.fail(l.Name, err)
	}
	return ok, nil
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
		// waits (the gate), so a handoff gives it a fresh hold. One that
		// waits behind others is ready for it at once; the head of the
		// line when it first sleeps ([acquisition.handed]).
		a.turn = t
		t.AcceptHandoffs(&a.handoff)
		if t.Waits() {
			a.handoff.Open(a.handoffRequest())
		}
	}
	if ok, err := t.Await(ctx, forever, bound(forever, within, start).Wait); !ok || err != nil {
		if a.accepting() && a.withdraw() {
			return true, nil // handed the lock as the wait ended
		}
		return false, err
	}
	v, err := a.wait(ctx, t, bound(forever, within, start))
	if v == acquired && !t.parks() {
		// Taken from Redis, maybe before other processes' waiters woken by
		// the same release: this client's subscription moves to the end
		// of the channel's subscribers (Redis delivers in subscription
		// order), so that the next release reaches it last, and the
		// processes take turns. (A queued wait's subscription is to the
		// Client's own channel, which the queue's order serves: it is
		// kept, [parking.park].)
		t.passOn(nil, nil)
	}
	return v == acquired || v == handedOff, err
}

// ownerHolds reports whether the owner of a.base holds the lock in this
// client: its field's hold, or its own field's (Field differs from Owner
// on an rwlock's write side, whose owner may hold read holds under its own
// name). A fresh hold's base has no owner yet, and holds nothing.
func (a *acquisition) ownerHolds() bool {
	base, hs := &a.base, a.lock.C.holds
	if base.Owner == "" {
		return false
	}
	return hs.Count(HoldKey{Key: base.Name, Field: base.Field}) > 0 ||
		(base.Field != base.Owner && hs.Count(HoldKey{Key: base.Name, Field: base.Owner}) > 0)
}

// wait runs the acquisition's attempts, within b, as its side's waiters
// wait: spinning, or on the lock's channel; with turn (a caller at the
// head of the client's local line), on the subscription passed on along
// the line. It returns what the wait came to: acquired, handed off,
// missed (the wait ran out) or cut off (the end of the wait cut an
// attempt), or an error. When the wait ends without the lock, the side's
// GiveUp (a fair lock's queue entry) cleans what the attempts left, on a
// detached context; in the background when an attempt was cut off (Redis
// is slow: the call does not wait for it). Close waits for that clean-up,
// so that a process exiting after Close leaves no queue entry behind.
func (a *acquisition) wait(ctx context.Context, turn *Turn, b Bound) (v verdict, err error) {
	ws := a.side.Scripts.Waiting(&a.base)
	if ws.GiveUp != nil {
		c := a.lock.C
		if !c.bg.Track() {
			return missed, errs.ErrClosed
		}
		defer c.bg.Untrack()
		defer func() {
			if v != acquired && v != handedOff {
				giveUp(ctx, c.bg, ws.GiveUp, v == cutOff)
			}
		}()
	}
	l := &loop{w: a.lock.C.Waits(), acq: a, deadline: b.deadline()}
	if ws.Spin != nil {
		return l.spin(ctx, ws.Spin)
	}
	l.channel = ws.PubSub.Channel
	if turn == nil {
		return l.pubsub(ctx, ws.PubSub, nil, b)
	}
	if a.accepting() {
		defer func() {
			if v != acquired && a.withdraw() {
				v, err = handedOff, nil // handed the lock as the wait ended
			}
		}()
	}
	return l.pubsub(ctx, ws.PubSub, turn, b)
}

// giveUp runs g after a wait that ended without success, as background
// work of the client (work): on a detached context, in the background
// when an attempt was cut off.
func giveUp(ctx context.Context, work *bg.Group, g GiveUpper, cut bool) {
	if cut {
		work.Finish(bg.ReleaseTimeout, g.GiveUp)
		return
	}
	gctx, cancel := work.Detached(ctx)
	defer cancel()
	g.GiveUp(gctx)
}

// bound is what is left of a wait of at most within (unless forever) that
// began at start.
func bound(forever bool, within time.Duration, start time.Time) Bound {
	if forever {
		return Bound{Forever: true}
	}
	return Bound{Wait: max(within-time.Since(start), 0)}
}

// cutAt is when the requests of a wait of at most within (unless
// forever) that began at start are cut: zero, never, for a wait until ctx
// ends and for a single attempt (wait 0: one request, bounded by ctx and
// go-redis).
func cutAt(forever bool, within time.Duration, start time.Time) time.Time {
	if forever || within <= 0 {
		return time.Time{}
	}
	return start.Add(within)
}
