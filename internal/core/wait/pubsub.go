package wait

import (
	"context"
	"errors"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/pubsub"
)

// PubSub waits on a channel where releases are published:
//
//  1. try; on success or error return at once;
//  2. subscribe to the channel and wait for Redis to confirm it;
//  3. try again (a release between 1 and 2 published to nobody);
//  4. wait for a message, the attempt's retry hint (capped by the client's
//     re-check interval: messages can be lost), the end of the wait, ctx or
//     Close; then go to 3.
//
// An error in 3 ends the wait, except a transient one (a connection lost
// or refused, a node failing over: see transient): the attempt is made
// again after a pause growing from 20 ms to 1 s, for as long as the wait
// lasts, as a Cluster failover or a reconnect re-checks every waiter. The
// first attempt's error (1) is returned at once. The subscription is
// closed before Wait returns.
type PubSub struct {
	Channel string        // where releases are published
	Wake    pubsub.Policy // how many local waiters one message wakes
}

func (p *PubSub) wait(ctx context.Context, w *Waits, b Bound, a Attempt) (bool, error) {
	l := &loop{w: w, a: a, channel: p.Channel, deadline: b.deadline()}
	sub, done, ok, err := l.firstTry(ctx, p, b)
	if done {
		return ok, err
	}
	defer sub.Close()
	return l.run(ctx, sub, true, false)
}

// Turn is a caller's place in a client's local line (core's line.Turn): it
// hands the line's subscription from one head to the next.
type Turn interface {
	// TakeSub returns the subscription handed to the turn by the caller
	// ahead of it (nil if none); the caller owns it from then on.
	TakeSub() *pubsub.Waiter
	// Hand gives the turn the subscription to pass on when it leaves the
	// line (nil: none).
	Hand(w *pubsub.Waiter)
}

// Lined is PubSub for the head of a client's local line (Turn). The
// channel stays subscribed from one head of the line to the next: the wait
// uses the subscription the head before it handed on (no UNSUBSCRIBE and
// SUBSCRIBE between them, and no release unseen), waits on it after every
// failed try, and hands it to the turn when it ends instead of closing it.
// With Handoff, a releaser in this client may end the wait by handing the
// caller what it waits for during the pauses between attempts.
type Lined struct {
	PubSub
	Turn    Turn
	Handoff Acceptor // nil: the caller cannot be handed the lock
}

func (ln *Lined) wait(ctx context.Context, w *Waits, b Bound, a Attempt) (ok bool, err error) {
	if acc := ln.Handoff; acc != nil {
		defer func() {
			if acc.Withdraw() && !ok {
				ok, err = true, nil // handed the lock as the wait ended
			}
		}()
	}
	var sub *pubsub.Waiter
	defer func() { ln.Turn.Hand(sub) }()
	l := &loop{w: w, a: a, acc: ln.Handoff, channel: ln.Channel, deadline: b.deadline()}
	if sub = ln.Turn.TakeSub(); sub != nil {
		return l.run(ctx, sub, false, b.single())
	}
	var done bool
	if sub, done, ok, err = l.firstTry(ctx, &ln.PubSub, b); done {
		return ok, err
	}
	return l.run(ctx, sub, true, false)
}

// Acceptor is a waiter's side of in-process handoffs (core's acceptor).
type Acceptor interface {
	// BeginTry reports whether the waiter may ask Redis now, and marks it
	// as doing so (EndTry ends the mark): false once a releaser has
	// claimed the waiter (Take), and, unless force, while a caller of
	// this client holds what it waits for (whose release hands it on or
	// publishes).
	BeginTry(force bool) bool
	EndTry()
	// Handed is closed when a releaser has finished a handoff to the
	// waiter (nil when none can come).
	Handed() <-chan struct{}
	// Take takes the outcome of a handoff a releaser claimed, waiting for
	// it, and reports whether the waiter now holds what it waits for
	// (false too when none was claimed).
	Take() bool
	// Withdraw ends the waiter's readiness when its wait ends, taking the
	// outcome of a handoff claimed at that moment: it reports whether the
	// waiter holds what it waited for after all.
	Withdraw() bool
}

// loop is one pub/sub wait under way: its attempt, its acceptor (nil:
// none), its channel and deadline (zero: none), and its transient
// failures.
type loop struct {
	w        *Waits
	a        Attempt
	acc      Acceptor
	channel  string
	deadline time.Time
	failed   transientErrors
}

// firstTry is a wait's start without a subscription handed to it: a try,
// then, unless it settled the wait (done), a subscription to the channel,
// which it returns confirmed.
func (l *loop) firstTry(ctx context.Context, p *PubSub, b Bound) (sub *pubsub.Waiter, done, ok bool, err error) {
	ok, _, err = l.tryOrTake(ctx, false)
	if ok || err != nil || b.single() {
		return nil, true, ok, err
	}
	subCtx := ctx
	if !l.deadline.IsZero() {
		var cancel context.CancelFunc
		subCtx, cancel = context.WithDeadline(ctx, l.deadline)
		defer cancel()
	}
	if sub, err = l.w.mux.Subscribe(subCtx, p.Channel, p.Wake); err != nil {
		ok, err = l.subscribeFailed(ctx, err)
		return nil, true, ok, err
	}
	return sub, false, false, nil
}

// run tries, then sleeps on sub until a message, the retry hint, the end
// of the wait, ctx or Close, and again. force makes the first try in any
// case (a release published before the subscription took effect reached
// nobody); single ends the wait after it.
func (l *loop) run(ctx context.Context, sub *pubsub.Waiter, force, single bool) (bool, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ok, retry, err := l.tryOrTake(ctx, force)
		force = false
		if err != nil && l.absorb(ctx, err) {
			// Once waiting, an attempt that failed on the way to Redis
			// (a connection lost, a node failing over) is made again
			// later, as a lost message is re-checked: the wait goes on.
			retry, err, force = l.failed.pause, nil, true
		} else if err == nil {
			l.failed = transientErrors{} // Redis answered
		}
		if ok || err != nil || single {
			return ok, err
		}
		d, more := l.w.pause(l.deadline, retry)
		if !more {
			return false, l.failed.last // the wait ran out: its last failure, if any
		}
		timer.Reset(d) // Go ≥ 1.23 timers: Reset needs no draining
		ok, msg, err := l.sleep(ctx, sub, timer)
		if ok || err != nil {
			return ok, err
		}
		// A message says a release took place: try, even while this
		// client still counts the released hold as its own (HeldHere);
		// so does a pause after a transient failure (set above), which
		// the timer ended.
		force = force || msg
	}
}

// absorb reports whether err, an attempt's error while ctx lasts, is
// transient, and logs it then.
func (l *loop) absorb(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !l.failed.absorb(err) {
		return false
	}
	l.w.log.Debug("redisync: an attempt during a wait failed; trying again", "channel", l.channel, "err", err)
	return true
}

// tryOrTake runs one attempt; with an acceptor, only when it allows one
// (BeginTry(force)), and otherwise takes the outcome of a handoff claimed
// meanwhile, if any.
func (l *loop) tryOrTake(ctx context.Context, force bool) (bool, time.Duration, error) {
	a := l.acc
	if a == nil {
		return l.w.try(ctx, l.a)
	}
	if !a.BeginTry(force) {
		if a.Take() {
			return true, 0, nil
		}
		// Not handed (a release that was no handoff woke the waiter),
		// or nothing came: one more look, which may allow a try now.
		if !a.BeginTry(force) {
			return false, 0, nil
		}
	}
	defer a.EndTry()
	return l.w.try(ctx, l.a)
}

// sleep is one pause: until a message (msg), the timer, ctx or Close.
// With an acceptor, a releaser of this client may hand the caller what it
// waits for meanwhile: then it returns ok.
func (l *loop) sleep(ctx context.Context, sub *pubsub.Waiter, timer *time.Timer) (ok, msg bool, err error) {
	var handed <-chan struct{}
	if l.acc != nil {
		handed = l.acc.Handed()
	}
	select {
	case <-sub.C():
		return false, true, nil
	case <-timer.C:
	case <-handed:
		return l.acc.Take(), false, nil
	case <-ctx.Done():
		return false, false, errs.CtxError(ctx)
	case <-l.w.closing:
		return false, false, errs.ErrClosed
	}
	return false, false, nil
}

// subscribeFailed is the answer when the subscription failed: ctx or
// Close ended it, or the wait ran out meanwhile (then one last try), or
// the error.
func (l *loop) subscribeFailed(ctx context.Context, err error) (bool, error) {
	switch {
	case ctx.Err() != nil:
		return false, errs.CtxError(ctx)
	case errors.Is(err, pubsub.ErrClosed):
		return false, errs.ErrClosed
	case !l.deadline.IsZero() && !time.Now().Before(l.deadline):
		ok, _, err := l.tryOrTake(ctx, true)
		return ok, err
	}
	return false, err
}
