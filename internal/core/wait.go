package core

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/pubsub"
)

// Attempt is one try at what a waiter waits for. It reports success, and
// when not successful how long until the condition may change by itself (a
// holder's remaining lease, the next permit expiry); retry ≤ 0 means unknown.
type Attempt func(ctx context.Context) (ok bool, retry time.Duration, err error)

// Keeper takes a wait's subscription when the wait ends (WaitSpec.Keep).
type Keeper interface {
	Hand(w *pubsub.Waiter)
}

// WaitSpec describes one blocking wait.
type WaitSpec struct {
	Channel string        // where releases are published
	Wake    pubsub.Policy // how many local waiters one message wakes
	// Spin, when set, waits without pub/sub: no subscription, a pause
	// between attempts that doubles from Spin.Min to Spin.Max, with jitter.
	Spin *Backoff
	// GiveUp, when set, runs (on a detached context) when the wait ends
	// without success after at least one attempt: to remove what the
	// attempts left behind (a fair lock's queue entry). Close waits for
	// it.
	GiveUp func(ctx context.Context)
	// Forever: wait until ctx is done. Otherwise wait at most Wait; Wait 0
	// makes a single attempt without subscribing.
	Forever bool
	Wait    time.Duration
	Try     Attempt
	// Sub, when set, is a subscription to Channel that has stayed
	// registered since before this wait began (handed over by the caller
	// ahead in a local line): Wait uses it instead of subscribing, so no
	// release can have gone unseen, and waits on it after every failed try.
	Sub *pubsub.Waiter
	// Keep, when set, takes the wait's subscription when the wait ends
	// (nil if it never subscribed) instead of Wait closing it: to hand it
	// to the next caller in a local line. Keep must close it eventually.
	// An interface (a *Turn), where a method value would cost an
	// allocation per wait.
	Keep Keeper
	// Handoff, when set, lets a releaser in this client end the wait by
	// handing the caller what it waits for (handoff.go) during the pauses
	// between attempts.
	Handoff Acceptor
}

// Acceptor is a waiter's side of in-process handoffs.
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

// Wait runs the waiting algorithm every redisync primitive shares:
//
//  1. try; on success or error return at once;
//  2. subscribe to the channel and wait for Redis to confirm it (with
//     s.Sub, already subscribed: skip 1 and 2);
//  3. try again (a release between 1 and 2 published to nobody);
//  4. wait for a message, the attempt's retry hint (capped by the client's
//     re-check interval: messages can be lost), the end of the wait, ctx or
//     Close; then go to 3.
//
// An error in 3 ends the wait, except a transient one (a connection lost
// or refused, a node failing over: see transient): the attempt is made
// again after a pause growing from 20 ms to 1 s, for as long as the wait
// lasts, as a Cluster failover or a reconnect re-checks every waiter. The
// first attempt's error (1) is returned at once.
//
// It returns (true, nil) on success, (false, nil) when the wait ran out
// (with the last transient error instead, if attempts were failing then),
// and an error wrapping ctx.Err() when ctx ended first. The subscription is
// released before returning (or given to s.Keep); no goroutine is started.
func (c *Client) Wait(ctx context.Context, s WaitSpec) (ok bool, err error) {
	if s.GiveUp != nil {
		// Close waits for the give-up (a fair-lock queue entry left), so
		// that a process exiting after Close leaves no entry behind.
		if !c.track() {
			return false, errs.ErrClosed
		}
		defer c.untrack()
		defer func() {
			if !ok {
				gctx, cancel := c.DetachedContext(ctx)
				defer cancel()
				s.GiveUp(gctx)
			}
		}()
	}
	if a := s.Handoff; a != nil {
		defer func() {
			if a.Withdraw() && !ok {
				ok, err = true, nil
			}
		}()
	}
	if s.Spin != nil {
		return c.spin(ctx, s)
	}
	var w *pubsub.Waiter
	if s.Keep != nil {
		defer func() { s.Keep.Hand(w) }()
	}
	start := time.Now()
	var deadline time.Time
	if !s.Forever {
		deadline = start.Add(s.Wait)
	}
	if w = s.Sub; w == nil {
		var done bool
		if w, done, ok, err = c.firstTry(ctx, s, deadline); done {
			return ok, err
		}
	}
	if s.Keep == nil {
		defer w.Close()
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// A release published before the subscription took effect reached
	// nobody: the first try after subscribing is made in any case.
	force := s.Sub == nil
	var failed transientErrors
	for {
		ok, retry, err := c.tryOrTake(ctx, s, force)
		force = false
		if err == nil {
			failed = transientErrors{} // Redis answered
		} else if ctx.Err() == nil && failed.absorb(err) {
			// Once waiting, an attempt that failed on the way to Redis
			// (a connection lost, a node failing over) is made again
			// later, as a lost message is re-checked: the wait goes on.
			c.log.Debug("redisync: an attempt during a wait failed; trying again", "channel", s.Channel, "err", err)
			retry, err, force = failed.pause, nil, true
		}
		if ok || err != nil || (s.Sub != nil && !s.Forever && s.Wait <= 0) {
			return ok, err
		}
		d, more := c.pause(s, deadline, retry)
		if !more {
			return false, failed.last // the wait ran out: its last failure, if any
		}
		timer.Reset(d) // Go ≥ 1.23 timers: Reset needs no draining
		ok, msg, err := c.sleep(ctx, s.Handoff, w, timer)
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

// firstTry is Wait's start without a subscription handed to it: a try,
// then, unless it settled the wait (done), a subscription to the channel,
// which it returns confirmed.
func (c *Client) firstTry(ctx context.Context, s WaitSpec, deadline time.Time) (w *pubsub.Waiter, done, ok bool, err error) {
	ok, _, err = c.tryOrTake(ctx, s, false)
	if ok || err != nil || (!s.Forever && s.Wait <= 0) {
		return nil, true, ok, err
	}
	subCtx := ctx
	if !s.Forever {
		var cancel context.CancelFunc
		subCtx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if w, err = c.mux.Subscribe(subCtx, s.Channel, s.Wake); err != nil {
		ok, err = c.subscribeFailed(ctx, s, deadline, err)
		return nil, true, ok, err
	}
	return w, false, false, nil
}

// tryOrTake runs one attempt; with an acceptor, only when it allows one
// (BeginTry(force)), and otherwise takes the outcome of a handoff claimed
// meanwhile, if any.
func (c *Client) tryOrTake(ctx context.Context, s WaitSpec, force bool) (bool, time.Duration, error) {
	a := s.Handoff
	if a == nil {
		return c.try(ctx, s.Try)
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
	return c.try(ctx, s.Try)
}

// sleep is one pause of Wait: until a message (msg), the timer, ctx or
// Close. With an acceptor, a releaser of this client may hand the caller
// what it waits for meanwhile: then it returns ok.
func (c *Client) sleep(ctx context.Context, a Acceptor, w *pubsub.Waiter, timer *time.Timer) (ok, msg bool, err error) {
	var handed <-chan struct{}
	if a != nil {
		handed = a.Handed()
	}
	select {
	case <-w.C():
		return false, true, nil
	case <-timer.C:
	case <-handed:
		return a.Take(), false, nil
	case <-ctx.Done():
		return false, false, errs.CtxError(ctx)
	case <-c.closing:
		return false, false, errs.ErrClosed
	}
	return false, false, nil
}

// subscribeFailed is Wait's answer when its subscription failed: ctx or
// Close ended it, or the wait ran out meanwhile (then one last try), or the
// error.
func (c *Client) subscribeFailed(ctx context.Context, s WaitSpec, deadline time.Time, err error) (bool, error) {
	switch {
	case ctx.Err() != nil:
		return false, errs.CtxError(ctx)
	case errors.Is(err, pubsub.ErrClosed):
		return false, errs.ErrClosed
	case !s.Forever && !time.Now().Before(deadline):
		ok, _, err := c.tryOrTake(ctx, s, true)
		return ok, err
	}
	return false, err
}

// pause returns how long a waiter sleeps before its next try: the attempt's
// retry hint, capped by the re-check interval and the end of the wait; more
// is false when the wait has run out.
func (c *Client) pause(s WaitSpec, deadline time.Time, retry time.Duration) (d time.Duration, more bool) {
	d = c.opts.Recheck
	if retry > 0 && retry < d {
		d = retry
	}
	if !s.Forever {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, false
		}
		d = min(d, left)
	}
	return d, true
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
// reply by which Redis says it did not run the request (notRun: a node
// loading, a cluster failing over). Not ctx's errors, nor Close, nor an
// attempt's own answers (errs.ErrUpgrade, a script's error).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errs.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errs.IsReply(err) && errs.NotRun(err))
}

// Backoff is a spin wait's pause between attempts: it starts at Min and
// doubles up to Max; each pause is drawn at random from its upper half.
type Backoff struct {
	Min, Max time.Duration
}

// spin is Wait without pub/sub: attempts separated by a growing pause.
func (c *Client) spin(ctx context.Context, s WaitSpec) (bool, error) {
	var deadline time.Time
	if !s.Forever {
		deadline = time.Now().Add(s.Wait)
	}
	pause := s.Spin.Min
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ok, _, err := c.try(ctx, s.Try)
		if ok || err != nil {
			return ok, err
		}
		d := pause/2 + rand.N(pause/2+1)
		if !s.Forever {
			left := time.Until(deadline)
			if left <= 0 {
				return false, nil
			}
			d = min(d, left)
		}
		pause = min(pause*2, s.Spin.Max)
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false, errs.CtxError(ctx)
		case <-c.closing:
			return false, errs.ErrClosed
		}
	}
}

// try runs one attempt, turning errors caused by ctx into ctx errors.
func (c *Client) try(ctx context.Context, a Attempt) (bool, time.Duration, error) {
	if err := c.Check(); err != nil {
		return false, 0, err
	}
	ok, retry, err := a(ctx)
	if err != nil && ctx.Err() != nil {
		return false, 0, errs.CtxError(ctx)
	}
	return ok, retry, err
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
