package rlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keyevents"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Lock is a reentrant distributed lock on Redis, compatible with Redisson's
// RLock (and RFencedLock with WithFencing). It is a handle: creating one
// does no I/O.
//
// Without an owner in the context, a Lock is a distributed sync.Mutex: any
// number of goroutines may share one handle (a struct field, a package
// variable), and they exclude each other exactly as they exclude other
// handles and other processes; a second Lock through the handle waits for
// the first hold to be released, whoever asks, and Unlock may come from any
// goroutine. It is not reentrant. The handles of one name on one Client
// are one such mutex: a hold taken without a context owner through one of
// them is released by an Unlock through any of them (rlock.New(c,
// "orders:7").Lock(ctx) then rlock.New(c, "orders:7").Unlock(ctx)), and a
// handle that never acquired gives that hold's Hold, Done and Err; a
// handle dropped while it holds stays reachable from its Client, so its
// hold can always be released. With an owner in the context
// (redisync.WithOwner), the call acts for that owner, which re-enters what
// it holds, through this handle or any other: hold counts, as a Java thread
// has with Redisson.
type Lock struct{ handle }

// New returns a handle on the lock called name. It does no I/O and never
// fails: an empty name or an invalid option is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string, opts ...Option) *Lock {
	h := newHandle(c, "rlock", name, opts)
	h.side = lockSide(h.e, "rlock", "0", h.opts.minHold)
	h.side.Line = core.LockLine("rlock", name) // waiters of a client line up locally
	return &Lock{h}
}

// handle is what every lock kind of the package shares: the engine's state
// (internal/core.Lock) and the kind's side (its scripts, its waiting).
type handle struct {
	e    *core.Lock
	side *core.Side
	opts options
}

// zeroHandle stands for a zero-value Lock, FairLock or SpinLock (declared,
// not made by New, NewFair or NewSpin): a handle without a client, on which
// every operation returns an error wrapping redisync.ErrInvalidArgument
// (the check of the client, [core.Client.Check]) and sends nothing.
var zeroHandle = New(nil, "").handle

// state returns h, or zeroHandle for a zero value. Every method starts
// from it.
func (h *handle) state() *handle {
	if h.e == nil {
		return &zeroHandle
	}
	return h
}

func newHandle(c *redisync.Client, kind, name string, opts []Option) handle {
	h := handle{e: core.NewLock((*core.Client)(c), kind, name)}
	h.opts = newOptions(kind, opts)
	h.e.Fixed, h.e.Fencing, h.e.OptErr = h.opts.lease, h.opts.fencing, h.opts.err
	h.e.Watchdog = h.opts.watchdog
	if m := h.opts.minHold; m > 0 && h.e.Fixed == 0 && c != nil && h.e.Lease(0) < m {
		h.e.Watchdog = m // a watchdog lease shorter than the minimum hold is the minimum hold
	}
	return h
}

// lockSide is the lock's configuration of the engine (the spin lock's too,
// with msg "" and a spin wait): the lock's scripts (lockScripts), which
// also hand the lock on within the client's local line.
func lockSide(e *core.Lock, kind, msg string, minHold time.Duration) *core.Side {
	scripts := newLockScripts(e, msg).queued()
	scripts.minHold = minHold
	if minHold > 0 {
		// A release within the minimum hold keeps the lock: it must
		// not hand it on either.
		return &core.Side{Kind: kind, Fresh: true, Scripts: scripts, Queue: &scripts.queue}
	}
	return &core.Side{Kind: kind, Fresh: true, Scripts: scripts, Handoff: scripts, Queue: &scripts.queue}
}

// lockScripts are the lock's scripts: lock_acquire and lock_release on the
// hash's owner fields for context owners, lock_acquire_fresh and
// lock_release_fresh for the fresh holds of callers without one,
// lock_handoff, and a wait on the lock's channel that wakes one waiter per
// release. msg is what a release publishes ("" for the spin lock, which
// publishes nothing).
type lockScripts struct {
	e       *core.Lock
	channel string
	// queue is the lock's queue of waiting Clients (prelude_wake); its
	// keys are empty for the spin lock, which does not queue.
	queue core.Queue
	// alive is how long, in milliseconds, the Client counts as alive in
	// the queue after each attempt (core.AliveMillis), in decimal.
	alive   string
	counter string // the fencing counter; "" for a handle without fencing (counterKey)
	msg     string
	waiting core.Waiting  // the same for every wait: made once
	minHold time.Duration // WithMinHold; 0: none
}

func newLockScripts(e *core.Lock, msg string) *lockScripts {
	s := &lockScripts{e: e, channel: keys.LockChannel(e.Name), msg: msg}
	if e.Fencing {
		s.counter = keys.FenceCounter(e.Name)
	}
	return s
}

// queued makes s the scripts of a lock whose waiters queue (the lock's:
// not the spin lock's, which spins, nor the fair lock's, which queues its
// owners): its waiters wait in the lock's queue of waiting Clients
// (prelude_wake), and the other scripts name the queue's keys.
func (s *lockScripts) queued() *lockScripts {
	e := s.e
	s.queue = core.Queue{Lock: e.Name, Channel: s.channel, Waiters: keys.LockWaiters(e.Name), State: keys.LockWaitState(e.Name)}
	if s.msg != "" {
		// a lock whose releases publish: its waiters queue (the spin
		// lock's spin)
		s.queue.WakePrefix = keys.LockWakePrefix(e.Name)
		s.alive = strconv.FormatInt(core.AliveMillis(e.C), 10)
		s.waiting = core.Waiting{PubSub: &core.PubSub{Channel: s.channel, Wake: pubsub.WakeOne, Queue: &s.queue}}
	}
	return s
}

// client returns the Client's id for the queue's scripts: "" for the
// spin lock, which does not queue.
func (s *lockScripts) client() string {
	if s.queue.WakePrefix == "" {
		return ""
	}
	return s.e.C.ID()
}

// stay returns the id of the releasing Client when req, a release, keeps
// it in the queue (its callers still wait: [core.Request].Stay), else "".
func (s *lockScripts) stay(req *core.Request) string {
	if !req.Stay {
		return ""
	}
	return s.client()
}

// counterKey returns the fencing counter, which lock_acquire names in any
// case (it reads it only to fence): a handle without fencing keeps no copy
// of the name (most handles: it would cost every handle, waiting or
// holding, its bytes) and makes it for each such call.
func (s *lockScripts) counterKey() string {
	if s.counter != "" {
		return s.counter
	}
	return keys.FenceCounter(s.e.Name)
}

// Field is the owner itself: a lock's hash has one field per owner.
func (s *lockScripts) Field(owner string) string { return owner }

// RunAcquire runs lock_acquire_fresh for a fresh hold, else lock_acquire.
func (s *lockScripts) RunAcquire(ctx context.Context, req *core.Request) (core.Outcome, error) {
	if req.Fresh {
		a := lua.LockAcquireFreshArgs{Lock: req.Name, Request: req.ReqKey,
			LeaseMillis: req.LeaseMillis(), FieldAt: int64(core.FieldAt(req.ReqKey, req.Field)),
			Deadline: req.Deadline, Fenced: req.Fencing}
		switch {
		case req.Join && s.queue.WakePrefix != "":
			// a waiter's attempt names the queue (and so the counter,
			// which comes before it)
			a.Counter, a.Waiters, a.WaitState = s.counterKey(), s.queue.Waiters, s.queue.State
			a.Client, a.AliveMillis = s.e.C.ID(), s.alive
		case req.Fencing:
			a.Counter = s.counter // otherwise left out: spare its bytes
		}
		rep, err := a.Run(ctx, req.Runner)
		return lockOutcome(rep.Code, rep.Value, rep.Fence, err)
	}
	a := lua.LockAcquireArgs{Lock: req.Name, Request: req.ReqKey, Counter: s.counterKey(),
		LeaseMillis: req.LeaseMillis(), Field: req.Field, Deadline: req.Deadline,
		Fenced: req.Fencing, Count: req.Count, Fence: req.Fence}
	if req.Join && s.queue.WakePrefix != "" {
		a.Waiters, a.WaitState, a.Client, a.AliveMillis = s.queue.Waiters, s.queue.State, s.e.C.ID(), s.alive
	}
	rep, err := a.Run(ctx, req.Runner)
	return lockOutcome(rep.Code, rep.Value, rep.Fence, err)
}

// RunRelease runs lock_release_fresh for a fresh hold, else lock_release.
func (s *lockScripts) RunRelease(ctx context.Context, req *core.Request) (int64, error) {
	undo, undoKey := req.Undoes()
	if req.Fresh {
		// The hold's request key is its acquisition's (undoKey in an
		// undo). Its mark outlives the acquisition's deadline and this
		// request's.
		return lua.LockReleaseFreshArgs{Lock: req.Name, Request: undoKey, Channel: s.channel,
			Waiters: s.queue.Waiters, WaitState: s.queue.State,
			FieldAt: int64(core.FieldAt(undoKey, req.Field)), Message: s.msg, Publish: req.Publish,
			MarkUntil: req.MarkUntil, Undo: undo, MinHoldMillis: s.minHoldLeft(req),
			WakePrefix: s.queue.WakePrefix, Probe: core.Probe(s.e.C, req.Publish), Stay: s.stay(req),
			AliveMillis: core.AliveMillis(s.e.C)}.Run(ctx, req.Runner)
	}
	return lua.LockReleaseArgs{Lock: req.Name, Channel: s.channel, Request: req.ReqKey, UndoRequest: undoKey,
		Waiters: s.queue.Waiters, WaitState: s.queue.State,
		LeaseMillis: req.LeaseMillis(), Field: req.Field, Deadline: req.Deadline, Message: s.msg,
		Undo: undo, Count: req.Count, Publish: req.Publish, MinHoldMillis: s.minHoldLeft(req),
		WakePrefix: s.queue.WakePrefix, Probe: core.Probe(s.e.C, req.Publish), Stay: s.stay(req),
		AliveMillis: core.AliveMillis(s.e.C)}.Run(ctx, req.Runner)
}

// minHoldLeft returns, for a release that ends a hold (not an undo), the
// whole milliseconds left of the minimum hold (WithMinHold), counted from
// when the acquisition that began the hold was sent; 0 when there is no
// minimum hold or it is over. The hold is still live in the client while
// its release is sent (the engine sends no release for an owner it holds
// nothing for).
func (s *lockScripts) minHoldLeft(req *core.Request) int64 {
	if s.minHold <= 0 || req.Count != 0 || req.UndoKey != "" {
		return 0
	}
	h := s.e.C.Holds().Live(core.HoldKey{Key: req.Name, Field: req.Field})
	if h == nil {
		return 0
	}
	left := s.minHold - time.Since(h.Start())
	if left <= 0 {
		return 0
	}
	return core.Millis(left)
}

// RunHandoff runs lock_handoff: from's fresh hold ends and to's begins.
func (s *lockScripts) RunHandoff(ctx context.Context, from, to *core.Request) (core.HandoffOutcome, error) {
	a := lua.LockHandoffArgs{Lock: from.Name, Request: from.ReqKey, NextRequest: to.ReqKey, Channel: s.channel,
		Waiters: s.queue.Waiters, WaitState: s.queue.State,
		FieldAt: int64(core.FieldAt(from.ReqKey, from.Field)), NextFieldAt: int64(core.FieldAt(to.ReqKey, to.Field)),
		MarkUntil: from.MarkUntil, NextLeaseMillis: to.LeaseMillis(),
		Message: s.msg, Fenced: to.Fencing, Publish: from.Publish,
		WakePrefix: s.queue.WakePrefix, Probe: core.Probe(s.e.C, from.Publish), Client: s.client()}
	if to.Fencing {
		a.Counter = s.counter
	}
	rep, err := a.Run(ctx, from.Runner)
	if err != nil {
		return core.HandoffOutcome{}, err
	}
	return core.HandoffOutcome{Remaining: rep.Remaining, Acquired: rep.Acquired == lua.LockHandoffHandedOver, Fence: rep.Fence}, nil
}

// Renewal is lockRenewal (lua.RenewLock): the hash and the owner's field,
// which are the hold's key. One lazy spec serves every hold: nothing is
// allocated for it per acquisition.
func (s *lockScripts) Renewal(*core.Request) *core.RenewSpec { return lockRenewal }

// Waiting waits on the lock's channel; a release wakes one waiter.
func (s *lockScripts) Waiting(*core.Request) core.Waiting { return s.waiting }

// lockRenewal is how the watchdog renews a hold of the lock.
var lockRenewal = &core.RenewSpec{Of: func(k core.HoldKey) lua.Renewal {
	return lua.RenewLockHold{Lock: k.Key, Field: k.Field}
}}

// lockOutcome reads lock_acquire's (and lock_acquire_fresh's, and
// fair_acquire's) reply: its code, its second element and its fencing
// token. The three scripts share their codes.
func lockOutcome(code, value, fence int64, err error) (core.Outcome, error) {
	switch {
	case err != nil:
		return core.Outcome{}, err
	case code == lua.LockAcquireAcquired:
		return core.Outcome{Acquired: true, Fence: fence}, nil
	case code == lua.LockAcquireLost:
		return core.Outcome{Lost: true}, nil
	}
	// busy: the third element, when the attempt joined the queue, says
	// whether the holder is foreign (prelude_wake's wait_join)
	return core.Outcome{Retry: core.RetryAfterPTTL(value), Foreign: fence == 1}, nil
}

// Name returns the lock's name, which is also its Redis key (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (h *handle) Name() string { return h.state().e.Given }

// Lock acquires the lock, waiting as long as ctx allows. Without a context
// owner it first waits for the holds taken through this handle without one
// (locally, in arrival order); with one, it re-enters at once what that
// owner holds (hold count + 1). A waiter is woken by the holder's release
// (through pub/sub; the spin lock re-tries with a backoff instead) and
// re-checks at the latest when the holder's lease would end, so it never
// polls.
//
// On success the lock is held until the matching Unlock, renewed by the
// watchdog, or for the fixed lease of WithLease. When ctx ends first, Lock
// returns an error wrapping ctx.Err() and holds nothing: an acquisition
// whose reply was lost is undone.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (h *handle) Lock(ctx context.Context) error {
	h = h.state()
	_, err := h.e.Acquire(ctx, h.side, true, 0)
	return err
}

// TryLock acquires the lock if it can within wait (0: a single attempt),
// as Lock does. It returns (false, nil) when the lock stayed busy (held by
// another owner, or through this handle without a context owner), and an
// error only for a failure (a bad argument, Redis unreachable, ctx ended:
// then wrapping ctx.Err()). A negative wait is an invalid argument.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the call: a request on
// its way to Redis when the wait ends is cut (on a go-redis client with
// ContextTimeoutEnabled), its acquisition undone, and TryLock reports
// false; see “Wait bounds” in [redisync].
func (h *handle) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	h = h.state()
	return h.e.Acquire(ctx, h.side, false, wait)
}

// Unlock releases one hold: the hold count drops by one, and at zero the
// lock is deleted and its waiters are woken. Without a context owner it
// releases the hold taken through this handle without one, from any
// goroutine; a handle that has never taken a hold releases the one taken
// through another handle of the name on the Client (one mutex: Redisson's
// getLock(name).unlock()). A handle answers for the holds it took: once
// they are released, a second Unlock through it (an Unlock and a deferred
// one) is ErrNotHeld, even while another handle of the name holds, whose
// hold it never frees. With a context owner, it releases a hold of that
// owner. Renewal of the hold stops
// before the release is sent, whatever its outcome. Unlock runs even when
// ctx is already cancelled (on a detached context with a bounded timeout),
// so a deferred Unlock after a cancelled request still releases.
//
// It returns an error wrapping redisync.ErrNotHeld, and changes nothing,
// when the owner does not hold the lock: its lease ran out, someone
// force-unlocked it, another owner holds it, or it was never acquired. A
// release re-sent by go-redis after a lost reply is applied once. When the
// release itself fails (Redis unreachable), the hold ends in this client
// all the same and is no longer renewed: Redis frees it when its lease runs
// out, and a later acquisition by the same owner starts from a count of
// one, never from what Redis kept. A context owner's release whose reply
// was lost is settled before the owner's next Lock or Unlock on the lock
// (marked cancelled in Redis unless it ran), so that a copy of it
// delivered late cannot release the hold the owner takes next.
//
// An error may mean the release took effect ([redisync.ErrNotReplicated]; a
// network error, after which the lease frees the hold): never repeat it.
// See “Errors and retries” in [redisync].
func (h *handle) Unlock(ctx context.Context) error {
	h = h.state()
	return h.e.Release(ctx, h.side)
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether the lock existed. Holders in this process see their hold
// end with ErrLockLost at once; holders elsewhere when their watchdog next
// renews, or when they unlock (ErrNotHeld). A key of another type than a
// hash, or a hash whose fields are not owners "<client id>:<n>" holding
// hold counts (an application's hash), is no lock: ForceUnlock returns an
// error wrapping redisync.ErrWrongType and deletes nothing.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (h *handle) ForceUnlock(ctx context.Context) (bool, error) {
	h = h.state()
	if err := h.e.Check(ctx); err != nil {
		return false, err
	}
	pub, err := h.e.C.PublishCommand(ctx)
	if err != nil {
		return false, fmt.Errorf("%s %q: force unlock: %w", h.e.Kind, h.e.Name, errs.ReplyError(err))
	}
	q := h.side.Queue // nil for the spin lock, whose waiters spin
	a := lua.LockForceUnlockArgs{Lock: h.e.Name, Channel: keys.LockChannel(h.e.Name), Message: "0",
		Waiters: keys.LockWaiters(h.e.Name), WaitState: keys.LockWaitState(h.e.Name),
		Publish: pub, Deadline: h.e.C.Requests().Deadline(ctx), RequestPrefix: keys.RequestPrefix(h.e.Name),
		MarkTTLMillis: core.ForcedMarkTTL, Probe: core.Probe(h.e.C, pub)}
	if q != nil {
		a.WakePrefix = q.WakePrefix
	}
	n, err := a.Run(ctx, h.e.C.Direct())
	if err != nil {
		return false, fmt.Errorf("%s %q: force unlock: %w", h.e.Kind, h.e.Name, errs.ReplyError(err))
	}
	h.e.ForceEnded()
	return n == lua.LockForceUnlockExisted, nil
}

// IsLocked reports whether any owner holds the lock. A key of another
// type than a hash, or a hash whose fields are not a lock's (an
// application's hash), gives an error wrapping redisync.ErrWrongType.
func (h *handle) IsLocked(ctx context.Context) (bool, error) {
	h = h.state()
	if err := h.e.Check(ctx); err != nil {
		return false, err
	}
	s, err := h.read(ctx, false)
	return len(s.hash) > 0, err
}

// IsHeld reports whether the caller's owner holds the lock: the
// context's owner, or without one the hold the handle acts for (the holds
// taken through it; for a handle that never took one, the Client's hold
// of the name without a context owner, whichever handle took it).
func (h *handle) IsHeld(ctx context.Context) (bool, error) {
	n, err := h.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns the caller's owner's hold count in Redis: how many
// Unlocks free the lock. It is 0 when the owner does not hold it. A key
// that is not laid out as a lock gives an error wrapping
// redisync.ErrWrongType.
func (h *handle) HoldCount(ctx context.Context) (int64, error) {
	h = h.state()
	owner, err := h.e.Owner(ctx, h.side)
	if err != nil {
		return 0, err
	}
	s, err := h.read(ctx, false)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.ParseInt(s.hash[owner], 10, 64) // 0 when absent
	return n, nil
}

// TTL returns the lock's remaining lease: 0 when the lock does not exist,
// -1ns when it exists without an expiry (which redisync never sets). A key
// that is not laid out as a lock gives an error wrapping
// redisync.ErrWrongType.
func (h *handle) TTL(ctx context.Context) (time.Duration, error) {
	h = h.state()
	if err := h.e.Check(ctx); err != nil {
		return 0, err
	}
	s, err := h.read(ctx, false)
	return s.ttl, err
}

// FencingToken returns the fencing token of the hold of the latest
// acquisition through this handle (a re-entry's is its hold's, taken when
// the hold began), or 0 without WithFencing or before the first
// acquisition. When the handle is shared by several owners, the latest
// acquisition may be another owner's: use Hold(ctx).FencingToken() for
// one owner's token.
func (h *handle) FencingToken() int64 { return h.state().e.FencingToken() }

// Hold returns the current hold of the caller's owner: with a context
// owner, that owner's hold, however many times and through whichever
// handles of the Client it was re-entered; without one, the hold taken
// through this handle without a context owner. It returns nil when that
// owner holds nothing in this Client. It sends nothing to Redis. Take it
// right after Lock to follow that hold alone: its Done, Err, Context and
// FencingToken are the hold's, unchanged by other owners' acquisitions and
// releases through the same handle.
func (h *handle) Hold(ctx context.Context) *redisync.Hold {
	h = h.state()
	return (*redisync.Hold)(h.e.Hold(ctx, h.side))
}

// Done returns a channel closed when the hold of the latest acquisition
// through this handle ends: by its final Unlock, or by a loss (the watchdog
// found it gone, no renewal succeeded within the lease, the fixed lease ran
// out, a ForceUnlock, Close). Before the first acquisition it is closed.
// Use it to stop work the lock guards: a Redis lock is a lease, not a
// mutex. It follows the handle, not an owner: when several owners share
// the handle, the latest acquisition may be another owner's, so each
// should watch its own Hold(ctx).Done() instead.
func (h *handle) Done() <-chan struct{} { return h.state().e.Done() }

// Err returns nil while the hold of the latest acquisition through this
// handle lasts; after its final Unlock, or before any acquisition, an error
// wrapping redisync.ErrNotHeld; after a loss, one wrapping
// redisync.ErrLockLost. Like Done, it follows the handle; Hold(ctx).Err()
// follows one owner's hold.
func (h *handle) Err() error { return h.state().e.Err() }

// Events subscribes to the deletions, expiries and evictions of the
// lock's key in Redis, whoever causes them, as Redisson 3.43's lock
// listeners (deleted-object and expired-object listeners) do, and returns
// a channel that receives each as a redisync.KeyEvent: KeyDeleted for an
// Unlock that frees the lock, a ForceUnlock, redisync unlock -force or any
// DEL of the key, KeyExpired when its lease runs out (its holder died or
// stopped renewing), KeyEvicted under maxmemory (with the e flag). It
// returns once Redis has confirmed the subscription, so a change made
// after Events returns is reported. The channel is closed when ctx ends
// or the Client closes; the subscription and its goroutine are then gone.
// A receiver that falls behind by more than 80 events loses the oldest.
//
// The events come from Redis keyspace notifications, which Redis
// publishes only when the node holding the key has notify-keyspace-events
// with K, g and x (or K and A); on a Cluster only on that node, where
// Events subscribes, following the key's slot when it moves. With the
// Client's default (redisync.KeyspaceEventsAuto) Events first reads the
// setting: when the flags are off it returns an error wrapping
// redisync.ErrKeyspaceEventsOff that names the CONFIG SET to run, and
// when the ACL user may not run CONFIG GET, one wrapping
// redisync.ErrNoPermission, instead of a channel that would never
// receive. Notifications are hints, lost while the connection is down, and
// a Cluster slot migration reports a KeyDeleted for a lock that lives on at
// its new master; see redisync.KeyEvent and docs/lock-events.md. A hold's
// own Done does not need Events: it uses the same notifications by itself
// (redisync.WithKeyspaceEvents).
func (h *handle) Events(ctx context.Context) (<-chan redisync.KeyEvent, error) {
	h = h.state()
	if err := h.e.Check(ctx); err != nil {
		return nil, err
	}
	return keyevents.Stream(ctx, h.e.C, h.e.Kind, h.e.Given, h.e.Name)
}

var _ redisync.Locker = (*Lock)(nil)
