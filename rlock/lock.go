package rlock

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
	"github.com/redisync/redisync/pubsub"
)

// Lock is a reentrant distributed lock on Redis, compatible with Redisson's
// RLock (and RFencedLock with WithFencing). It is a handle: creating one does
// no I/O, and it is safe for concurrent use. By default the handle is its own
// owner; a context from redisync.WithOwner makes the call act for the owner
// the context carries instead.
type Lock struct {
	h    core.Handle
	opts options

	mu     sync.Mutex
	latest *core.Hold // the hold of the latest acquisition through this handle
	fence  int64      // its fencing token
}

// New returns a handle on the lock called name. It does no I/O and never
// fails: an empty name or an invalid option is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string, opts ...Option) *Lock {
	l := &Lock{h: core.NewHandle(c, "rlock", name)}
	for _, opt := range opts {
		if opt != nil {
			opt(&l.opts)
		}
	}
	l.h.OptErr = l.opts.err
	return l
}

// Name returns the lock's name, which is also its Redis key.
func (l *Lock) Name() string { return l.h.Name }

func (l *Lock) lease() time.Duration { return l.h.Lease(l.opts.lease) }

// Lock acquires the lock, waiting as long as ctx allows. A waiter is woken
// by the holder's release through pub/sub and re-checks at the latest when
// the holder's lease would end, so it never polls. If the caller's owner
// already holds the lock, Lock re-enters it at once (hold count + 1).
//
// On success the lock is held until the matching Unlock, renewed by the
// watchdog, or for the fixed lease of WithLease. When ctx ends first, Lock
// returns an error wrapping ctx.Err() and holds nothing: an acquisition
// whose reply was lost is undone.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.acquire(ctx, 0, true)
	return err
}

// TryLock acquires the lock if it can within wait (0: a single attempt). It
// returns (false, nil) when the lock stayed busy, and an error only for a
// failure (a bad argument, Redis unreachable, ctx ended: then wrapping
// ctx.Err()). A negative wait is an invalid argument.
func (l *Lock) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	if err := l.h.CheckWait(wait); err != nil {
		return false, err
	}
	return l.acquire(ctx, wait, false)
}

func (l *Lock) acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	owner, err := l.h.Owner(ctx)
	if err != nil {
		return false, err
	}
	ok, err := l.h.C.Wait(ctx, core.WaitSpec{
		Channel: keys.LockChannel(l.h.Name),
		Wake:    pubsub.WakeOne,
		Forever: forever,
		Wait:    wait,
		Try:     func(ctx context.Context) (bool, time.Duration, error) { return l.try(ctx, owner) },
	})
	if err != nil {
		return false, fmt.Errorf("rlock %q: %w", l.h.Name, err)
	}
	return ok, nil
}

// try makes one acquisition attempt. It returns the holder's remaining
// lease as the retry hint when the lock is busy.
func (l *Lock) try(ctx context.Context, owner string) (bool, time.Duration, error) {
	lease := l.lease()
	reqKey := keys.Request(l.h.Name, l.h.C.RequestID())
	fencing := "0"
	if l.opts.fencing {
		fencing = "1"
	}
	sent := time.Now()
	res, err := lua.LockAcquire.Run(ctx, l.h.C.Redis(),
		[]string{l.h.Name, reqKey, keys.FenceCounter(l.h.Name)},
		lease.Milliseconds(), owner, l.h.C.RequestTTLMillis(), fencing).Int64Slice()
	if err != nil {
		if !core.IsReply(err) {
			l.undo(ctx, owner, reqKey)
		}
		return false, 0, fmt.Errorf("acquire: %w", err)
	}
	if len(res) < 2 {
		return false, 0, fmt.Errorf("acquire: unexpected reply %v", res)
	}
	if res[0] != 1 {
		return false, core.RetryAfterPTTL(res[1]), nil
	}
	var renew *core.RenewSpec
	if l.opts.lease == 0 {
		renew = &core.RenewSpec{Script: lua.RenewLock, Keys: []string{l.h.Name}, Args: []any{owner}}
	}
	h := l.h.C.AcquiredAt(sent, core.HoldKey{Key: l.h.Name, Field: owner}, res[1], lease, renew)
	l.mu.Lock()
	l.latest = h
	if len(res) > 2 {
		l.fence = res[2]
	}
	l.mu.Unlock()
	return true, 0, nil
}

// undo reverts an acquisition whose reply was lost (ctx ended, the
// connection broke): if it took place, one hold is released; if it has not
// yet, it is marked cancelled so a late copy does nothing.
func (l *Lock) undo(ctx context.Context, owner, acquireKey string) {
	ctx, cancel := l.h.C.DetachedContext(ctx)
	defer cancel()
	reqKey := keys.Request(l.h.Name, l.h.C.RequestID())
	pub, err := l.h.C.PublishCommand(ctx)
	if err == nil {
		err = lua.LockRelease.Run(ctx, l.h.C.Redis(),
			[]string{l.h.Name, keys.LockChannel(l.h.Name), reqKey, acquireKey},
			l.lease().Milliseconds(), owner, l.h.C.RequestTTLMillis(), "0", "1", pub).Err()
	}
	if err != nil {
		l.h.C.Logger().Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
			"lock", l.h.Name, "owner", owner, "err", err)
	}
}

// Unlock releases one hold of the caller's owner: the hold count drops by
// one, and at zero the lock is deleted and its waiters are woken. Renewal of
// the hold stops before the release is sent, whatever its outcome. Unlock
// runs even when ctx is already cancelled (on a detached context with a
// bounded timeout), so a deferred Unlock after a cancelled request still
// releases.
//
// It returns an error wrapping redisync.ErrNotHeld, and changes nothing,
// when the owner does not hold the lock: its lease ran out, someone
// force-unlocked it, another owner holds it, or it was never acquired. A
// release re-sent by go-redis after a lost reply is applied once.
func (l *Lock) Unlock(ctx context.Context) error {
	owner, err := l.h.Owner(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := l.h.C.DetachedContext(ctx)
	defer cancel()
	reqKey := keys.Request(l.h.Name, l.h.C.RequestID())
	remaining, err := l.h.C.Release(core.HoldKey{Key: l.h.Name, Field: owner}, func() (int64, error) {
		pub, err := l.h.C.PublishCommand(ctx)
		if err != nil {
			return 0, err
		}
		return lua.LockRelease.Run(ctx, l.h.C.Redis(),
			[]string{l.h.Name, keys.LockChannel(l.h.Name), reqKey, reqKey},
			l.lease().Milliseconds(), owner, l.h.C.RequestTTLMillis(), "0", "0", pub).Int64()
	})
	switch {
	case err != nil:
		return fmt.Errorf("rlock %q: release: %w", l.h.Name, err)
	case remaining < 0:
		return fmt.Errorf("rlock %q: owner %s: %w", l.h.Name, owner, redisync.ErrNotHeld)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether the lock existed. Holders in this process see their hold
// end with ErrLockLost at once; holders elsewhere when their watchdog next
// renews, or when they unlock (ErrNotHeld).
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.h.Check(); err != nil {
		return false, err
	}
	pub, err := l.h.C.PublishCommand(ctx)
	if err != nil {
		return false, fmt.Errorf("rlock %q: force unlock: %w", l.h.Name, err)
	}
	n, err := lua.LockForceUnlock.Run(ctx, l.h.C.Redis(),
		[]string{l.h.Name, keys.LockChannel(l.h.Name)}, "0", pub).Int64()
	if err != nil {
		return false, fmt.Errorf("rlock %q: force unlock: %w", l.h.Name, err)
	}
	l.h.C.EndHolds(l.h.Name, fmt.Errorf("%w: force-unlocked", redisync.ErrLockLost))
	return n == 1, nil
}

// IsLocked reports whether any owner holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := l.h.Check(); err != nil {
		return false, err
	}
	n, err := l.h.C.Redis().Exists(ctx, l.h.Name).Result()
	if err != nil {
		return false, fmt.Errorf("rlock %q: %w", l.h.Name, err)
	}
	return n == 1, nil
}

// IsHeld reports whether the caller's owner holds the lock.
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns the caller's owner's hold count: how many Unlocks free
// the lock. It is 0 when the owner does not hold it.
func (l *Lock) HoldCount(ctx context.Context) (int64, error) {
	owner, err := l.h.Owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := l.h.C.Redis().HGet(ctx, l.h.Name, owner).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("rlock %q: %w", l.h.Name, err)
	}
	return n, nil
}

// TTL returns the lock's remaining lease: 0 when the lock does not exist,
// -1ns when it exists without an expiry (which redisync never sets).
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.h.Check(); err != nil {
		return 0, err
	}
	d, err := l.h.C.Redis().PTTL(ctx, l.h.Name).Result()
	if err != nil {
		return 0, fmt.Errorf("rlock %q: %w", l.h.Name, err)
	}
	switch {
	case d == -2 || d == -2*time.Millisecond:
		return 0, nil
	case d < 0:
		return -1, nil
	}
	return d, nil
}

// Token returns the fencing token of the latest acquisition through this
// handle, or 0 without WithFencing or before the first acquisition.
func (l *Lock) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fence
}

// Done returns a channel closed when the hold of the latest acquisition
// through this handle ends: by its final Unlock, or by a loss (the watchdog
// found it gone, no renewal succeeded within the lease, the fixed lease ran
// out, a ForceUnlock, Close). Before the first acquisition it is closed. Use
// it to stop work the lock guards: a Redis lock is a lease, not a mutex.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest.Done()
}

// Err returns nil while the hold of the latest acquisition through this
// handle lasts; after its final Unlock, or before any acquisition, an error
// wrapping redisync.ErrNotHeld; after a loss, one wrapping
// redisync.ErrLockLost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest.Err()
}

var _ redisync.Locker = (*Lock)(nil)
