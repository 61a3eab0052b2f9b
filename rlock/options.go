package rlock

import (
	"fmt"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
)

// Option configures a Lock, FairLock or SpinLock.
type Option func(*options)

// Defaults, set here only.
const (
	defaultBackoffFirst   = time.Millisecond
	defaultBackoffLongest = 128 * time.Millisecond
	// defaultDeadWaiter is how long a fair lock waiter's queue entry
	// outlives its last refresh: a waiter whose process died stops holding
	// up the queue after about this long.
	defaultDeadWaiter = 5 * time.Second
)

type options struct {
	kind       string        // the constructor's kind, for errors
	lease      time.Duration // 0: watchdog
	fencing    bool
	backoff    bool // WithBackoff was given
	backoffMin time.Duration
	backoffMax time.Duration
	deadWaiter time.Duration
	waiterSet  bool // WithWaiterTimeout was given
	minHold    time.Duration
	watchdog   time.Duration // WithWatchdogTimeout; 0: the Client's
	err        error
}

func newOptions(kind string, opts []Option) options {
	o := options{kind: kind, backoffMin: defaultBackoffFirst, backoffMax: defaultBackoffLongest, deadWaiter: defaultDeadWaiter}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.backoff && kind != "spin lock" && o.err == nil {
		o.err = fmt.Errorf("%w: WithBackoff applies to a SpinLock only, not to a %s", redisync.ErrInvalidArgument, kind)
	}
	if o.waiterSet && kind != "fair lock" && o.err == nil {
		o.err = fmt.Errorf("%w: WithWaiterTimeout applies to a FairLock only, not to a %s", redisync.ErrInvalidArgument, kind)
	}
	if o.minHold > 0 && o.lease > 0 && o.lease < o.minHold {
		o.lease = o.minHold // a fixed lease shorter than the minimum hold is the minimum hold
	}
	return o
}

func (o *options) invalid(err error) {
	if o.err == nil {
		o.err = err
	}
}

// WithLease gives every acquisition a fixed lease of d: the lock expires d
// after it was taken (or re-entered, or partly released) unless released
// first, and no watchdog renews it. Done closes, with ErrLockLost, when the
// lease runs out. d must be at least 1ms and at most 2^43 ms (about 278
// years; outside that, the first operation returns an error wrapping
// redisync.ErrInvalidArgument); Redis counts leases in whole milliseconds,
// and d is rounded up to one. The default is no fixed lease:
// the hold lasts until Unlock, renewed by the Client's watchdog (lease =
// WithWatchdogTimeout, renewed every third of it).
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if err := core.CheckLease(o.kind, d); err != nil {
			o.invalid(err)
			return
		}
		o.lease = d
	}
}

// WithFencing makes the lock a fenced lock (Redisson RFencedLock's counter):
// every acquisition that takes a hold (the owner's hold count goes from 0
// to 1) increments the counter redisson_lock_token:{name}, and the hold
// keeps the value it got: a re-entry by the same owner does not increment
// it and reports the hold's token, so the outer and nested scopes of one
// hold write with the same token. (Redisson increments on re-entries too;
// the counter and its key are Redisson's, so tokens still grow across
// holders of both.) Hold(ctx).FencingToken and FencingToken return it.
// Tokens only grow; unlock never resets them. Pass the token to the
// resource the lock guards and have it reject writes carrying a token lower
// than one it has seen: that keeps a holder whose lease ran out (a long GC
// pause, a network partition) from overwriting the next holder's work. The
// default is no fencing.
func WithFencing() Option {
	return func(o *options) { o.fencing = true }
}

// WithBackoff sets a SpinLock's pause between tries: the first pause is
// about min, each next one doubles, up to max; each is drawn at random from
// its upper half (jitter), so spinning clients spread out. min must be
// positive and at most max; given to a Lock or FairLock, it is an invalid
// argument. The default is 1ms to 128ms, as Redisson's.
func WithBackoff(min, max time.Duration) Option { //nolint:revive // min and max: the names API.md gives
	return func(o *options) {
		o.backoff = true
		if min <= 0 || min > max {
			o.invalid(fmt.Errorf("%w: backoff %v..%v, min must be positive and at most max", redisync.ErrInvalidArgument, min, max))
			return
		}
		o.backoffMin, o.backoffMax = min, max
	}
}

// WithWaiterTimeout sets how long a FairLock waiter's place in the queue
// outlives its latest re-check: a waiter whose process died stops holding up
// the queue about d after it last re-checked, and the next one is woken. A
// live waiter re-checks at least every d/3 (on its own timer when no message
// comes) and so keeps its place however long it waits; keep d well above
// the round-trip time to Redis. The deadlines are kept on Redis's clock. d
// must be positive and is rounded up to whole milliseconds; given to a Lock
// or SpinLock, it is an invalid argument. The default is 5s.
func WithWaiterTimeout(d time.Duration) Option {
	return func(o *options) {
		o.waiterSet = true
		if d <= 0 {
			o.invalid(fmt.Errorf("%w: fair lock waiter timeout %v, must be positive", redisync.ErrInvalidArgument, d))
			return
		}
		o.deadWaiter = d
	}
}

// WithMinHold makes every hold last at least d from its acquisition
// (ShedLock's lockAtLeastFor): an Unlock that ends the hold before d has
// passed since the acquisition was sent does not delete the lock, but
// leaves it to expire at acquisition + d. Its waiters are woken as by a
// release; they find the lock busy and re-check when it expires (the lock's
// remaining lease is their retry hint). The hold itself ends at that
// Unlock, as always (Done closes, Err is ErrNotHeld): only the key stays.
// So a job guarded by the lock runs once per period across schedulers
// whose clocks differ by less than d: a scheduler that comes late finds
// the lock taken even when the first run was quicker than the skew. A
// fixed lease (WithLease) or a watchdog lease (WithWatchdogTimeout, or the
// Client's) shorter than d becomes d, so a holder that dies also keeps the
// lock for d. With a minimum hold, a release never hands the lock on to
// another caller of the same Client. An Unlock after d deletes the lock as
// without the option. The keys are Redisson's: a Redisson client sees a
// held lock until it expires. A context owner that released within the
// minimum hold may take the lock again before it expires (its field is
// the one kept); other owners wait.
//
// It applies to a Lock, a FairLock and a SpinLock. d must be at least 1ms
// and at most 2^43 ms, and is rounded up to whole milliseconds; outside
// that range the first operation returns an error wrapping
// redisync.ErrInvalidArgument. The default is no minimum hold.
func WithMinHold(d time.Duration) Option {
	return func(o *options) {
		if err := core.CheckLease(o.kind, d); err != nil {
			o.invalid(fmt.Errorf("minimum hold: %w", err))
			return
		}
		o.minHold = d
	}
}

// WithWatchdogTimeout gives this handle's holds a watchdog lease of their
// own: a hold taken without a fixed lease (WithLease) expires d after its
// last renewal, and the watchdog renews it every third of d. A holder
// that dies or is cut off frees the lock within d, without shortening the
// lease of every other lock of the Client (redisync.WithWatchdogTimeout).
// d must be at least 1ms and at most 2^43 ms, and is rounded up to whole
// milliseconds; outside that range the first operation returns an error
// wrapping redisync.ErrInvalidArgument. Keep d well above the round-trip
// time to Redis (and the replicas' acknowledgement, when on). Given with
// WithLease, the fixed lease applies. The default is the Client's
// watchdog timeout (30s unless redisync.WithWatchdogTimeout).
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) {
		if err := core.CheckLease(o.kind, d); err != nil {
			o.invalid(fmt.Errorf("watchdog timeout: %w", err))
			return
		}
		o.watchdog = d
	}
}
