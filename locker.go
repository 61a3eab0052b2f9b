package redisync

import (
	"context"
	"time"
)

// Locker is a distributed lock: rlock.Lock, rwlock.RWLock (its write side),
// the views of rwlock.RWLock.ReadLocker and WriteLocker, and
// multilock.MultiLock implement it.
type Locker interface {
	// Lock waits until the lock is acquired or ctx is done; then it returns
	// an error wrapping ctx.Err() and holds nothing.
	Lock(ctx context.Context) error
	// TryLock waits at most wait (0: a single attempt) and reports whether
	// the lock was acquired. It returns (false, nil) when the lock stayed
	// busy; errors are for failures.
	TryLock(ctx context.Context, wait time.Duration) (bool, error)
	// Unlock releases one hold. It runs even when ctx is already cancelled
	// and returns ErrNotHeld when the caller's owner does not hold the lock.
	Unlock(ctx context.Context) error
}
