package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// Limit is a GCRA limiter's rate: Rate events per Period on average, and at
// most Burst at once. The limiter counts in whole microseconds per event
// (rounded up), so rates above a million per second act as a million, and
// Burst times Period/Rate must stay below 2^50 µs (about 35 years).
type Limit struct {
	Rate   int64         // events per Period (≥ 1)
	Period time.Duration // e.g. time.Second (≥ 1ms)
	Burst  int64         // at most this many at once (≥ 1)
}

// emission returns the time one event takes from the budget, in whole
// microseconds rounded up (so the limiter never allows more than Limit
// says; at most a microsecond per event less).
func (l Limit) emission() int64 {
	ns := l.Period.Nanoseconds()
	us := ns / l.Rate / 1000
	if us*l.Rate*1000 < ns {
		us++
	}
	return max(us, 1)
}

// maxSpan bounds, in µs, the time a full burst spans: the script computes
// in Lua numbers (doubles) on epoch microseconds, exact up to 2^53.
const maxSpan = 1 << 50

// Result is what AllowN decided, with what HTTP's RateLimit-* and
// Retry-After headers need.
type Result struct {
	Allowed    int64         // events allowed by this call (0 or n)
	Remaining  int64         // events that could be allowed at once now
	RetryAfter time.Duration // when not allowed: when n could be; 0 when allowed
	ResetAfter time.Duration // until the limiter is back to a full burst
}

// GCRA is a distributed rate limiter using the generic cell rate algorithm:
// one Redis key per limiter, holding the theoretical arrival time (when the
// limiter is back to a full burst) in epoch microseconds by the Redis
// server's clock. Memory is O(1) whatever the rate, and the key expires
// when the limiter is idle and full. Over any window of length T, at most
// Burst + Rate·T/Period events are allowed, however many processes share
// it.
//
// A GCRA is a handle: creating one does no I/O, and it is safe for
// concurrent use.
type GCRA struct {
	h     core.Handle
	limit Limit
	// taken, when set (tests), is called with the server time (epoch µs)
	// and the events of every take that happens now.
	taken func(at, n int64)
}

// NewGCRA returns a handle on the GCRA limiter called name, whose Redis key
// is name. It does no I/O and never fails: an empty name or a bad limit
// (Rate or Burst below 1, Period below a millisecond) is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation. Every handle on one
// name must use the same limit.
func NewGCRA(c *redisync.Client, name string, limit Limit) *GCRA {
	g := &GCRA{h: core.NewHandle((*core.Client)(c), "gcra", name), limit: limit}
	g.h.OwnSlot = true // one key and its request records: any name works on a Cluster
	switch {
	case limit.Rate <= 0:
		g.h.OptErr = g.h.Invalid("rate %d, must be at least 1", limit.Rate)
	case limit.Period < time.Millisecond:
		g.h.OptErr = g.h.Invalid("period %v, must be at least 1ms", limit.Period)
	case limit.Burst <= 0:
		g.h.OptErr = g.h.Invalid("burst %d, must be at least 1", limit.Burst)
	case limit.Burst > maxSpan/limit.emission():
		g.h.OptErr = g.h.Invalid("burst %d of %v each spans more than 2^50µs", limit.Burst, time.Duration(limit.emission())*time.Microsecond)
	}
	return g
}

// Name returns the limiter's name, which is also its Redis key (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (g *GCRA) Name() string { return g.h.Given }

// Allow reports whether one event may happen now, and takes it if so.
//
// After a network error it may have taken its events: calling again is
// safe, and at worst limits more. See “Errors and retries” in [redisync].
func (g *GCRA) Allow(ctx context.Context) (bool, error) {
	r, err := g.AllowN(ctx, 1)
	return r.Allowed == 1, err
}

// AllowN takes n events (n ≥ 1) if they may all happen now, and none
// otherwise; the Result says which, and when to retry. n above Burst can
// never be allowed: AllowN then returns, as WaitN does, an error wrapping
// ErrExceedsRate and sends nothing (a Result with a RetryAfter would
// invite a retry that can never pass). AllowN keeps no request
// record (it costs what redis_rate's does): a call that go-redis re-sends
// after a lost reply may take its events twice, so the limiter then allows
// fewer events, never more.
//
// After a network error it may have taken its events: calling again is
// safe, and at worst limits more. See “Errors and retries” in [redisync].
func (g *GCRA) AllowN(ctx context.Context, n int64) (Result, error) {
	if err := g.checkN(ctx, n); err != nil {
		return Result{}, err
	}
	if n > g.limit.Burst {
		return Result{}, g.fail("allow", fmt.Errorf("%d events, burst %d: %w", n, g.limit.Burst, ErrExceedsRate))
	}
	ctx, obs := g.h.C.BeginWait(ctx, g.h.Kind, "", g.h.Name, false, 0)
	t, err := g.take(ctx, n, 0)
	obs.End(err == nil && t.ok, err)
	if err != nil {
		return Result{}, g.fail("allow", err)
	}
	r := Result{Remaining: t.remaining, ResetAfter: t.reset}
	if t.ok {
		r.Allowed = n
	} else {
		r.RetryAfter = t.delay
	}
	return r, nil
}

// Reservation is what Reserve took: n events at a time that may be in the
// future.
type Reservation struct {
	g     *GCRA
	ok    bool
	act   time.Time     // local time at which the events may happen
	actUS int64         // the same, epoch µs by the server's clock
	tat   string        // the TAT right after the reservation
	took  int64         // µs the reservation took
	mu    sync.Mutex    // guards done
	done  bool          // cancelled
	delay time.Duration // from the reservation to act
}

// OK reports whether anything was reserved: false when n was above Burst.
func (r *Reservation) OK() bool { return r.ok }

// Delay returns how long until the reserved events may happen, from now
// (0 when they may already), or -1 when nothing was reserved (OK is
// false).
func (r *Reservation) Delay() time.Duration {
	if !r.ok {
		return -1
	}
	return max(time.Until(r.act), 0)
}

// Cancel gives back what the reservation took, as far as no later
// reservation relies on it (x/time/rate's rule): nothing when its time has
// come already, nor when later reservations were made after it, for the
// part they took. It is idempotent, and runs even when ctx is already
// cancelled (on a detached context with a bounded timeout).
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (r *Reservation) Cancel(ctx context.Context) error {
	if !r.ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	g := r.g
	ctx, cancel := g.h.C.Background().Detached(ctx)
	defer cancel()
	cancelArgs := lua.GCRACancelArgs{Limiter: g.h.Name, Request: g.requestKey(), TAT: r.tat, Took: r.took,
		ActMicros: r.actUS, Deadline: g.h.C.Requests().Deadline(ctx)}
	err := g.h.C.Requests().Resend(ctx, func() error {
		_, err := cancelArgs.Run(ctx, g.h.C.Direct())
		return err
	})
	if err != nil {
		return g.fail("cancel", err)
	}
	r.done = true
	return nil
}

// Reserve takes the next n events (n ≥ 1) now, whenever they may happen:
// the Reservation says when (Delay). Cancel gives them back if the events
// will not happen. n above Burst reserves nothing (OK is false).
//
// After a network error it may have taken its events: calling again is
// safe, and at worst limits more. See “Errors and retries” in [redisync].
func (g *GCRA) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	if err := g.checkN(ctx, n); err != nil {
		return nil, err
	}
	if n > g.limit.Burst {
		return &Reservation{g: g}, nil
	}
	return g.reserve(ctx, n, -1)
}

func (g *GCRA) reserve(ctx context.Context, n, longest int64) (*Reservation, error) {
	t, err := g.take(ctx, n, longest)
	if err != nil {
		return nil, g.fail("reserve", err)
	}
	if !t.ok {
		return &Reservation{g: g, delay: t.delay}, nil
	}
	return &Reservation{g: g, ok: true, act: t.sent.Add(t.delay), actUS: t.now + t.delay.Microseconds(),
		tat: t.tat, took: n * g.limit.emission(), delay: t.delay}, nil
}

// Wait is WaitN(ctx, 1).
func (g *GCRA) Wait(ctx context.Context) error { return g.WaitN(ctx, 1) }

// WaitN takes n events (n ≥ 1) and sleeps until they may happen. If that
// time is past ctx's deadline, it reserves nothing and returns at once an
// error wrapping context.DeadlineExceeded; if ctx ends while it sleeps, it
// cancels its reservation (Reservation.Cancel) and returns an error
// wrapping ctx's error. n above Burst is ErrExceedsRate.
//
// After a network error it may have taken its events: calling again is
// safe, and at worst limits more. See “Errors and retries” in [redisync].
func (g *GCRA) WaitN(ctx context.Context, n int64) (err error) {
	if err := g.checkN(ctx, n); err != nil {
		return err
	}
	if n > g.limit.Burst {
		return g.fail("wait", fmt.Errorf("%d events, burst %d: %w", n, g.limit.Burst, ErrExceedsRate))
	}
	longest := int64(-1)
	if d, ok := ctx.Deadline(); ok {
		longest = max(time.Until(d).Microseconds(), 0)
	}
	ctx, obs := g.h.C.BeginWait(ctx, g.h.Kind, "", g.h.Name, true, 0)
	tooLate := false
	defer func() {
		if tooLate {
			obs.End(false, nil)
		} else {
			obs.End(err == nil, err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return g.fail("wait", context.Cause(ctx))
	}
	r, err := g.reserve(ctx, n, longest)
	if err != nil {
		return err
	}
	if !r.ok {
		tooLate = true
		return g.fail("wait", errTooLate{r.delay})
	}
	if r.delay <= 0 {
		return nil
	}
	t := time.NewTimer(time.Until(r.act))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		_ = r.Cancel(ctx)
		return g.fail("wait", context.Cause(ctx))
	}
}

// Reset brings the limiter back to a full burst (deletes its key). A key
// of another type is left as it is, and the error wraps
// redisync.ErrWrongType.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (g *GCRA) Reset(ctx context.Context) error {
	if err := g.h.Check(ctx); err != nil {
		return err
	}
	if _, err := (lua.GCRAResetArgs{Limiter: g.h.Name}).Run(ctx, g.h.C.Direct()); err != nil {
		return g.fail("reset", err)
	}
	return nil
}

// taken is gcra_take.lua's reply.
type taken struct {
	ok        bool
	delay     time.Duration // taken: until the events may happen; else: retry after
	remaining int64
	reset     time.Duration
	tat       string
	now       int64     // the server's clock, epoch µs
	sent      time.Time // local time the request was sent
}

// take runs gcra_take.lua: n events if they may happen within longest µs
// (0: now, -1: any time).
func (g *GCRA) take(ctx context.Context, n, longest int64) (taken, error) {
	sent := time.Now()
	// Allow (longest 0) is not recorded: a re-sent Allow may take twice,
	// which only limits more. A reservation is, since Cancel relies on
	// the TAT it returned.
	a := lua.GCRATakeArgs{Limiter: g.h.Name, Request: g.h.Name, EmissionMicros: g.limit.emission(),
		Burst: g.limit.Burst, N: n} // Allow: no request key (any key of the slot), deadline or record
	if longest != 0 {
		a.Request, a.LongestMicros, a.Deadline, a.Record = g.requestKey(), longest, g.h.C.Requests().Deadline(ctx), true
	}
	ws := g.h.C.Pipeline().NewSync()
	v, err := a.Run(ctx, g.h.C.Pipeline().Runner(ws))
	if err != nil {
		return taken{}, err
	}
	if v.Code == lua.GCRATakeTaken && ws.SyncErr() != nil {
		// Taken on the primary only: a failover may lose it and allow
		// more than the limit, and the old primary of a split brain
		// allows beside the promoted one. Not believed: the caller gets
		// the error, and what it took stays taken on that primary (it
		// only limits more).
		return taken{}, ws.SyncErr()
	}
	t := taken{ok: v.Code == lua.GCRATakeTaken, delay: time.Duration(v.Delay) * time.Microsecond,
		remaining: v.Remaining, reset: time.Duration(v.Reset) * time.Microsecond,
		tat: v.TAT, now: v.Now, sent: sent}
	if t.ok && t.delay == 0 && g.taken != nil {
		g.taken(t.now, n)
	}
	return t, nil
}

func (g *GCRA) checkN(ctx context.Context, n int64) error {
	if err := g.h.Check(ctx); err != nil {
		return err
	}
	if n <= 0 {
		return g.h.Invalid("%d events, must be at least 1", n)
	}
	return nil
}

func (g *GCRA) requestKey() string { return keys.Request(g.h.Name, g.h.C.Requests().ID()) }

func (g *GCRA) fail(op string, err error) error {
	return fmt.Errorf("%s %q: %s: %w", g.h.Kind, g.h.Name, op, errs.ReplyError(err))
}
