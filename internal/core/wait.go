package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/request"
	"github.com/redisync/redisync/pubsub"
)

// Attempt is one attempt at what a semaphore's or a latch's waiter waits
// for: it reports success, and when not successful how long until the
// condition may change by itself (the next permit expiry); retry ≤ 0
// means unknown. A lock's waiter makes its acquisition's attempts
// ([acquisition.attempt]) instead.
type Attempt func(ctx context.Context) (ok bool, retry time.Duration, err error)

// QueuedAttempt is an Attempt of a wait in a queue of waiting Clients
// ([PubSub].Queue; [Waits.UntilQueued]), a semaphore's: join says that the
// Client listens on its own channel, and the attempt joins the queue when
// it fails (lua/prelude_wake.lua); foreign, when it joined, says that the
// Client is the first in the queue, and so listens on the primitive's
// channel too, where releases that know nothing of the queue publish.
type QueuedAttempt func(ctx context.Context, join bool) (ok bool, retry time.Duration, foreign bool, err error)

// Bound is how long a wait lasts: until ctx ends (Forever), or at most
// Wait; Wait 0 makes a single attempt without subscribing.
type Bound struct {
	Forever bool
	Wait    time.Duration
}

// deadline returns when the wait ends (zero: never), counted from now.
func (b Bound) deadline() time.Time {
	if b.Forever {
		return time.Time{}
	}
	return time.Now().Add(b.Wait)
}

// single reports whether the wait is a single attempt.
func (b Bound) single() bool { return !b.Forever && b.Wait <= 0 }

// Waits is one client's waiting machinery: what every wait of the client
// needs from it (its checks before every attempt, its pub/sub multiplexer,
// its Close, which ends the waits with ErrClosed, its re-check interval,
// which caps a waiter's sleep as a message may be lost, and its logger). It
// does no I/O of its own but the subscriptions.
type Waits struct{ c *Client }

// Waits returns the client's waiting machinery: every wait of a primitive
// of the client runs there ([Waits.Until]).
func (c *Client) Waits() Waits { return Waits{c} }

// Until runs attempts (a semaphore's, a latch's) until one succeeds, one
// fails, or b runs out, waiting on p's channel between them. It returns
// (true, nil) on success, (false, nil) when the wait ran out (with the last
// transient error instead, if attempts were failing then), and an error
// wrapping ctx.Err() when ctx ended first (ErrClosed when the client
// closed). It leaves no subscription behind and starts no goroutine.
func (w Waits) Until(ctx context.Context, p *PubSub, b Bound, try Attempt) (bool, error) {
	l := &loop{w: w, try: try, channel: p.Channel, deadline: b.deadline()}
	v, err := l.pubsub(ctx, p, nil, b)
	return v == acquired, err
}

// UntilQueued is Until for a wait in p's queue of waiting Clients
// (p.Queue, which must be set): once the Client listens on its own
// channel, its attempts join the queue, and the Client leaves it when an
// attempt succeeds (the script does it) or the wait ends without (in the
// background). While an attempt says the Client is first in the queue
// (foreign), it listens on p.Channel too.
func (w Waits) UntilQueued(ctx context.Context, p *PubSub, b Bound, try QueuedAttempt) (bool, error) {
	l := &loop{w: w, qtry: try, channel: p.Channel, deadline: b.deadline()}
	v, err := l.pubsub(ctx, p, nil, b)
	return v == acquired, err
}

// pause returns how long a waiter sleeps before its next try: the attempt's
// retry hint, capped by the re-check interval and the end of the wait
// (deadline; zero: none); more is false when the wait has run out.
func (w Waits) pause(deadline time.Time, retry time.Duration) (d time.Duration, more bool) {
	d = w.c.opts.Recheck
	if retry > 0 && retry < d {
		d = retry
	}
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, false
		}
		d = min(d, left)
	}
	return d, true
}

// RetryAfterPTTL turns a holder's PTTL (milliseconds, from a script) into an
// Attempt's retry hint: a millisecond past it, because PTTL is rounded down
// and reads 0 during the last millisecond, when a retry at once would find
// the lock still held. A negative PTTL (no expiry, or no reading) gives no
// hint, so the client's re-check interval applies.
func RetryAfterPTTL(pttl int64) time.Duration {
	if pttl < 0 {
		return 0
	}
	return time.Duration(pttl+1) * time.Millisecond
}

// The lock's wait.
//
// An acquisition waits as its side says ([Scripts].Waiting): spinning, or
// on the lock's channel. A caller with a turn in the client's local line
// waits on the subscription the line passes on, and, when it accepts
// handoffs (its [Handoff]), may be handed the lock by a releaser of this
// client between its attempts.

// loop is one wait under way: its acquisition (acq), or else the attempt
// of a semaphore or a latch (try); its channel and deadline (zero: none),
// and its transient failures.
type loop struct {
	w   Waits
	acq *acquisition
	try Attempt
	// qtry, instead of try, is a queued wait's attempt ([Waits.UntilQueued]);
	// qjoin: its attempts join the queue; qforeign: the latest said the
	// Client is first in the queue (it listens on the channel too).
	qtry            QueuedAttempt
	qjoin, qforeign bool
	channel         string
	deadline        time.Time
	failed          transientErrors
	// turn, in a local line, is the caller's at its head: the callers
	// behind it learn how its attempts end ([Turn.Report]).
	turn *Turn
	// ps is the channel the wait is on (pubsub), nil for a spinning one.
	ps *PubSub
	// answered: Redis answered the latest attempt that reached it (the
	// primitive was seen taken). A wait whose last request the end of the
	// wait cut ([Cut]) reports "busy" only then, and an error otherwise:
	// an outage is no "busy".
	answered bool
}

// next makes the wait's next attempt: the acquisition's
// ([acquisition.attempt]; force asks Redis even while the lock is held
// here), or try (an error that ctx caused is ctx's). An attempt cut by
// the end of the wait ([Cut]) is cut off: with no error when Redis
// answered the attempt before it (the primitive was seen taken), else
// with the error (Redis did not answer within the whole wait, or its
// last answer was a failure).
func (l *loop) next(ctx context.Context, force bool) (verdict, time.Duration, error) {
	if l.turn != nil {
		l.turn.Asking()
	}
	v, retry, err := l.attempt(ctx, force)
	if l.turn != nil {
		var failed error // an answer (Redis's refusal included), or the caller gave up
		if err != nil && ctx.Err() == nil && (transient(err) || isCut(err)) {
			failed = err
		}
		l.turn.Report(failed)
	}
	switch {
	case err != nil && isCut(err):
		switch {
		case l.failed.last != nil:
			return cutOff, 0, fmt.Errorf("%w (and then: %w)", l.failed.last, err)
		case l.answered:
			return cutOff, 0, nil
		}
		return cutOff, 0, err
	case err == nil && v != cutOff:
		l.answered = true
	}
	return v, retry, err
}

// attempt is [loop.next]'s attempt.
func (l *loop) attempt(ctx context.Context, force bool) (verdict, time.Duration, error) {
	if l.acq != nil {
		return l.acq.attempt(ctx, force)
	}
	if err := l.w.c.Check(); err != nil {
		return missed, 0, err
	}
	var ok bool
	var retry time.Duration
	var err error
	if l.qtry != nil {
		ok, retry, err = l.queuedAttempt(ctx)
	} else {
		ok, retry, err = l.try(ctx)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return missed, 0, errs.CtxError(ctx)
	case ok:
		return acquired, retry, err
	}
	return missed, retry, err
}

// queuedAttempt makes a queued wait's attempt (qtry) and keeps the
// Client's place in the queue in step: queued after an attempt that joined
// and failed, out of it after one that succeeded (the script took it out).
func (l *loop) queuedAttempt(ctx context.Context) (bool, time.Duration, error) {
	ok, retry, foreign, err := l.qtry(ctx, l.qjoin)
	if err == nil && l.qjoin {
		l.qforeign = foreign && !ok
		l.w.c.lines.setQueued(l.ps.Queue.Waiters, !ok)
	}
	return ok, retry, err
}

// Cut marks err, the failure of an attempt's request that the end of its
// wait cut on its way (a wait that ran out while Redis had not
// answered), for the wait ([Waits.Until]): such an attempt is no answer.
// The wait reports "busy" (false, nil) only when Redis answered an attempt
// before it, and otherwise an error wrapping err: an outage is an error,
// never "busy".
func Cut(err error) error { return &cutError{err: err} }

// cutError is an attempt's request cut by the end of its wait ([Cut]).
type cutError struct{ err error }

// isCut reports whether err is, or wraps, a [Cut] error.
func isCut(err error) bool {
	var cut *cutError
	return errors.As(err, &cut)
}

func (e *cutError) Error() string {
	return "no answer from Redis within the wait: " + e.err.Error()
}

func (e *cutError) Unwrap() error { return e.err }

// pubsub waits on the channel p names where releases are published:
//
//  1. attempt; on success or error return at once;
//  2. subscribe to the channel and wait for Redis to confirm it;
//  3. attempt again (a release between 1 and 2 published to nobody);
//  4. wait for a message, the attempt's retry hint (capped by the client's
//     re-check interval: messages can be lost), a handoff, the end of the
//     wait, ctx or Close; then go to 3.
//
// An error in 3 ends the wait, except a transient one (a connection lost
// or refused, a node failing over: see transient): the attempt is made
// again after a pause growing from 20 ms to 1 s, for as long as the wait
// lasts, as a Cluster failover or a reconnect re-checks every waiter. The
// first attempt's error (1) is returned at once.
//
// With turn, the head of a client's local line: the channel stays
// subscribed from one head of the line to the next. The wait uses the
// subscription the head before it passed on (no UNSUBSCRIBE and SUBSCRIBE
// between them, and no release unseen) and starts at 3, and passes it on
// to the turn when it ends instead of closing it. Without, the
// subscription is closed before pubsub returns.
//
// With a queue ([PubSub].Queue), the subscription is to the Client's own
// channel, and an attempt made once it is confirmed joins the lock's queue
// of waiting Clients (lua/prelude_wake.lua), which the Client leaves when
// the subscription closes (nobody of this Client waits any more) or an
// acquisition succeeds; while the holder is foreign the subscription
// takes in the lock's channel too (run).
func (l *loop) pubsub(ctx context.Context, p *PubSub, turn *Turn, b Bound) (v verdict, err error) {
	var sub *pubsub.Waiter
	l.turn, l.ps = turn, p
	if turn != nil {
		defer func() { turn.passOn(sub, l.parker(sub, v, err)) }()
		if sub = turn.passedOn(); sub != nil {
			l.joining()
			return l.run(ctx, sub, false, b.single())
		}
	}
	if p.Queue != nil && !b.single() {
		if sub = l.w.c.parking.unpark(p.Queue.WakePrefix, l.w.c.id); sub != nil {
			// Listening already: the first attempt joins the queue.
			if turn == nil {
				defer func() { l.settle(sub, v, err) }()
			}
			l.joining()
			return l.run(ctx, sub, false, false)
		}
	}
	v, _, err = l.next(ctx, false)
	if v != missed || err != nil || b.single() {
		return v, err
	}
	subCtx := ctx
	if !l.deadline.IsZero() {
		var cancel context.CancelFunc
		subCtx, cancel = context.WithDeadline(ctx, l.deadline)
		defer cancel()
	}
	channel := p.Channel
	if p.Queue != nil {
		channel = p.Queue.WakePrefix + l.w.c.id
	}
	if sub, err = l.w.c.mux.Subscribe(subCtx, channel, p.Wake); err != nil {
		return l.subscribeFailed(ctx, err)
	}
	if p.Queue != nil {
		q := *p.Queue
		sub.OnClose(func() { waitEnded(l.w.c, q) })
		l.joining()
	}
	if turn == nil {
		defer func() { l.settle(sub, v, err) }()
	}
	return l.run(ctx, sub, true, false)
}

// parker returns how a queued wait that ended with v and err keeps its
// subscription when nobody of the Client waits any more
// ([parking.park]): nil (it is closed) unless the wait took what it
// waited for.
func (l *loop) parker(sub *pubsub.Waiter, v verdict, err error) func(*pubsub.Waiter) {
	if sub == nil || l.ps == nil || l.ps.Queue == nil || err != nil || (v != acquired && v != handedOff) {
		return nil
	}
	q, c := *l.ps.Queue, l.w.c
	channel := q.WakePrefix + c.id
	return func(w *pubsub.Waiter) { c.parking.park(channel, w, func() { waitEnded(c, q) }) }
}

// settle ends sub, the subscription of a wait without a turn that ended
// with v and err: parked ([loop.parker]) or closed.
func (l *loop) settle(sub *pubsub.Waiter, v verdict, err error) {
	if park := l.parker(sub, v, err); park != nil {
		park(sub)
		return
	}
	sub.Close()
}

// joining makes the wait's attempts join the lock's queue of waiting
// Clients from now on, when it has one: the Client listens on its own
// channel.
func (l *loop) joining() {
	if l.ps == nil || l.ps.Queue == nil {
		return
	}
	switch {
	case l.acq != nil:
		l.acq.join, l.acq.queue = true, l.ps.Queue
	case l.qtry != nil:
		l.qjoin = true
	}
}

// foreign reports whether the wait's latest attempt said the Client must
// listen on the channel too: a lock's found a holder the queue did not
// record, a semaphore's found the Client first in the queue.
func (l *loop) foreign() bool {
	if l.acq != nil {
		return l.acq.foreign
	}
	return l.qforeign
}

// listen makes sub, a queued wait's subscription, take in the lock's
// channel too while the latest attempt found a foreign holder
// ([Outcome].Foreign), and leave it otherwise. It reports whether it
// subscribed now: the next attempt is made at once (a release published
// before the subscription took effect reached nobody).
func (l *loop) listen(ctx context.Context, sub *pubsub.Waiter) bool {
	if (l.acq == nil && l.qtry == nil) || l.ps == nil || l.ps.Queue == nil {
		return false
	}
	switch along := sub.Along(); {
	case l.foreign() && !along:
		if !l.deadline.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, l.deadline)
			defer cancel()
		}
		if err := sub.Also(ctx, l.ps.Channel, l.ps.Wake); err != nil {
			// The wait goes on with its re-checks (at the holder's
			// expiry at the latest): a foreign release unheard is a
			// delay, not an error.
			l.w.c.log.Debug("redisync: listening on the lock's channel failed", "channel", l.ps.Channel, "err", err)
			return false
		}
		return true
	case !l.foreign() && along:
		sub.Drop()
	}
	return false
}

// run attempts, then sleeps on sub until a message, the retry hint, a
// handoff, the end of the wait, ctx or Close, and again. force makes the
// first attempt in any case (a release published before the subscription
// took effect reached nobody); single ends the wait after it.
func (l *loop) run(ctx context.Context, sub *pubsub.Waiter, force, single bool) (verdict, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		v, retry, err := l.next(ctx, force)
		force = false
		if err != nil && !single && l.absorb(ctx, err) {
			// Once waiting, an attempt that failed on the way to Redis
			// (a connection lost, a node failing over) is made again
			// later, as a lost message is re-checked: the wait goes on.
			retry, err, force = l.failed.pause, nil, true
		} else if err == nil {
			l.failed = transientErrors{} // Redis answered
		}
		if v != missed || err != nil || single {
			return v, err
		}
		if l.listen(ctx, sub) {
			force = true
			continue
		}
		d, more := l.w.pause(l.deadline, retry)
		if !more {
			return missed, l.failed.last // the wait ran out: its last failure, if any
		}
		timer.Reset(d) // Go ≥ 1.23 timers: Reset needs no draining
		v, msg, err := l.sleep(ctx, sub, timer)
		if v != missed || err != nil {
			return v, err
		}
		// A message says a release took place: attempt, even while this
		// client still counts the released hold as its own
		// ([Lines.heldHere]); so does a pause after a transient failure
		// (set above), which the timer ended.
		force = force || msg
	}
}

// absorb reports whether err, an attempt's error while ctx lasts, is
// transient, and logs it then.
func (l *loop) absorb(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !l.failed.absorb(err) {
		return false
	}
	l.w.c.log.Debug("redisync: an attempt during a wait failed; trying again", "channel", l.channel, "err", err)
	return true
}

// sleep is one pause: until a message (msg), the timer, ctx or Close.
// When the acquisition accepts handoffs, a releaser of this client may
// hand it the lock meanwhile: then it returns handedOff.
func (l *loop) sleep(ctx context.Context, sub *pubsub.Waiter, timer *time.Timer) (v verdict, msg bool, err error) {
	var offered <-chan struct{}
	if l.acq != nil && l.acq.accepting() {
		offered = l.acq.handed()
	}
	select {
	case <-sub.C():
		return missed, true, nil
	case <-timer.C:
	case <-offered:
		if l.acq.takeHanded() {
			return handedOff, false, nil
		}
	case <-ctx.Done():
		return missed, false, l.failed.with(errs.CtxError(ctx))
	case <-l.w.c.closing:
		return missed, false, errs.ErrClosed
	}
	return missed, false, nil
}

// subscribeFailed is the answer when the subscription failed: ctx or
// Close ended it, or the wait ran out meanwhile (then one last attempt),
// or the error.
func (l *loop) subscribeFailed(ctx context.Context, err error) (verdict, error) {
	switch {
	case ctx.Err() != nil:
		return missed, errs.CtxError(ctx)
	case errors.Is(err, pubsub.ErrClosed):
		return missed, errs.ErrClosed
	case !l.deadline.IsZero() && !time.Now().Before(l.deadline):
		v, _, err := l.next(ctx, true)
		return v, err
	}
	return missed, err
}

// spin is a wait without pub/sub (the spin lock's): attempts with a pause
// between them that starts at s.Min and doubles up to s.Max, each drawn at
// random from its upper half.
func (l *loop) spin(ctx context.Context, s *Spin) (verdict, error) {
	pause := s.Min
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		v, _, err := l.next(ctx, false)
		if v != missed || err != nil {
			return v, err
		}
		d := pause/2 + rand.N(pause/2+1)
		if !l.deadline.IsZero() {
			left := time.Until(l.deadline)
			if left <= 0 {
				return missed, nil
			}
			d = min(d, left)
		}
		pause = min(pause*2, s.Max)
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return missed, errs.CtxError(ctx)
		case <-l.w.c.closing:
			return missed, errs.ErrClosed
		}
	}
}

// One attempt: the acquisition's request to Redis, made by the loop above
// for the owner of the acquisition's base, holding the owner's lock.

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
// wait (acquire.go), whose loop (above) makes the attempts, and one
// attempt (here): the request to Redis for the owner of the base, holding
// the owner's lock (attempt, asOwner, prepare), and the undo of one whose
// reply was lost (interrupted).
type acquisition struct {
	lock      *Lock
	side      *Side
	base      Request
	end       time.Time
	attempted bool
	// turn is the caller's in a local line when it accepts handoffs
	// (handoff), nil otherwise.
	turn    *Turn
	handoff Handoff
	// join: the attempts join the lock's queue of waiting Clients
	// ([Request].Join); foreign: the latest attempt found the lock held
	// by a holder the queue did not record ([Outcome].Foreign).
	join, foreign bool
	// queue is the lock's queue of waiting Clients when the side's waits
	// queue (set with join).
	queue *Queue
}

// accepting reports whether the caller accepts handoffs.
func (a *acquisition) accepting() bool { return a.turn != nil }

// attempt is one attempt of the acquisition in a wait, for the owner of
// a.base (for a fresh hold, a new owner per attempt), cut at the end of
// the wait. When the caller accepts handoffs, it is made only when it may
// ask Redis ([acquisition.ask]; force asks even while the lock is held
// here), and otherwise the caller takes the
// outcome of a handoff claimed meanwhile, if any (handedOff). No attempt
// is made once the wait has ended, but the first: a wait that ended
// before its first attempt (in the local line, or on a slow machine)
// makes one, uncut, as a single attempt does. An error that ctx caused is
// ctx's.
func (a *acquisition) attempt(ctx context.Context, force bool) (verdict, time.Duration, error) {
	// Counted before the check below: Shutdown, which sets shutting
	// before it reads the count, either sees this attempt or makes it
	// fail the check.
	a.lock.C.attempts.Add(1)
	defer a.lock.C.attempts.Add(-1)
	if a.accepting() {
		if !a.ask(force) {
			if a.takeHanded() {
				return handedOff, 0, nil
			}
			// Not handed (a release that was no handoff woke the waiter),
			// or nothing came: one more look, which may allow an attempt now.
			if !a.ask(force) {
				return missed, 0, nil
			}
		}
		defer a.handoff.DoneAsking()
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
				return cutOff, 0, Cut(fmt.Errorf("%s: %w", a.side.step("acquire"), err)) // the wait ended
			}
			return missed, 0, fmt.Errorf("%s: %w", a.side.step("acquire"), err)
		case out.Err != nil:
			return missed, 0, out.Err
		case out.Lost && req.Count > 1:
			c.holds.End(hk, fmt.Errorf("%w: a reentrant acquisition found the hold gone from Redis", errs.ErrLockLost))
			continue // try afresh, as a new hold
		case !out.Acquired:
			return a.busy(out, req)
		}
		a.lock.record(a.side, req, hk, sent, out.Fence, Chain{})
		return acquired, 0, nil
	}
}

// busy answers an attempt req that found the lock taken (out): when the
// attempt joined the lock's queue, the client is queued, and listens on
// the lock's channel too while the holder is foreign (out.Foreign).
func (a *acquisition) busy(out Outcome, req *Request) (verdict, time.Duration, error) {
	a.foreign = out.Foreign
	if req.Join {
		a.lock.C.lines.setQueued(a.queue.Waiters, true)
	}
	return missed, out.Retry, nil
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
	req.Join = a.join
	l.setRequestKey(req)
	req.Sync = l.C.pipe.NewSyncIn(&req.sync)
	if !req.Fresh {
		req.Deadline = l.C.reqs.Deadline(ctx)
	}
	req.Runner = l.C.pipe.Runner(req.Sync)
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

// transientErrors keeps track of a wait's attempts that failed on the way
// to Redis (transient): the last such error, and the pause before the next
// attempt, which grows from 20 ms to 1 s while they go on failing.
type transientErrors struct {
	last  error
	pause time.Duration
}

// with returns err, the end of a wait by ctx, with the last failure
// that kept the wait's attempts from Redis, if they were failing then
// (errors.Is finds both).
func (f *transientErrors) with(err error) error {
	if f.last == nil {
		return err
	}
	return fmt.Errorf("%w (the attempts were failing: %w)", err, f.last)
}

// absorb reports whether err is transient; if so it records it and grows
// the pause. Any other error, or a success, is not absorbed (and a
// success clears nothing: the wait ends).
func (f *transientErrors) absorb(err error) bool {
	if !transient(err) {
		return false
	}
	f.last = err
	f.pause = min(max(2*f.pause, 20*time.Millisecond), time.Second)
	return true
}

// transient reports whether err, from an attempt, is a failure on the way
// to Redis that a later attempt may not meet: a network error (a
// connection refused, reset or timed out, the pool exhausted) or an error
// reply by which Redis says it did not run the request ([errs.NotRun]: a
// node loading, a cluster failing over). Not ctx's errors, nor Close, nor
// an attempt's own answers (ErrUpgrade, a script's error).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errs.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errs.IsReply(err) && errs.NotRun(err))
}

// The waiter's side of the in-process handoff (handoff.go): the caller,
// waiting in the lock's local line, may be handed the lock by a releaser
// of this client between its attempts.

// handoffRequest makes, on the caller's goroutine, the acquisition a
// releaser makes for it: a new fresh owner ([Lock.withFreshOwner]; its
// context is only the request deadline's, which uses no value of it),
// count 1, the lock's lease and fencing. An acquisition that never waits
// makes none: the owner costs an allocation (its request key), which
// rlock's TestLockAllocs counts.
func (a *acquisition) handoffRequest() *Request {
	l := a.lock
	req := l.withFreshOwner(context.Background(), a.side, a.base)
	req.Count = 1
	req.Lease = l.lease()
	req.Fencing = l.Fencing
	return &req
}

// ask reports whether the caller may ask Redis now ([Handoff.Ask]): not
// while a caller of this client holds the lock, unless force
// ([Lines.heldHere]: its release hands it off or publishes), nor once a
// releaser claimed the caller's handoff.
func (a *acquisition) ask(force bool) bool {
	if !force && a.lock.C.lines.heldHere(a.side.Line) {
		return false
	}
	return a.handoff.Ask()
}

// handed returns the channel the caller sleeps on for a handoff, opening
// its Handoff first when it is not yet.
func (a *acquisition) handed() <-chan struct{} {
	if !a.handoff.Opened() {
		a.handoff.Open(a.handoffRequest())
	}
	return a.handoff.Handed()
}

// takeHanded takes the outcome of a handoff a releaser claimed
// ([Handoff.take]) and reports whether the caller holds the lock now
// (accept).
func (a *acquisition) takeHanded() bool {
	res, req, ol, ok := a.handoff.take()
	return ok && a.accept(res, req, ol)
}

// withdraw ends the caller's readiness when its wait ends
// ([Handoff.withdraw]), and reports whether a handoff claimed at that
// moment gave it the lock after all.
func (a *acquisition) withdraw() bool {
	res, req, ol, ok := a.handoff.withdraw()
	return ok && a.accept(res, req, ol)
}

// accept takes the outcome res of a handoff, the acquisition req: the
// hold when the caller got the lock ([Lock.record]); an undo in the
// background when the reply was lost. It gives back the owner's lock ol
// that [Lines.Claim] took (nil: a wake-up, not a handoff).
func (a *acquisition) accept(res HandoffResult, req *Request, ol *ownerLock) bool {
	l, s := a.lock, a.side
	hk := HoldKey{Key: req.Name, Field: req.Field}
	unlock := func() {
		if ol != nil {
			l.C.owners.unlock(hk, ol)
		}
	}
	switch {
	case res.Unknown:
		if ok, _ := l.undo(s, *req, unlock); !ok {
			unlock()
		}
		return false
	case !res.Acquired:
		unlock()
		return false
	}
	l.record(s, req, hk, res.Sent, res.Fence, res.Chain)
	unlock()
	return true
}
