package request

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Undo of an acquisition whose reply was lost.
//
// An acquisition whose reply never came (the caller's ctx ended while the
// request was on its way, the connection broke) may have taken place, or
// may still take place later: a request held up in the network is applied
// whenever it reaches Redis before its deadline (Deadline). Its
// caller got an error, so what it may have taken must be given back: the
// primitive sends an undo, which gives back what the acquisition took if
// it ran, and marks it cancelled if it has not, so that a late copy does
// nothing.
//
// The undo must reach Redis, however long the network that lost the reply
// stays bad. So Undo re-sends it (the same request: it applies once) in
// the background until Redis answers it, for as long as it can still
// matter (until: after that, what the acquisition took has come back by
// itself, or the undo can no longer tell whether it ran), and through
// Close for at most bg.CloseGrace. The caller waits for the first answer for
// at most UndoWait, so that in the common case (a cancelled ctx, Redis
// reachable) what was taken is back when its error returns. An undo that
// never got an answer is logged as a warning and counted
// (Stats.UndosFailed).

// UndoWait is how long the caller of a failed acquisition waits for its
// undo before returning its error; the undo goes on in the background.
const UndoWait = time.Second

// Undo runs the undo of an acquisition whose reply was lost until Redis
// answers it (as Resend decides), or until the time until has passed
// (zero: no bound but Close's grace, and an hour, completeMax). newSend
// makes the undo request (a
// request key and a deadline of its own) and returns what sends it: the
// same request is re-sent while Redis does not answer, and a new one is
// made when Redis refused the last as late (REDISYNC_LATE: it reached
// Redis after its own deadline, held up as the acquisition was), for as
// long as the undo can matter. Undo waits for the outcome at most
// UndoWait, then returns and lets it go on in the background. what and
// args label the warning logged when the undo fails; every failed undo is
// counted (Stats.UndosFailed).
func (r *Requests) Undo(until time.Time, what string, newSend func(ctx context.Context) func() error, args ...any) {
	r.UndoThen(until, nil, what, newSend, args...)
}

// UndoThen is Undo, calling then (when not nil) once the undo is over,
// whether it got an answer or not (the client closed before it started
// included).
func (r *Requests) UndoThen(until time.Time, then func(), what string, newSend func(ctx context.Context) func() error, args ...any) {
	r.UndoAnswered(until, then, nil, what, newSend, args...)
}

// UndoAnswered is UndoThen for an undo that is over only once the replicas
// acknowledge it (its send fails until they do, and it is re-sent): the
// caller waits, at most UndoWait, for the undo to be over or for answered
// (when not nil) to close, which its send does once the primary has run
// it. What was taken is then back on the primary when the caller's error
// returns, as with any undo, while the undo goes on in the background
// until the replicas have it too.
func (r *Requests) UndoAnswered(until time.Time, then func(), answered <-chan struct{}, what string,
	newSend func(ctx context.Context) func() error, args ...any) {
	done := r.inBackground(until, then, r.undoFailed, "undo an interrupted acquisition", what, args,
		func(ctx context.Context) error {
			for {
				err := r.ResendUntil(ctx, until, newSend(ctx))
				if !errs.RefusedLate(err) || ctx.Err() != nil || (!until.IsZero() && !time.Now().Before(until)) {
					return err
				}
			}
		})
	if done == nil {
		return
	}
	if answered == nil {
		AwaitUndo(done, UndoWait)
		return
	}
	t := time.NewTimer(UndoWait)
	defer t.Stop()
	select {
	case <-done:
	case <-answered:
	case <-t.C:
	}
}

// AwaitUndo waits for an undo to finish (done closed), at most d; a nil
// done (no undo started) is not waited for.
func AwaitUndo(done <-chan struct{}, d time.Duration) {
	if done == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// ResendUntil is Resend with a bound of its own instead of the request's
// lifetime: it re-sends until Redis answers, ctx ends, or until has passed
// (zero: only ctx bounds it).
func (r *Requests) ResendUntil(ctx context.Context, until time.Time, send func() error) error {
	pause := 20 * time.Millisecond
	for {
		err := send()
		if err == nil || (errs.IsReply(err) && !errs.NotRun(err)) || ctx.Err() != nil ||
			(!until.IsZero() && time.Now().Add(pause).After(until)) {
			return err
		}
		if !waitCtx(ctx, pause) {
			return err
		}
		pause = min(pause*2, time.Second)
	}
}

// RecordEnd returns the local time until which the record of a request
// with the given deadline (Deadline, by the server's clock) lives:
// an undo that reaches Redis later cannot tell whether the request ran.
func (r *Requests) RecordEnd(deadline int64) time.Time {
	now := time.Now()
	return time.UnixMilli(deadline).Add(-r.serverOffset(now) + RecordSlack)
}

// RecordSlack is how long a request's record outlives its deadline
// (lua/prelude_request.lua, record), less a margin for the error in the
// measured clock offset.
const RecordSlack = 900 * time.Millisecond
