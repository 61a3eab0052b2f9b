package rwlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
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
// creating one does no I/O, and it is safe for concurrent use. By default
// the handle is its own owner; a context from redisync.WithOwner makes the
// call act for the owner the context carries instead.
//
// Both sides are reentrant. The writer may also take read holds (a
// downgrade: Lock, RLock, Unlock leaves the owner read-locked). An owner
// that holds only read holds may not take the write side: Lock and TryLock
// return ErrUpgrade at once.
//
// RWLock implements redisync.Locker with its write side; ReadLocker and
// WriteLocker return the two sides as separate Lockers.
type RWLock struct {
	h    core.Handle
	opts options

	mu     sync.Mutex
	latest *core.Hold // the hold of the latest acquisition through this handle, read or write
}

// New returns a handle on the read-write lock called name. It does no I/O
// and never fails: an empty name or an invalid option is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string, opts ...Option) *RWLock {
	rw := &RWLock{h: core.NewHandle(c, "rwlock", name)}
	for _, opt := range opts {
		if opt != nil {
			opt(&rw.opts)
		}
	}
	rw.h.OptErr = rw.opts.err
	return rw
}

// Name returns the lock's name, which is also the key of its hash.
func (rw *RWLock) Name() string { return rw.h.Name }

func (rw *RWLock) lease() time.Duration { return rw.h.Lease(rw.opts.lease) }

// RLock takes a read hold, waiting as long as ctx allows. It succeeds at
// once when the lock is free or read-locked, and when the caller's owner
// holds the write side (downgrade); it waits while another owner holds the
// write side. A waiter is woken through pub/sub when the writer releases,
// and re-checks at the latest when the writer's lease would end. Every
// RLock adds one to the owner's read hold count.
//
// On success the read hold lasts until the matching RUnlock, renewed by the
// watchdog, or for the fixed lease of WithLease. When ctx ends first, RLock
// returns an error wrapping ctx.Err() and holds nothing: an acquisition
// whose reply was lost is undone.
func (rw *RWLock) RLock(ctx context.Context) error {
	_, err := rw.acquire(ctx, false, 0, true)
	return err
}

// TryRLock takes a read hold if it can within wait (0: a single attempt).
// It returns (false, nil) when the lock stayed write-locked by another
// owner, and an error only for a failure (a bad argument, Redis
// unreachable, ctx ended: then wrapping ctx.Err()). A negative wait is an
// invalid argument.
func (rw *RWLock) TryRLock(ctx context.Context, wait time.Duration) (bool, error) {
	if err := rw.h.CheckWait(wait); err != nil {
		return false, err
	}
	return rw.acquire(ctx, false, wait, false)
}

// Lock takes the write hold, waiting as long as ctx allows. It succeeds
// when the lock is free, and at once when the caller's owner already holds
// the write side (hold count + 1). It waits while other owners hold read
// or write holds; a waiter is woken through pub/sub by the release that
// frees the lock, and re-checks at the latest when the holders' leases
// would end.
//
// When the caller's owner holds read holds but not the write side, Lock
// returns an error wrapping redisync.ErrUpgrade at once and changes
// nothing (Redisson waits for itself forever there). When ctx ends first,
// Lock returns an error wrapping ctx.Err() and holds nothing.
func (rw *RWLock) Lock(ctx context.Context) error {
	_, err := rw.acquire(ctx, true, 0, true)
	return err
}

// TryLock takes the write hold if it can within wait (0: a single attempt).
// It returns (false, nil) when other owners kept the lock, an error
// wrapping redisync.ErrUpgrade at once when the caller's owner holds only
// read holds, and other errors for failures as TryRLock does.
func (rw *RWLock) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	if err := rw.h.CheckWait(wait); err != nil {
		return false, err
	}
	return rw.acquire(ctx, true, wait, false)
}

func (rw *RWLock) acquire(ctx context.Context, write bool, wait time.Duration, forever bool) (bool, error) {
	owner, err := rw.h.Owner(ctx)
	if err != nil {
		return false, err
	}
	try := func(ctx context.Context) (bool, time.Duration, error) { return rw.tryRead(ctx, owner) }
	if write {
		try = func(ctx context.Context) (bool, time.Duration, error) { return rw.tryWrite(ctx, owner) }
	}
	ok, err := rw.h.C.Wait(ctx, core.WaitSpec{
		Channel: keys.RWChannel(rw.h.Name),
		Wake:    wake,
		Forever: forever,
		Wait:    wait,
		Try:     try,
	})
	if err != nil {
		return false, fmt.Errorf("rwlock %q: %w", rw.h.Name, err)
	}
	return ok, nil
}

// tryRead makes one read acquisition attempt. It returns the writer's
// remaining lease as the retry hint when the lock is write-locked.
func (rw *RWLock) tryRead(ctx context.Context, owner string) (bool, time.Duration, error) {
	lease := rw.lease()
	reqKey := keys.Request(rw.h.Name, rw.h.C.RequestID())
	prefix := keys.RWTimeoutPrefix(rw.h.Name, owner)
	sent := time.Now() // Redis starts the lease after this
	res, err := lua.RWReadAcquire.Run(ctx, rw.h.C.Redis(), []string{rw.h.Name, reqKey},
		lease.Milliseconds(), owner, rw.h.C.RequestTTLMillis(), keys.RWWriteField(owner), prefix).Int64Slice()
	if err != nil {
		if !core.IsReply(err) {
			rw.undo(ctx, false, owner, reqKey)
		}
		return false, 0, fmt.Errorf("read acquire: %w", err)
	}
	if len(res) < 2 {
		return false, 0, fmt.Errorf("read acquire: unexpected reply %v", res)
	}
	if res[0] != 1 {
		return false, core.RetryAfterPTTL(res[1]), nil
	}
	var renew *core.RenewSpec
	if rw.opts.lease == 0 {
		renew = &core.RenewSpec{Script: lua.RenewRead, Keys: []string{rw.h.Name}, Args: []any{owner, prefix}}
	}
	rw.setLatest(rw.h.C.AcquiredAt(sent, core.HoldKey{Key: rw.h.Name, Field: owner}, res[1], lease, renew))
	return true, 0, nil
}

// tryWrite makes one write acquisition attempt. It returns the holders'
// remaining lease as the retry hint when the lock is busy, and ErrUpgrade
// when the owner holds only read holds.
func (rw *RWLock) tryWrite(ctx context.Context, owner string) (bool, time.Duration, error) {
	lease := rw.lease()
	reqKey := keys.Request(rw.h.Name, rw.h.C.RequestID())
	field := keys.RWWriteField(owner)
	sent := time.Now() // Redis starts the lease after this
	res, err := lua.RWWriteAcquire.Run(ctx, rw.h.C.Redis(), []string{rw.h.Name, reqKey},
		lease.Milliseconds(), owner, rw.h.C.RequestTTLMillis(), field, keys.RWTimeoutPrefix(rw.h.Name, owner)).Int64Slice()
	if err != nil {
		if !core.IsReply(err) {
			rw.undo(ctx, true, owner, reqKey)
		}
		return false, 0, fmt.Errorf("write acquire: %w", err)
	}
	if len(res) < 2 {
		return false, 0, fmt.Errorf("write acquire: unexpected reply %v", res)
	}
	switch res[0] {
	case 1:
	case -1:
		return false, 0, fmt.Errorf("owner %s: %w", owner, redisync.ErrUpgrade)
	default:
		return false, core.RetryAfterPTTL(res[1]), nil
	}
	var renew *core.RenewSpec
	if rw.opts.lease == 0 {
		renew = &core.RenewSpec{Script: lua.RenewLock, Keys: []string{rw.h.Name}, Args: []any{field}}
	}
	rw.setLatest(rw.h.C.AcquiredAt(sent, core.HoldKey{Key: rw.h.Name, Field: field}, res[1], lease, renew))
	return true, 0, nil
}

func (rw *RWLock) setLatest(h *core.Hold) {
	rw.mu.Lock()
	rw.latest = h
	rw.mu.Unlock()
}

// runRelease sends a release of one read or write hold of owner; in undo
// mode, of the hold that the acquisition recorded under acquireKey took, if
// it took place.
func (rw *RWLock) runRelease(ctx context.Context, write bool, owner, reqKey, acquireKey string, undo bool) *redis.Cmd {
	head, tail := keys.RWTimeoutParts(rw.h.Name)
	mode := "0"
	if undo {
		mode = "1"
	}
	ks := []string{rw.h.Name, keys.RWChannel(rw.h.Name), reqKey, acquireKey}
	pub, err := rw.h.C.PublishCommand(ctx)
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	if write {
		return lua.RWWriteRelease.Run(ctx, rw.h.C.Redis(), ks,
			rw.lease().Milliseconds(), keys.RWWriteField(owner), rw.h.C.RequestTTLMillis(), msgWrite, mode, head, tail, pub)
	}
	return lua.RWReadRelease.Run(ctx, rw.h.C.Redis(), ks,
		rw.lease().Milliseconds(), owner, rw.h.C.RequestTTLMillis(), msgRead, mode, head, tail, pub)
}

// undo reverts an acquisition whose reply was lost (ctx ended, the
// connection broke): if it took place, one hold is released; if it has not
// yet, it is marked cancelled so a late copy does nothing.
func (rw *RWLock) undo(ctx context.Context, write bool, owner, acquireKey string) {
	ctx, cancel := rw.h.C.DetachedContext(ctx)
	defer cancel()
	reqKey := keys.Request(rw.h.Name, rw.h.C.RequestID())
	if err := rw.runRelease(ctx, write, owner, reqKey, acquireKey, true).Err(); err != nil {
		rw.h.C.Logger().Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
			"rwlock", rw.h.Name, "owner", owner, "write", write, "err", err)
	}
}

// RUnlock releases one read hold of the caller's owner. When the last read
// hold of the last reader goes, the lock is deleted and one waiting writer
// is woken. Renewal of the hold stops before the release is sent, whatever
// its outcome. RUnlock runs even when ctx is already cancelled (on a
// detached context with a bounded timeout), and a release re-sent by
// go-redis after a lost reply is applied once.
//
// It returns an error wrapping redisync.ErrNotHeld, and releases nothing,
// when the owner holds no live read hold: its lease ran out, someone
// force-unlocked the lock, or it never took one.
func (rw *RWLock) RUnlock(ctx context.Context) error { return rw.release(ctx, false) }

// Unlock releases one write hold of the caller's owner. The last one wakes
// every waiter: the lock is then free, or read-locked when the owner still
// holds read holds (a downgrade), and waiting readers get in at once.
// Renewal of the hold stops before the release is sent, whatever its
// outcome. Unlock runs even when ctx is already cancelled, and a release
// re-sent after a lost reply is applied once.
//
// It returns an error wrapping redisync.ErrNotHeld, and changes nothing,
// when the owner does not hold the write side.
func (rw *RWLock) Unlock(ctx context.Context) error { return rw.release(ctx, true) }

func (rw *RWLock) release(ctx context.Context, write bool) error {
	owner, err := rw.h.Owner(ctx)
	if err != nil {
		return err
	}
	side, field := "read", owner
	if write {
		side, field = "write", keys.RWWriteField(owner)
	}
	ctx, cancel := rw.h.C.DetachedContext(ctx)
	defer cancel()
	reqKey := keys.Request(rw.h.Name, rw.h.C.RequestID())
	remaining, err := rw.h.C.Release(core.HoldKey{Key: rw.h.Name, Field: field}, func() (int64, error) {
		return rw.runRelease(ctx, write, owner, reqKey, reqKey, false).Int64()
	})
	switch {
	case err != nil:
		return fmt.Errorf("rwlock %q: %s release: %w", rw.h.Name, side, err)
	case remaining < 0:
		return fmt.Errorf("rwlock %q: %s side, owner %s: %w", rw.h.Name, side, owner, redisync.ErrNotHeld)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, in either mode, together
// with the timeout keys of its read holds, and wakes every waiter. It
// reports whether the lock existed. Holders in this process see their holds
// end with ErrLockLost at once; holders elsewhere when their watchdog next
// renews, or when they unlock (ErrNotHeld).
func (rw *RWLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := rw.h.Check(); err != nil {
		return false, err
	}
	head, tail := keys.RWTimeoutParts(rw.h.Name)
	pub, err := rw.h.C.PublishCommand(ctx)
	if err != nil {
		return false, fmt.Errorf("rwlock %q: force unlock: %w", rw.h.Name, err)
	}
	n, err := lua.RWForceUnlock.Run(ctx, rw.h.C.Redis(),
		[]string{rw.h.Name, keys.RWChannel(rw.h.Name)}, head, tail, msgWrite, pub).Int64()
	if err != nil {
		return false, fmt.Errorf("rwlock %q: force unlock: %w", rw.h.Name, err)
	}
	rw.h.C.EndHolds(rw.h.Name, fmt.Errorf("%w: force-unlocked", redisync.ErrLockLost))
	return n == 1, nil
}

// mode returns the lock's mode field: "read", "write", or "" when free.
func (rw *RWLock) mode(ctx context.Context) (string, error) {
	if err := rw.h.Check(); err != nil {
		return "", err
	}
	m, err := rw.h.C.Redis().HGet(ctx, rw.h.Name, "mode").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("rwlock %q: %w", rw.h.Name, err)
	}
	return m, nil
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

// ReadHoldCount returns the caller's owner's read hold count: how many
// RUnlocks release its read side. It is 0 when the owner holds no live read
// hold.
func (rw *RWLock) ReadHoldCount(ctx context.Context) (int64, error) {
	owner, err := rw.h.Owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := lua.RWReadCount.Run(ctx, rw.h.C.Redis(), []string{rw.h.Name},
		owner, keys.RWTimeoutPrefix(rw.h.Name, owner)).Int64()
	if err != nil {
		return 0, fmt.Errorf("rwlock %q: %w", rw.h.Name, err)
	}
	return n, nil
}

// WriteHoldCount returns the caller's owner's write hold count: how many
// Unlocks release its write side. It is 0 when the owner does not hold it.
func (rw *RWLock) WriteHoldCount(ctx context.Context) (int64, error) {
	owner, err := rw.h.Owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := rw.h.C.Redis().HGet(ctx, rw.h.Name, keys.RWWriteField(owner)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("rwlock %q: %w", rw.h.Name, err)
	}
	return n, nil
}

// Done returns a channel closed when the hold of the latest acquisition
// through this handle, read or write, ends: by its final release, or by a
// loss (the watchdog found it gone, no renewal succeeded within the lease,
// the fixed lease ran out, a ForceUnlock, Close). Before the first
// acquisition it is closed. Use it to stop work the lock guards: a Redis
// lock is a lease, not a mutex.
func (rw *RWLock) Done() <-chan struct{} {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.latest.Done()
}

// Err returns nil while the hold of the latest acquisition through this
// handle lasts; after its final release, or before any acquisition, an
// error wrapping redisync.ErrNotHeld; after a loss, one wrapping
// redisync.ErrLockLost.
func (rw *RWLock) Err() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.latest.Err()
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
