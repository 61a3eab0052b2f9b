package request

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Completion of a release whose reply was lost.
//
// A release of a semaphore's permits gives back what nothing else gives
// back: a counted semaphore's permits, or an expirable permit taken with
// no lease, stay taken for good when their release is lost. Release
// re-sends the same request while its caller's (detached) context allows
// (Resend); when that ends without an answer, its caller gets an error,
// but the release is still wanted, so CompleteRelease goes on with it in
// the background until Redis answers:
//
//   - a request is re-sent, the very same (it applies once), for as long
//     as Redis can still tell whether it ran: until its record's end
//     (RecordEnd of its deadline);
//   - a request Redis refused as late (REDISYNC_LATE) within that time did
//     not run and never will (every later copy is refused too): a new
//     request (a request key and a deadline of its own) is made and sent;
//   - a release that is idempotent by itself (an expirable permit's, named
//     by its random id: once released, no other acquisition can hold that
//     id) is made anew whenever its last request's window has passed,
//     however that window ended.
//
// A counted release whose request's window passed with no answer at all (a
// partition longer than the request's lifetime) cannot be completed: it
// may have run, and a new one would give its permits twice. It is logged
// as a warning and counted (Stats.ReleasesFailed), as is one still under
// way when Close's grace runs out.

// CompleteRelease goes on in the background with a release whose reply was
// lost, as the comment above says. newSend makes a release request and
// returns what sends it and the end of its record (RecordEnd of its
// deadline); the first request CompleteRelease makes must be the one the
// caller sent (same request key and deadline), as it may still be on its
// way. idempotent says whether a new request may be made however the last
// one ended. until bounds the whole (the end of an expirable permit's
// lease, after which it is back anyway); zero: no bound but Close's grace.
// what and args label the warning logged when the release fails.
func (r *Requests) CompleteRelease(until time.Time, idempotent bool, what string,
	newSend func(ctx context.Context) (send func() error, end time.Time), args ...any) {
	r.CompleteReleaseThen(until, idempotent, nil, what, newSend, args...)
}

// CompleteReleaseThen is CompleteRelease, calling then (when not nil) once
// the completion is over, whether Redis answered or not (the client closed
// before it started included).
func (r *Requests) CompleteReleaseThen(until time.Time, idempotent bool, then func(), what string,
	newSend func(ctx context.Context) (send func() error, end time.Time), args ...any) {
	r.inBackground(until, then, r.releaseFailed, "complete a release whose reply was lost", what, args,
		func(ctx context.Context) error { return r.completeRelease(ctx, until, idempotent, newSend) })
}

// inBackground runs work in the background (bg.Group.Finish), for as long as
// until allows (zero: completeMax) and through Close for its grace, then
// calls then (when set). When work fails, or the client closed before it
// could start, it counts one in failed and logs a warning that it could
// not do job (what and args label it). It returns a channel closed when
// work is over, nil when it did not start.
func (r *Requests) inBackground(until time.Time, then func(), failed *atomic.Uint64, job, what string, args []any,
	work func(ctx context.Context) error) <-chan struct{} {
	done := make(chan struct{})
	timeout := completeMax
	if !until.IsZero() {
		timeout = max(time.Until(until), 0)
	}
	started := r.bg.Finish(timeout, func(ctx context.Context) {
		defer close(done)
		if then != nil {
			defer then()
		}
		if err := work(ctx); err != nil {
			failed.Add(1)
			r.log.Warn("redisync: could not "+job+": "+what, append(args, "err", err)...)
		}
	})
	if !started {
		if then != nil {
			then()
		}
		failed.Add(1)
		r.log.Warn("redisync: could not "+job+" (client closed): "+what, args...)
		return nil
	}
	return done
}

// completeMax bounds a release completion that has no bound of its own
// (counted permits, expirable permits without a lease): an outage longer
// than that gives up on it. Close's grace bounds it too.
const completeMax = time.Hour

// completeRelease is CompleteRelease's loop; it returns nil once Redis
// answered a request (or an expirable permit's lease has ended), else the
// last error.
func (r *Requests) completeRelease(ctx context.Context, until time.Time, idempotent bool,
	newSend func(ctx context.Context) (func() error, time.Time)) error {
	for {
		send, end := newSend(ctx)
		if !until.IsZero() && until.Before(end) {
			end = until
		}
		err := r.ResendUntil(ctx, end, send)
		switch {
		case !errs.MayHaveRun(err):
			return nil // answered: applied, or refused for good (a reply error)
		case ctx.Err() != nil:
			return err
		case !until.IsZero() && !time.Now().Before(until):
			return nil // the lease has ended: the permit is back by itself
		case errs.RefusedLate(err) && (end.IsZero() || time.Now().Before(end)):
			continue // did not run and never will: a new request
		case idempotent:
			if !waitCtx(ctx, time.Second) {
				return err
			}
			continue
		default:
			return err // may have run: a new one could release twice
		}
	}
}

// waitCtx waits d or until ctx ends; it reports whether d passed.
func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
