package ratelimit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/lua"
)

// errTooLate ends a wait that cannot succeed before ctx's deadline: the
// next chance is delay away (0: not known, behind other waiters).
type errTooLate struct{ delay time.Duration }

func (e errTooLate) Error() string {
	if e.delay <= 0 {
		return "cannot succeed before the context's deadline"
	}
	return fmt.Sprintf("next chance in %v, past the context's deadline", e.delay)
}

func (e errTooLate) Unwrap() error { return context.DeadlineExceeded }

// acquire waits in the local line (line.go) and asks Redis at the head.
// The whole call is one observed wait; a wait found hopeless counts as
// timed out (or busy), not as an error.
func (l *Limiter) acquire(ctx context.Context, n int64, forever bool, wait time.Duration) (ok bool, err error) {
	start := time.Now()
	ctx, obs := l.h.C.BeginWait(ctx, l.h.Kind, "", l.h.Name, forever, wait)
	defer func() {
		if errors.As(err, new(errTooLate)) {
			obs.End(false, nil)
		} else {
			obs.End(ok, err)
		}
	}()
	a := &acquisition{l: l, n: n, cut: !forever && wait > 0}
	a.bound, a.ctxBound = waitBound(ctx, start, forever, wait)
	w := join(lineKey{l.h.C, l.h.Name}, a.bound, !forever && wait == 0)
	if w == nil {
		return false, nil
	}
	defer w.leave()
	if ok, err := w.await(ctx); !ok || err != nil {
		if err == nil && a.ctxBound {
			err = errTooLate{}
		}
		return false, l.wrap(err)
	}
	ok, err = a.head(ctx, w)
	return ok, l.wrap(err)
}

// waitBound is when a wait that started at start ends: after wait, unless
// forever, or at ctx's deadline when that comes first (ctxBound). Zero
// means never.
func waitBound(ctx context.Context, start time.Time, forever bool, wait time.Duration) (bound time.Time, ctxBound bool) {
	if !forever {
		bound = start.Add(wait)
	}
	if d, has := ctx.Deadline(); has && (bound.IsZero() || d.Before(bound)) {
		bound, ctxBound = d, true
	}
	return bound, ctxBound
}

// acquisition is one acquire call of n permits once its waiter is at the
// head of the line.
type acquisition struct {
	l        *Limiter
	n        int64
	bound    time.Time // when the wait ends (waitBound); zero: never
	ctxBound bool      // bound is ctx's deadline
	// cut: TryAcquire with a wait, whose requests end at bound (see try).
	cut bool
	// answered: Redis answered an attempt of this wait ("not yet"). A
	// request the end of the wait cut reports "not granted" only then,
	// else an error: an outage is no "busy".
	answered bool
}

// head asks Redis for the permits as the head of the line (w) until they
// are granted or Redis fails; between attempts it sleeps the delay Redis
// gives, or until a Release of this Client. A next chance past the bound
// ends it at once: not granted, and an errTooLate when the bound is ctx's
// deadline.
func (a *acquisition) head(ctx context.Context, w *waiter) (bool, error) {
	for {
		// Taken before asking: a Release after this point wakes the
		// sleep below, even one that lands before the sleep starts.
		kicked := w.kicked()
		ok, delay, err := a.try(ctx)
		if ok || err != nil {
			return ok, err
		}
		next := time.Now().Add(delay)
		w.notBefore(next)
		if !a.bound.IsZero() && next.After(a.bound) {
			if a.ctxBound {
				return false, errTooLate{delay}
			}
			return false, nil
		}
		if err := a.sleep(ctx, delay, kicked); err != nil {
			return false, err
		}
	}
}

// sleep waits for delay, or until kicked is closed by a Release of this
// Client. It fails with ctx's cause when ctx ends, and with errs.ErrClosed
// when the Client closes.
func (a *acquisition) sleep(ctx context.Context, delay time.Duration, kicked <-chan struct{}) error {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-kicked: // a Release of this Client
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-a.l.h.C.Background().Closing():
		return errs.ErrClosed
	}
	return nil
}

// try makes one acquisition attempt: granted, or the delay Redis gives
// until the permits could be.
func (a *acquisition) try(ctx context.Context) (bool, time.Duration, error) {
	l, n := a.l, a.n
	if err := ctx.Err(); err != nil {
		return false, 0, context.Cause(ctx) // nothing sent, nothing to undo
	}
	var random [16]byte
	_, _ = rand.Read(random[:])
	reqKey, deadline := l.requestKey(), l.h.C.Requests().Deadline(ctx)
	k := l.stateKeys()
	rctx := ctx
	if a.cut && !a.ctxBound {
		// The wait bounds the request too: a slow or unreachable Redis
		// does not keep TryAcquire past it (within go-redis's reach: a
		// stalled read is cut only with ContextTimeoutEnabled).
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, a.bound)
		defer cancel()
	}
	ws := l.h.C.Pipeline().NewSync()
	r, err := lua.RateAcquireArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
		ClientValue: k.clientValue, ClientPermits: k.clientPermits, Clients: k.clients,
		Request: reqKey, N: n, Deadline: deadline, Random: string(random[:]),
		ClientID: l.h.C.ID()}.Run(rctx, l.h.C.Pipeline().Runner(ws))
	if err == nil && r.Code == lua.RateAcquireGranted && ws.SyncErr() != nil {
		// Granted on the primary only: a failover may lose the grant and
		// admit more than the rate, and the old primary of a split brain
		// grants beside the promoted one. Undone below, not believed.
		err = ws.SyncErr()
	}
	if err != nil {
		if errs.MayHaveRun(err) {
			l.undo(n, reqKey, deadline, string(random[:]))
		}
		if rctx.Err() != nil && ctx.Err() == nil && a.answered {
			return false, 0, nil // the wait ran out during the request: undone, not granted
		}
		if rctx.Err() != nil && ctx.Err() == nil {
			return false, 0, fmt.Errorf("acquire: no answer from Redis within the wait: %w", err)
		}
		return false, 0, fmt.Errorf("acquire: %w", err)
	}
	a.answered = true
	return a.outcome(r)
}

// outcome is what an acquisition attempt's reply r means: granted, the
// delay until the permits could be, or the error.
func (a *acquisition) outcome(r lua.RateAcquireReply) (bool, time.Duration, error) {
	l, n := a.l, a.n
	switch r.Code {
	case lua.RateAcquireGranted:
		if l.granted != nil {
			l.granted(r.Value, n)
		}
		return true, 0, nil
	case lua.RateAcquireShort:
		return false, time.Duration(max(r.Value, 1)) * time.Millisecond, nil
	case lua.RateAcquireCancelled: // cancelled by an undo: the caller has gone
		return false, 0, fmt.Errorf("acquire: %w", context.Canceled)
	case lua.RateAcquireNoRate:
		return false, 0, ErrNotInitialized
	case lua.RateAcquireExceedsRate:
		return false, 0, fmt.Errorf("%d permits, rate %d: %w", n, r.Value, ErrExceedsRate)
	}
	return false, 0, fmt.Errorf("acquire: unexpected reply %+v", r)
}
