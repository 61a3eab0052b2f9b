package redisync

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/core"
)

// Observer receives a Client's events, for metrics, traces or logs. Every
// field is optional: a nil function is skipped. The module
// github.com/redisync/redisync/extra/redisyncotel turns these events into
// OpenTelemetry metrics and spans; the library itself imports no telemetry
// package.
//
// The functions run synchronously on the goroutine that caused the event (a
// caller's for waits, the watchdog's for renewals, the caller's, the
// watchdog's or a lease timer's for the end of a hold), so they must be
// fast, must not block, must be safe for concurrent use, and must not call
// back into redisync primitives. Client.Stats may be called from them.
type Observer struct {
	// WaitStart is called when an acquisition or a wait starts: Lock,
	// TryLock, RLock, TryRLock of every lock kind, Acquire and TryAcquire
	// of both semaphores and of a rate limiter, Wait and TryWait of a
	// latch, Allow, AllowN, Wait and WaitN of a GCRA limiter, once their
	// arguments are checked. For the rate limiters WaitEnd is the count
	// per limiter (WaitInfo.Name): WaitAcquired is allowed, WaitBusy and
	// WaitTimedOut denied (also a wait that returned at once because it
	// could not succeed before its bound), and the Duration of an
	// allowed call is how long it waited. The context it returns (for example one
	// carrying a span) is the one the call runs in from then on, and the
	// one WaitEnd gets; returning nil keeps ctx.
	WaitStart func(ctx context.Context, w WaitInfo) context.Context
	// WaitEnd is called when that call returns, with the context WaitStart
	// returned.
	WaitEnd func(ctx context.Context, w WaitEnd)
	// HoldEnd is called when a lock hold ends: released (its owner's hold
	// count went to 0) or lost. A hold starts when an owner's hold count
	// goes from 0 to 1; reentrant acquisitions extend it. Semaphore
	// permits are not holds.
	HoldEnd func(h HoldEnd)
	// RenewalTick is called after each round of the watchdog, which renews
	// every hold without a fixed lease every third of the watchdog timeout
	// (sooner after a failure).
	RenewalTick func(t RenewalTick)
	// Eviction is called once per primary whose maxmemory-policy can
	// evict the Client's keys: any policy but noeviction, since every key
	// redisync writes has a TTL. The Client reads the policy (INFO
	// memory, else CONFIG GET) on a connection of its own in the
	// background, when go-redis first connects to a primary (after a
	// Sentinel failover, the new one; on a Cluster, each node); a read
	// that fails changes nothing. Each also logs a warning and counts in
	// Stats.EvictingPrimaries. See docs/fencing.md.
	Eviction func(p EvictionPolicy)
	// Attach is called once by New with the new Client, before New
	// returns, so that the observer can read its gauges (Client.Stats). The
	// function it returns, if not nil, is called once by Close, after the
	// watchdog and the pub/sub connections have stopped.
	Attach func(c *Client) (detach func())
}

// WithObserver adds an observer of the Client's events. It may be given
// more than once: every observer receives every event, in the order given
// (WaitStart's contexts are chained). The default is no observer: then
// events cost two atomic additions per wait and nothing else.
func WithObserver(o Observer) Option {
	return func(opts *options) { opts.observers = append(opts.observers, o) }
}

// WaitResult says how an acquisition or wait ended.
type WaitResult int

// The results of an acquisition or wait.
const (
	// WaitAcquired: the lock or the permits were acquired; for a latch,
	// the latch was open.
	WaitAcquired WaitResult = WaitResult(core.WaitAcquired)
	// WaitBusy: a single attempt (TryX with wait 0) did not succeed.
	WaitBusy WaitResult = WaitResult(core.WaitBusy)
	// WaitTimedOut: a TryX wait ran out without success.
	WaitTimedOut WaitResult = WaitResult(core.WaitTimedOut)
	// WaitCancelled: the context ended first (cancelled or past its
	// deadline); the call returned an error wrapping ctx.Err().
	WaitCancelled WaitResult = WaitResult(core.WaitCancelled)
	// WaitError: any other error: Redis unreachable or answering with an
	// error, the Client closed, ErrUpgrade.
	WaitError WaitResult = WaitResult(core.WaitError)
)

// String returns the result as metrics label it: "acquired", "busy",
// "timed_out", "cancelled" or "error".
func (r WaitResult) String() string {
	switch r {
	case WaitAcquired:
		return "acquired"
	case WaitBusy:
		return "busy"
	case WaitTimedOut:
		return "timed_out"
	case WaitCancelled:
		return "cancelled"
	case WaitError:
		return "error"
	}
	return "unknown"
}

// WaitInfo describes an acquisition or wait when it starts.
type WaitInfo struct {
	// Primitive names the kind of primitive and, for a read-write lock,
	// the side: "rlock", "fair_lock", "spin_lock", "rwlock.read",
	// "rwlock.write", "semaphore", "expirable_semaphore", "countdown",
	// "rate_limiter", "gcra" (a handle's kind with spaces turned into
	// underscores).
	Primitive string
	// Name is the primitive's name (its Redis key).
	Name string
	// Forever is true for calls that wait until ctx ends (Lock, Acquire,
	// Wait); TryX calls wait at most Wait (0: a single attempt).
	Forever bool
	Wait    time.Duration
}

// WaitEnd describes an acquisition or wait when it returns.
type WaitEnd struct {
	WaitInfo
	Result   WaitResult
	Duration time.Duration // from WaitStart to the return
	Err      error         // the error returned, for WaitCancelled and WaitError; else nil
}

// HoldEnd describes the end of a lock hold.
type HoldEnd struct {
	Primitive string        // as in WaitInfo
	Name      string        // the lock's name
	Owner     string        // the owner's field in the lock's hash: "<client id>:<token>", with ":write" for a write hold
	Duration  time.Duration // from the acquisition that started the hold
	// Lost is true when the hold ended without being released: Err then
	// wraps ErrLockLost (renewal found it gone, no renewal succeeded within
	// the lease, its fixed lease ran out, it was force-unlocked, or the
	// Client was closed, or shut down without a release, while holding it).
	Lost bool
	// Shutdown is true when Client.Shutdown released the hold: it was
	// released, so Lost is false, but Err wraps ErrLockLost and ErrClosed,
	// as its owner sees it (the lock is no longer theirs). When both are
	// false, the owner released it and Err wraps ErrNotHeld.
	Shutdown bool
	Err      error
}

// EvictionPolicy names a primary whose maxmemory-policy can evict the
// Client's keys (Observer.Eviction).
type EvictionPolicy struct {
	Primary string // the primary's address, as go-redis dials it
	Policy  string // its maxmemory-policy, such as "allkeys-lru" or "volatile-ttl"
}

// RenewalTick describes one round of the watchdog.
type RenewalTick struct {
	Renewed int // holds whose lease was renewed
	// Failed counts holds whose renewal call failed with an error (Redis
	// unreachable, a timeout): they are tried again within a second, and
	// are lost once no renewal has succeeded for a whole lease.
	Failed int
	// Lost counts holds this round ended as lost (found gone from Redis,
	// or not renewed within their lease); each also gets a HoldEnd.
	Lost     int
	Duration time.Duration
}

// Stats are a Client's counters: cumulative counts since New, and gauges
// of the present. They are kept whether or not an observer is set.
type Stats struct {
	// Acquisitions and waits (as Observer.WaitStart lists them) by result.
	Acquired, Busy, TimedOut, Cancelled, Errors uint64
	// HoldsLost counts lock holds that ended without being released
	// (HoldEnd.Lost), Close included: an alert on it does not fire for a
	// clean Shutdown.
	HoldsLost uint64
	// HoldsReleasedAtShutdown counts lock holds Shutdown released in Redis
	// (HoldEnd.Shutdown), whatever their owner: not losses, though their
	// owners see ErrLockLost. A hold Shutdown could not release (its ctx
	// ended, Redis failed) is counted in HoldsLost instead.
	HoldsReleasedAtShutdown uint64
	// Renewals counts hold renewals that succeeded; RenewalFailures, hold
	// renewals whose call failed with an error (RenewalTick).
	Renewals, RenewalFailures uint64
	// UndosFailed counts undos of interrupted acquisitions that could not
	// be made: an acquisition whose reply was lost (its caller got an
	// error) is undone in the background, re-sent until Redis answers;
	// one that got no answer while it could still matter, or before
	// Close's grace ran out, is counted here and logged as a warning.
	// What such an acquisition took may stay taken: a lock or an
	// expirable permit until its lease ends, counted permits for good.
	UndosFailed uint64
	// ReleasesFailed counts semaphore releases whose reply was lost and
	// that could not be completed: a release whose caller got an error
	// goes on in the background until Redis answers; one whose outcome
	// Redis could no longer tell (a partition longer than the request's
	// lifetime, for counted permits), or still under way when Close's
	// grace ran out, is counted here and logged as a warning. Its permits
	// may stay taken: expirable ones until their lease ends, counted ones
	// for good.
	ReleasesFailed uint64
	// RenewalsNotReplicated counts hold renewals that the primary's
	// replicas did not acknowledge within WithReplicaSync's timeout (a
	// warning is logged): such a renewal extends nothing, since a failover
	// could bring back the older lease. Counted on every topology (on a
	// Cluster, per master).
	RenewalsNotReplicated uint64
	// HoldsLostUnreplicated counts holds lost because their acknowledged
	// lease ran out: a renewal ran on the primary but no renewal was
	// acknowledged by its replicas in time, so the hold ended (Done
	// closed, its context cancelled with a cause wrapping
	// ErrNotReplicated) before a promoted replica could let another owner
	// in. Each is also counted in HoldsLost.
	HoldsLostUnreplicated uint64
	// PubSubReconnects counts pub/sub connections replaced after a dead
	// ping, a lost connection or an error reply.
	PubSubReconnects uint64
	// EvictingPrimaries counts the primaries found with a maxmemory-policy
	// that can evict the Client's keys (Observer.Eviction; each also
	// logged once at Warn). Anything above 0 means that a lock or permit
	// may vanish while held: set maxmemory-policy noeviction.
	EvictingPrimaries uint64

	// Holds is the number of lock holds this Client has now.
	Holds int
	// Waiting is the number of acquisitions and waits in progress,
	// including callers queued behind others of the same Client.
	Waiting int
	// PubSubChannels is the number of channels subscribed for waiters now.
	PubSubChannels int
}

// Waits returns the number of acquisitions and waits that ended with r.
func (s Stats) Waits(r WaitResult) uint64 {
	switch r {
	case WaitAcquired:
		return s.Acquired
	case WaitBusy:
		return s.Busy
	case WaitTimedOut:
		return s.TimedOut
	case WaitCancelled:
		return s.Cancelled
	case WaitError:
		return s.Errors
	}
	return 0
}

// Stats returns a snapshot of the Client's counters. It needs no observer,
// sends nothing to Redis, and works after Close.
func (c *Client) Stats() Stats {
	s := c.inner().Stats()
	return Stats{
		Acquired:                s.Waits[core.WaitAcquired],
		Busy:                    s.Waits[core.WaitBusy],
		TimedOut:                s.Waits[core.WaitTimedOut],
		Cancelled:               s.Waits[core.WaitCancelled],
		Errors:                  s.Waits[core.WaitError],
		HoldsLost:               s.HoldsLost,
		HoldsReleasedAtShutdown: s.HoldsShutdown,
		Renewals:                s.Renewals,
		RenewalFailures:         s.RenewalFailures,
		UndosFailed:             s.UndosFailed,
		ReleasesFailed:          s.ReleasesFailed,
		RenewalsNotReplicated:   s.RenewalsNotReplicated,
		HoldsLostUnreplicated:   s.HoldsLostUnreplicated,
		PubSubReconnects:        s.PubSubReconnects,
		EvictingPrimaries:       s.EvictingPrimaries,
		Holds:                   s.Holds,
		Waiting:                 s.Waiting,
		PubSubChannels:          s.PubSubChannels,
	}
}

// hooks turns observers into the core's hooks; nil without observers. A
// hook no observer sets stays nil.
func hooks(obs []Observer) *core.Hooks {
	if len(obs) == 0 {
		return nil
	}
	return &core.Hooks{
		WaitStart:   waitStartHook(obs),
		WaitEnd:     waitEndHook(obs),
		HoldEnd:     holdEndHook(obs),
		RenewalTick: renewalTickHook(obs),
		Eviction:    evictionHook(obs),
	}
}

// waitStartHook calls the observers' WaitStart in order, each with the
// context the one before returned (a nil context keeps the one it got).
func waitStartHook(obs []Observer) func(context.Context, core.WaitInfo) context.Context {
	var starts []func(context.Context, WaitInfo) context.Context
	for _, o := range obs {
		if o.WaitStart != nil {
			starts = append(starts, o.WaitStart)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	return func(ctx context.Context, w core.WaitInfo) context.Context {
		info := WaitInfo(w)
		for _, f := range starts {
			if nctx := f(ctx, info); nctx != nil {
				ctx = nctx
			}
		}
		return ctx
	}
}

// waitEndHook calls the observers' WaitEnd in order.
func waitEndHook(obs []Observer) func(context.Context, core.WaitEnd) {
	var ends []func(context.Context, WaitEnd)
	for _, o := range obs {
		if o.WaitEnd != nil {
			ends = append(ends, o.WaitEnd)
		}
	}
	if len(ends) == 0 {
		return nil
	}
	return func(ctx context.Context, w core.WaitEnd) {
		e := WaitEnd{WaitInfo: WaitInfo(w.WaitInfo), Result: WaitResult(w.Result), Duration: w.Duration, Err: w.Err}
		for _, f := range ends {
			f(ctx, e)
		}
	}
}

// holdEndHook calls the observers' HoldEnd in order.
func holdEndHook(obs []Observer) func(core.HoldEnd) {
	var holds []func(HoldEnd)
	for _, o := range obs {
		if o.HoldEnd != nil {
			holds = append(holds, o.HoldEnd)
		}
	}
	return callEach(holds, func(e core.HoldEnd) HoldEnd { return HoldEnd(e) })
}

// renewalTickHook calls the observers' RenewalTick in order.
func renewalTickHook(obs []Observer) func(core.RenewalTick) {
	var ticks []func(RenewalTick)
	for _, o := range obs {
		if o.RenewalTick != nil {
			ticks = append(ticks, o.RenewalTick)
		}
	}
	return callEach(ticks, func(t core.RenewalTick) RenewalTick { return RenewalTick(t) })
}

// evictionHook calls the observers' Eviction in order.
func evictionHook(obs []Observer) func(core.EvictionPolicy) {
	var fs []func(EvictionPolicy)
	for _, o := range obs {
		if o.Eviction != nil {
			fs = append(fs, o.Eviction)
		}
	}
	return callEach(fs, func(p core.EvictionPolicy) EvictionPolicy { return EvictionPolicy(p) })
}

// callEach returns a hook that calls each of fs in order with the core's
// event turned into the public one by conv; nil when fs is empty.
func callEach[C, E any](fs []func(E), conv func(C) E) func(C) {
	if len(fs) == 0 {
		return nil
	}
	return func(c C) {
		for _, f := range fs {
			f(conv(c))
		}
	}
}

// attach calls the observers' Attach with c and has Close call what they
// return.
func attach(c *Client, obs []Observer) {
	for _, o := range obs {
		if o.Attach == nil {
			continue
		}
		if detach := o.Attach(c); detach != nil {
			c.inner().OnClose(detach)
		}
	}
}
