package rwlock

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
	"github.com/redisync/redisync/internal/layout"
	"github.com/redisync/redisync/lua"
)

// Messages on the lock's channel, as Redisson publishes them.
const (
	msgRead  = "0" // a read release freed the lock: one writer may get in
	msgWrite = "1" // a write release (or ForceUnlock): every reader may get in
)

// wake is the channel's wake policy. A write release may let every waiting
// reader in at once, so it wakes all local waiters; a read release that
// freed the lock lets one writer in, so it wakes the longest-waiting one
// (the others would only find the lock taken again).
func wake(payload string, _ int) int {
	if payload == msgWrite {
		return -1
	}
	return 1
}

// RWLock is a distributed read-write lock on Redis, compatible with
// Redisson's RReadWriteLock: many readers or one writer. It is a handle:
// creating one does no I/O.
//
// Without an owner in the context, an RWLock is a distributed sync.RWMutex:
// any number of goroutines may share one handle, and they exclude each
// other as they exclude other handles and other processes (many read holds
// or one write hold through the handle at a time; a Lock waiting through it
// keeps later RLocks through it out, so writers are not starved); holds are
// not reentrant, and RUnlock and Unlock may come from any goroutine. Its
// read holds are the handle's own owner's; each of its write holds is a
// fresh hold, with an owner of its own (a new token) that Unlock releases.
// The writers of one Client line up locally (only the first waits in
// Redis), and Unlock hands the write side to the next writer of the Client
// waiting without a context owner in one script, without freeing the lock
// in Redis; such a chain of handoffs serves the writers already waiting
// when it began, or lasts about a millisecond, then frees the lock, so
// readers here and elsewhere get their turn. With an owner in the context
// (redisync.WithOwner), the call acts for that owner, whose holds on both
// sides are reentrant. The writer may also take
// read holds (a downgrade: Lock, RLock, Unlock leaves the owner
// read-locked). An owner that holds only read holds may not take the write
// side: Lock and TryLock return ErrUpgrade at once. Downgrade and
// ErrUpgrade concern context owners only: without one, Lock waits for
// every read hold to go, as sync.RWMutex does.
//
// RWLock implements redisync.Locker with its write side; ReadLocker and
// WriteLocker return the two sides as separate Lockers.
type RWLock struct {
	e           *core.Lock
	read, write *core.Side
}

// New returns a handle on the read-write lock called name. It does no I/O
// and never fails: an empty name or an invalid option is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string, opts ...Option) *RWLock {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	e := core.NewLock((*core.Client)(c), "rwlock", name)
	e.Fixed, e.OptErr = o.lease, o.err
	q := newQueue(e)
	return &RWLock{e: e, read: readSide(e, q), write: writeSide(e, q)}
}

// zeroRW stands for a zero-value RWLock (declared, not made by New): a
// handle without a client, on which every operation returns an error
// wrapping redisync.ErrInvalidArgument (the check of the client,
// [core.Client.Check]) and sends nothing.
var zeroRW = New(nil, "")

// state returns rw, or zeroRW for a zero value. Every method starts from
// it.
func (rw *RWLock) state() *RWLock {
	if rw.e == nil {
		return zeroRW
	}
	return rw
}

// Events subscribes to the deletions, expiries and evictions of the
// lock's key (its hash) in Redis, whoever causes them, as Redisson 3.43's lock
// listeners (deleted-object and expired-object listeners) do, and returns
// a channel that receives each as a redisync.KeyEvent: KeyDeleted for an
// Unlock or RUnlock that frees the lock, a ForceUnlock, redisync unlock -force or any
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
func (rw *RWLock) Events(ctx context.Context) (<-chan redisync.KeyEvent, error) {
	rw = rw.state()
	if err := rw.e.Check(ctx); err != nil {
		return nil, err
	}
	return keyevents.Stream(ctx, rw.e.C, rw.e.Kind, rw.e.Given, rw.e.Name)
}

// Name returns the lock's name, which is also the key of its hash (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (rw *RWLock) Name() string { return rw.state().e.Given }

// RLock takes a read hold, waiting as long as ctx allows. It succeeds at
// once when the lock is free or read-locked, and when the caller's context
// owner holds the write side (downgrade); it waits while another owner
// holds the write side, and, without a context owner, while a Lock through
// this handle holds or waits for the write side. A waiter is woken through
// pub/sub when the writer releases, and re-checks at the latest when the
// writer's lease would end. Every RLock of a context owner adds one to its
// read hold count.
//
// On success the read hold lasts until the matching RUnlock, renewed by the
// watchdog, or for the fixed lease of WithLease. When ctx ends first, RLock
// returns an error wrapping ctx.Err() and holds nothing: an acquisition
// whose reply was lost is undone.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (rw *RWLock) RLock(ctx context.Context) error {
	rw = rw.state()
	_, err := rw.e.Acquire(ctx, rw.read, true, 0)
	return err
}

// TryRLock takes a read hold if it can within wait (0: a single attempt).
// It returns (false, nil) when the lock stayed write-locked by another
// owner, and an error only for a failure (a bad argument, Redis
// unreachable, ctx ended: then wrapping ctx.Err()). A negative wait is an
// invalid argument.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the call: a request on
// its way to Redis when the wait ends is cut (on a go-redis client with
// ContextTimeoutEnabled), its acquisition undone, and TryRLock reports
// false; see “Wait bounds” in [redisync].
func (rw *RWLock) TryRLock(ctx context.Context, wait time.Duration) (bool, error) {
	rw = rw.state()
	return rw.e.Acquire(ctx, rw.read, false, wait)
}

// Lock takes the write hold, waiting as long as ctx allows. It succeeds
// when the lock is free, and at once when the caller's context owner
// already holds the write side (hold count + 1). It waits while other
// owners hold read or write holds, and, without a context owner, while
// holds taken through this handle without one last; a waiter is woken
// through pub/sub by the release that frees the lock, and re-checks at the
// latest when the holders' leases would end.
//
// When the caller's context owner holds read holds but not the write side,
// Lock returns an error wrapping redisync.ErrUpgrade at once and changes
// nothing (Redisson waits for itself forever there). When ctx ends first,
// Lock returns an error wrapping ctx.Err() and holds nothing.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (rw *RWLock) Lock(ctx context.Context) error {
	rw = rw.state()
	_, err := rw.e.Acquire(ctx, rw.write, true, 0)
	return err
}

// TryLock takes the write hold if it can within wait (0: a single attempt).
// It returns (false, nil) when other owners kept the lock, an error
// wrapping redisync.ErrUpgrade at once when the caller's context owner
// holds only read holds, and other errors for failures as TryRLock does.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the call: a request on
// its way to Redis when the wait ends is cut (on a go-redis client with
// ContextTimeoutEnabled), its acquisition undone, and TryLock reports
// false; see “Wait bounds” in [redisync].
func (rw *RWLock) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	rw = rw.state()
	return rw.e.Acquire(ctx, rw.write, false, wait)
}

// RUnlock releases one read hold: without a context owner, one taken
// through this handle without one (from any goroutine), or for a handle
// that has never taken one, through another handle of the name on the
// Client (a handle answers for the holds it took: once they are released,
// a further RUnlock through it is ErrNotHeld, whoever else holds); with
// one, one of that owner's. When the last read hold of the last reader goes, the lock
// is deleted and one waiting writer is woken. Renewal of the hold stops
// before the release is sent, whatever its outcome. RUnlock runs even when
// ctx is already cancelled (on a detached context with a bounded timeout),
// and a release re-sent by go-redis after a lost reply is applied once.
//
// It returns an error wrapping redisync.ErrNotHeld, and changes nothing,
// when the owner holds no live read hold: its lease ran out, someone
// force-unlocked the lock, or it never took one.
//
// When the release fails (Redis unreachable, no reply), this client no
// longer counts the hold, but Redis may keep it until its lease ends (it is
// no longer renewed). With a context owner, a release whose reply was lost
// is settled before the owner's next operation on its read holds: marked
// cancelled in Redis unless it ran, so a copy of it delivered later cannot
// change the holds the owner takes next. The owner's next read acquisition
// or release replaces what Redis keeps with what this client counts; until
// then, or until its lease ends, writers — the owner's own, and this
// handle's fresh ones — wait for it as for any read hold.
//
// An error may mean the release took effect ([redisync.ErrNotReplicated]; a
// network error, after which the lease frees the hold): never repeat it.
// See “Errors and retries” in [redisync].
func (rw *RWLock) RUnlock(ctx context.Context) error {
	rw = rw.state()
	return rw.e.Release(ctx, rw.read)
}

// Unlock releases one write hold (without a context owner, the one taken
// through this handle without one, or for a handle that has never taken
// one, through another handle of the name on the Client; once the
// handle's own is released, a second Unlock through it is ErrNotHeld and
// frees no other handle's hold). The last one wakes every waiter: the
// lock is then free, or read-locked when the owner still holds read holds
// (a downgrade), and waiting readers get in at once. Renewal of the hold
// stops before the release is sent, whatever its outcome. Unlock runs even
// when ctx is already cancelled, and a release re-sent after a lost reply
// is applied once.
//
// It returns an error wrapping redisync.ErrNotHeld, and changes nothing,
// when the owner does not hold the write side.
//
// An error may mean the release took effect ([redisync.ErrNotReplicated]; a
// network error, after which the lease frees the hold): never repeat it.
// See “Errors and retries” in [redisync].
func (rw *RWLock) Unlock(ctx context.Context) error {
	rw = rw.state()
	return rw.e.Release(ctx, rw.write)
}

// ForceUnlock deletes the lock whoever holds it, in either mode, together
// with the timeout keys of its read holds, and wakes every waiter. It
// reports whether the lock existed. Holders in this process see their holds
// end with ErrLockLost at once; holders elsewhere when their watchdog next
// renews, or when they unlock (ErrNotHeld).
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (rw *RWLock) ForceUnlock(ctx context.Context) (bool, error) {
	rw = rw.state()
	if err := rw.e.Check(ctx); err != nil {
		return false, err
	}
	pub, err := rw.e.C.PublishCommand(ctx)
	if err != nil {
		return false, fmt.Errorf("rwlock %q: force unlock: %w", rw.e.Name, errs.ReplyError(err))
	}
	head, tail := keys.RWTimeoutParts(rw.e.Name)
	n, err := lua.RWForceUnlockArgs{Lock: rw.e.Name, Channel: keys.RWChannel(rw.e.Name),
		Waiters: keys.LockWaiters(rw.e.Name), WaitState: keys.LockWaitState(rw.e.Name), TimeoutHead: head,
		TimeoutTail: tail, Message: msgWrite, Publish: pub, Deadline: rw.e.C.Requests().Deadline(ctx),
		RequestPrefix: keys.RequestPrefix(rw.e.Name), MarkTTLMillis: core.ForcedMarkTTL,
		WakePrefix: keys.LockWakePrefix(rw.e.Name), Probe: core.Probe(rw.e.C, pub)}.Run(ctx, rw.e.C.Direct())
	if err != nil {
		return false, fmt.Errorf("rwlock %q: force unlock: %w", rw.e.Name, errs.ReplyError(err))
	}
	rw.e.ForceEnded()
	return n == lua.RWForceUnlockExisted, nil
}

// mode returns the lock's mode field: "read", "write", or "" when free.
// A key that is not laid out as a read-write lock (another type, or a hash
// of other fields, as an application's) gives an error wrapping
// redisync.ErrWrongType.
func (rw *RWLock) mode(ctx context.Context) (string, error) {
	hash, err := rw.hash(ctx)
	return hash["mode"], err
}

// hash reads the lock's hash (empty when free) and checks its layout
// (layout.Check).
func (rw *RWLock) hash(ctx context.Context) (map[string]string, error) {
	rw = rw.state()
	if err := rw.e.Check(ctx); err != nil {
		return nil, err
	}
	hash, err := rw.e.C.Redis().HGetAll(ctx, rw.e.Name).Result()
	if err != nil {
		return nil, fmt.Errorf("rwlock %q: %w", rw.e.Name, errs.ReplyError(err))
	}
	if err := layout.Check(rw.e.Name, hash, true); err != nil {
		return nil, fmt.Errorf("rwlock %q: %w", rw.e.Name, err)
	}
	return hash, nil
}

// IsReadLocked reports whether the lock is in read mode: held by readers
// only. A writer that also holds read holds (a downgrade in progress) keeps
// it in write mode.
func (rw *RWLock) IsReadLocked(ctx context.Context) (bool, error) {
	m, err := rw.mode(ctx)
	return m == "read", err
}

// IsWriteLocked reports whether the lock is in write mode: some owner holds
// the write side.
func (rw *RWLock) IsWriteLocked(ctx context.Context) (bool, error) {
	m, err := rw.mode(ctx)
	return m == "write", err
}

// ReadHoldCount returns the caller's owner's read hold count (without a
// context owner, the handle's own owner's): how many RUnlocks release its
// read side. It is 0 when the owner holds no live read hold.
func (rw *RWLock) ReadHoldCount(ctx context.Context) (int64, error) {
	rw = rw.state()
	owner, err := rw.e.Owner(ctx, rw.read)
	if err != nil {
		return 0, err
	}
	n, err := lua.RWReadCountArgs{Lock: rw.e.Name, Field: owner,
		TimeoutPrefix: keys.RWTimeoutPrefix(rw.e.Name, owner)}.Run(ctx, rw.e.C.Direct())
	if err != nil {
		return 0, fmt.Errorf("rwlock %q: %w", rw.e.Name, errs.ReplyError(err))
	}
	return n, nil
}

// WriteHoldCount returns the caller's owner's write hold count: how many
// Unlocks release its write side. Without a context owner it is the count
// of the latest write hold taken through this handle (1 while it lasts).
// It is 0 when the owner does not hold it.
func (rw *RWLock) WriteHoldCount(ctx context.Context) (int64, error) {
	rw = rw.state()
	owner, err := rw.e.Owner(ctx, rw.write)
	if err != nil {
		return 0, err
	}
	hash, err := rw.hash(ctx)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.ParseInt(hash[keys.RWWriteField(owner)], 10, 64) // 0 when absent
	return n, nil
}

// Done returns a channel closed when the hold of the latest acquisition
// through this handle, read or write, ends: by its final release, or by a
// loss (the watchdog found it gone, no renewal succeeded within the lease,
// the fixed lease ran out, a ForceUnlock, Close). Before the first
// acquisition it is closed. Use it to stop work the lock guards: a Redis
// lock is a lease, not a mutex. It follows the handle, not an owner: when
// several owners share the handle, the latest acquisition may be another
// owner's, whose release closes it; each owner should then watch its own
// ReadHold(ctx).Done() or WriteHold(ctx).Done().
func (rw *RWLock) Done() <-chan struct{} { return rw.state().e.Done() }

// Err returns nil while the hold of the latest acquisition through this
// handle lasts; after its final release, or before any acquisition, an
// error wrapping redisync.ErrNotHeld; after a loss, one wrapping
// redisync.ErrLockLost. Like Done, it follows the handle; ReadHold(ctx).Err()
// and WriteHold(ctx).Err() follow one owner's hold.
func (rw *RWLock) Err() error { return rw.state().e.Err() }

// ReadHold returns the current read hold of the caller's owner: with a
// context owner, that owner's read hold (all its read holds on the lock, as
// one hold: it lasts until the owner's read hold count goes back to zero),
// whichever handles of the Client took them; without one, the read hold of
// this handle's own owner (the read holds taken through this handle without
// a context owner). It returns nil when that owner holds no read hold in
// this Client. It sends nothing to Redis. Its Done closes only when that
// owner's read hold ends, never by another owner's RUnlock through the same
// handle.
func (rw *RWLock) ReadHold(ctx context.Context) *redisync.Hold {
	rw = rw.state()
	return (*redisync.Hold)(rw.e.Hold(ctx, rw.read))
}

// WriteHold returns the current write hold of the caller's owner: with a
// context owner, that owner's write hold, re-entries included; without one,
// the write hold taken through this handle without a context owner. It
// returns nil when that owner does not hold the write side in this Client.
// It sends nothing to Redis.
func (rw *RWLock) WriteHold(ctx context.Context) *redisync.Hold {
	rw = rw.state()
	return (*redisync.Hold)(rw.e.Hold(ctx, rw.write))
}

// ReadLocker returns the read side as a redisync.Locker: its Lock, TryLock
// and Unlock are RLock, TryRLock and RUnlock. Use it to take a read hold as
// a member of a multilock.MultiLock.
func (rw *RWLock) ReadLocker() redisync.Locker { return readLocker{rw} }

// WriteLocker returns the write side as a redisync.Locker: its Lock,
// TryLock and Unlock are the RWLock's own.
func (rw *RWLock) WriteLocker() redisync.Locker { return rw }

type readLocker struct{ rw *RWLock }

func (l readLocker) Lock(ctx context.Context) error { return l.rw.RLock(ctx) }
func (l readLocker) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	return l.rw.TryRLock(ctx, wait)
}
func (l readLocker) Unlock(ctx context.Context) error { return l.rw.RUnlock(ctx) }

var (
	_ redisync.Locker = (*RWLock)(nil)
	_ redisync.Locker = readLocker{}
)
