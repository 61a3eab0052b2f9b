package wait

import (
	"context"
	"log/slog"
	"time"

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

// Checker reports the error every attempt must return before it sends
// anything (core.Client.Check: an invalid or closed client).
type Checker interface {
	Check() error
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
	client  Checker
	mux     *pubsub.Mux
	closing <-chan struct{}
	recheck time.Duration
	log     *slog.Logger
}

// New returns the waits of a client: client checks before every attempt,
// mux subscribes, closing is closed when the client closes (waits end with
// ErrClosed), recheck caps a waiter's sleep (a message may be lost), log
// takes debug records.
func New(client Checker, mux *pubsub.Mux, closing <-chan struct{}, recheck time.Duration, log *slog.Logger) *Waits {
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
