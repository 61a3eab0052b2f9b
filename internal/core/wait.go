package core

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/pubsub"
)

// Attempt is one try at what a waiter waits for.
type Attempt interface {
	// Try reports success, and when not successful how long until the
	// condition may change by itself (a holder's remaining lease, the
	// next permit expiry); retry ≤ 0 means unknown.
	Try(ctx context.Context) (ok bool, retry time.Duration, err error)
}

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

// Strategy is how a waiter spends the pauses between its attempts: PubSub,
// Lined or Spin.
type Strategy interface {
	// wait runs attempts of a, pausing between them, within b.
	wait(ctx context.Context, w *Waits, b Bound, a Attempt) (bool, error)
}

// Waits is one client's waiting machinery: what every wait of the client
// needs from it. It does no I/O of its own but the subscriptions.
type Waits struct {
	client  *Client
	mux     *pubsub.Mux
	closing <-chan struct{}
	recheck time.Duration
	log     *slog.Logger
}

// newWaits returns the waits of a client: client checks before every attempt,
// mux subscribes, closing is closed when the client closes (waits end with
// ErrClosed), recheck caps a waiter's sleep (a message may be lost), log
// takes debug records.
func newWaits(client *Client, mux *pubsub.Mux, closing <-chan struct{}, recheck time.Duration, log *slog.Logger) *Waits {
	return &Waits{client: client, mux: mux, closing: closing, recheck: recheck, log: log}
}

// Until runs attempts of a until one succeeds, one fails, or b runs out,
// spending the pauses as s says. It returns (true, nil) on success,
// (false, nil) when the wait ran out (with the last transient error
// instead, if attempts were failing then), and an error wrapping ctx.Err()
// when ctx ended first (ErrClosed when the client closed). It leaves no
// subscription behind (a Lined wait hands it to its line) and starts no
// goroutine.
func (w *Waits) Until(ctx context.Context, s Strategy, b Bound, a Attempt) (bool, error) {
	return s.wait(ctx, w, b, a)
}

// try runs one attempt, turning errors caused by ctx into ctx errors.
func (w *Waits) try(ctx context.Context, a Attempt) (bool, time.Duration, error) {
	if err := w.client.Check(); err != nil {
		return false, 0, err
	}
	ok, retry, err := a.Try(ctx)
	if err != nil && ctx.Err() != nil {
		return false, 0, errs.CtxError(ctx)
	}
	return ok, retry, err
}

// pause returns how long a waiter sleeps before its next try: the attempt's
// retry hint, capped by the re-check interval and the end of the wait
// (deadline; zero: none); more is false when the wait has run out.
func (w *Waits) pause(deadline time.Time, retry time.Duration) (d time.Duration, more bool) {
	d = w.recheck
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

// AttemptFunc is a function used as an Attempt (a semaphore's or a latch's
// try), as http.HandlerFunc is a handler.
type AttemptFunc func(ctx context.Context) (ok bool, retry time.Duration, err error)

// Try calls f.
func (f AttemptFunc) Try(ctx context.Context) (bool, time.Duration, error) { return f(ctx) }

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

// Lined is PubSub for the head of a client's local line (Turn). The
// channel stays subscribed from one head of the line to the next: the wait
// uses the subscription the head before it handed on (no UNSUBSCRIBE and
// SUBSCRIBE between them, and no release unseen), waits on it after every
// failed try, and hands it to the turn when it ends instead of closing it.
// With Handoff, a releaser in this client may end the wait by handing the
// caller what it waits for during the pauses between attempts.
type Lined struct {
	PubSub
	Turn    *Turn
	Handoff *acceptor // nil: the caller cannot be handed the lock
}

func (ln *Lined) wait(ctx context.Context, w *Waits, b Bound, a Attempt) (ok bool, err error) {
	if acc := ln.Handoff; acc != nil {
		defer func() {
			if acc.withdraw() && !ok {
				ok, err = true, nil // handed the lock as the wait ended
			}
		}()
	}
	var sub *pubsub.Waiter
	defer func() { ln.Turn.passOn(sub) }()
	l := &loop{w: w, a: a, acc: ln.Handoff, channel: ln.Channel, deadline: b.deadline()}
	if sub = ln.Turn.passedOn(); sub != nil {
		return l.run(ctx, sub, false, b.single())
	}
	var done bool
	if sub, done, ok, err = l.firstTry(ctx, &ln.PubSub, b); done {
		return ok, err
	}
	return l.run(ctx, sub, true, false)
}

// loop is one pub/sub wait under way: its attempt, its acceptor (nil:
// none), its channel and deadline (zero: none), and its transient
// failures.
type loop struct {
	w        *Waits
	a        Attempt
	acc      *acceptor
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
		// client still counts the released hold as its own ([Lines.heldHere]);
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
// ([acceptor.beginTry]), and otherwise takes the outcome of a handoff claimed
// meanwhile, if any.
func (l *loop) tryOrTake(ctx context.Context, force bool) (bool, time.Duration, error) {
	a := l.acc
	if a == nil {
		return l.w.try(ctx, l.a)
	}
	if !a.beginTry(force) {
		if a.takeHandoff() {
			return true, 0, nil
		}
		// Not handed (a release that was no handoff woke the waiter),
		// or nothing came: one more look, which may allow a try now.
		if !a.beginTry(force) {
			return false, 0, nil
		}
	}
	defer a.endTry()
	return l.w.try(ctx, l.a)
}

// sleep is one pause: until a message (msg), the timer, ctx or Close.
// With an acceptor, a releaser of this client may hand the caller what it
// waits for meanwhile: then it returns ok.
func (l *loop) sleep(ctx context.Context, sub *pubsub.Waiter, timer *time.Timer) (ok, msg bool, err error) {
	var handed <-chan struct{}
	if l.acc != nil {
		handed = l.acc.handoffDone()
	}
	select {
	case <-sub.C():
		return false, true, nil
	case <-timer.C:
	case <-handed:
		return l.acc.takeHandoff(), false, nil
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

// Spin waits without pub/sub: no subscription, a pause between attempts
// that starts at Min and doubles up to Max; each pause is drawn at random
// from its upper half.
type Spin struct {
	Min, Max time.Duration
}

func (s *Spin) wait(ctx context.Context, w *Waits, b Bound, a Attempt) (bool, error) {
	deadline := b.deadline()
	pause := s.Min
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ok, _, err := w.try(ctx, a)
		if ok || err != nil {
			return ok, err
		}
		d := pause/2 + rand.N(pause/2+1)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false, nil
			}
			d = min(d, left)
		}
		pause = min(pause*2, s.Max)
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false, errs.CtxError(ctx)
		case <-w.closing:
			return false, errs.ErrClosed
		}
	}
}

// transientErrors keeps track of a wait's attempts that failed on the way
// to Redis (transient): the last such error, and the pause before the next
// attempt, which grows from 20 ms to 1 s while they go on failing.
type transientErrors struct {
	last  error
	pause time.Duration
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
