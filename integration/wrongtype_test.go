package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// lockKind is what TestWrongType runs on each kind of lock of package rlock.
type lockKind interface {
	redisync.Locker
	ForceUnlock(context.Context) (bool, error)
	HoldCount(context.Context) (int64, error)
	IsLocked(context.Context) (bool, error)
	TTL(context.Context) (time.Duration, error)
	Inspect(context.Context) (rlock.Info, error)
}

// Regression (issue 25): a key of another type gave raw script errors
// ("WRONGTYPE … script: a0cc95b7…, on @user_script:218", "attempt to compare
// number with nil"). Every primitive's operations on such a key return an
// error wrapping ErrWrongType, and change nothing in Redis.
func TestWrongType(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, rdb)
	owner := redisync.WithOwner(context.Background())
	bg := context.Background()

	type op struct {
		what string
		run  func(ctx context.Context, name string) error
	}
	err1 := func(_ any, err error) error { return err }
	err2 := func(_, _ any, err error) error { return err }
	locks := func(kind string, mk func(name string) lockKind) []op {
		return []op{
			{kind + " Lock", func(ctx context.Context, n string) error { return mk(n).Lock(ctx) }},
			{kind + " owner Lock", func(ctx context.Context, n string) error { return mk(n).Lock(owner) }},
			{kind + " TryLock", func(ctx context.Context, n string) error { return err1(mk(n).TryLock(ctx, 0)) }},
			{kind + " HoldCount", func(ctx context.Context, n string) error { return err1(mk(n).HoldCount(owner)) }},
			{kind + " ForceUnlock", func(ctx context.Context, n string) error { return err1(mk(n).ForceUnlock(ctx)) }},
			{kind + " IsLocked", func(ctx context.Context, n string) error { return err1(mk(n).IsLocked(ctx)) }},
			{kind + " TTL", func(ctx context.Context, n string) error { return err1(mk(n).TTL(ctx)) }},
			{kind + " Inspect", func(ctx context.Context, n string) error { return err1(mk(n).Inspect(ctx)) }},
		}
	}
	var ops []op
	ops = append(ops, locks("lock", func(n string) lockKind { return rlock.New(c, n) })...)
	ops = append(ops, locks("fair lock", func(n string) lockKind { return rlock.NewFair(c, n) })...)
	ops = append(ops, locks("spin lock", func(n string) lockKind { return rlock.NewSpin(c, n) })...)
	ops = append(ops,
		op{"rwlock RLock", func(ctx context.Context, n string) error { return rwlock.New(c, n).RLock(ctx) }},
		op{"rwlock owner RLock", func(ctx context.Context, n string) error { return rwlock.New(c, n).RLock(owner) }},
		op{"rwlock Lock", func(ctx context.Context, n string) error { return rwlock.New(c, n).Lock(ctx) }},
		op{"rwlock owner Lock", func(ctx context.Context, n string) error { return rwlock.New(c, n).Lock(owner) }},
		op{"rwlock ReadHoldCount", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).ReadHoldCount(owner)) }},
		op{"rwlock WriteHoldCount", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).WriteHoldCount(owner)) }},
		op{"rwlock ForceUnlock", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).ForceUnlock(ctx)) }},
		op{"rwlock IsReadLocked", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).IsReadLocked(ctx)) }},
		op{"rwlock IsWriteLocked", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).IsWriteLocked(ctx)) }},
		op{"rwlock Inspect", func(ctx context.Context, n string) error { return err1(rwlock.New(c, n).Inspect(ctx)) }},
		op{"semaphore TryAcquire", func(ctx context.Context, n string) error { return err1(semaphore.New(c, n).TryAcquire(ctx, 1, 0)) }},
		op{"semaphore Release", func(ctx context.Context, n string) error { return semaphore.New(c, n).Release(ctx, 1) }},
		op{"semaphore TrySetPermits", func(ctx context.Context, n string) error { return err1(semaphore.New(c, n).TrySetPermits(ctx, 1)) }},
		op{"semaphore AddPermits", func(ctx context.Context, n string) error { return semaphore.New(c, n).AddPermits(ctx, 1) }},
		op{"semaphore AvailablePermits", func(ctx context.Context, n string) error { return err1(semaphore.New(c, n).AvailablePermits(ctx)) }},
		op{"semaphore DrainPermits", func(ctx context.Context, n string) error { return err1(semaphore.New(c, n).DrainPermits(ctx)) }},
		op{"semaphore Delete", func(ctx context.Context, n string) error { return err1(semaphore.New(c, n).Delete(ctx)) }},
		op{"expirable TryAcquire", func(ctx context.Context, n string) error {
			return err2(semaphore.NewExpirable(c, n).TryAcquire(ctx, 0, time.Minute))
		}},
		op{"expirable TrySetPermits", func(ctx context.Context, n string) error {
			return err1(semaphore.NewExpirable(c, n).TrySetPermits(ctx, 1))
		}},
		op{"expirable SetPermits", func(ctx context.Context, n string) error { return semaphore.NewExpirable(c, n).SetPermits(ctx, 1) }},
		op{"expirable AddPermits", func(ctx context.Context, n string) error { return semaphore.NewExpirable(c, n).AddPermits(ctx, 1) }},
		op{"expirable AvailablePermits", func(ctx context.Context, n string) error {
			return err1(semaphore.NewExpirable(c, n).AvailablePermits(ctx))
		}},
		op{"expirable Permits", func(ctx context.Context, n string) error { return err1(semaphore.NewExpirable(c, n).Permits(ctx)) }},
		op{"expirable AcquiredPermits", func(ctx context.Context, n string) error {
			return err1(semaphore.NewExpirable(c, n).AcquiredPermits(ctx))
		}},
		op{"expirable Delete", func(ctx context.Context, n string) error { return err1(semaphore.NewExpirable(c, n).Delete(ctx)) }},
		op{"latch TrySetCount", func(ctx context.Context, n string) error { return err1(countdown.New(c, n).TrySetCount(ctx, 1)) }},
		op{"latch CountDown", func(ctx context.Context, n string) error { return countdown.New(c, n).CountDown(ctx) }},
		op{"latch Count", func(ctx context.Context, n string) error { return err1(countdown.New(c, n).Count(ctx)) }},
		op{"latch TryWait", func(ctx context.Context, n string) error { return err1(countdown.New(c, n).TryWait(ctx, 0)) }},
		op{"latch Delete", func(ctx context.Context, n string) error { return err1(countdown.New(c, n).Delete(ctx)) }},
	)
	// Keys of the wrong type: a string that is not a number, a list, and
	// an application's hash (for the locks too: issue 40 item 7, where
	// TryLock was false, Lock waited forever, IsLocked was true and
	// ForceUnlock deleted the hash).
	setups := map[string]func(ctx context.Context, name string) error{
		"string": func(ctx context.Context, n string) error { return rdb.Set(ctx, n, "not a number", 0).Err() },
		"list":   func(ctx context.Context, n string) error { return rdb.RPush(ctx, n, "a").Err() },
		"hash":   func(ctx context.Context, n string) error { return rdb.HSet(ctx, n, "email", "x@example.com").Err() },
	}
	for _, o := range ops {
		for kind, setup := range setups {
			// A hash is a lock's Redis type, but an application's hash
			// (issue 40 item 7: fields that are no owners) is no lock.
			t.Run(o.what+" on a "+kind, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				defer cancel()
				name := redistest.Key(t)
				require.NoError(t, setup(ctx, name))
				before := redistest.Snapshot(t, rdb, name)
				err := o.run(ctx, name)
				require.Error(t, err)
				assert.ErrorIs(t, err, redisync.ErrWrongType)
				assert.NotContains(t, err.Error(), "script")
				assert.NotContains(t, err.Error(), "attempt to")
				assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "nothing changed")
			})
		}
	}
	// The fencing counter of another type (a fenced lock's second key):
	// the acquisition fails before it writes anything. It used to write the
	// lock hash first and fail at the INCR, leaving the caller's field with
	// a 30 s lease that nobody renewed.
	fenced := func(kind string, mk func(name string) lockKind) []op {
		return []op{
			{kind + " fenced Lock", func(ctx context.Context, n string) error { return mk(n).Lock(ctx) }},
			{kind + " fenced owner Lock", func(ctx context.Context, n string) error { return mk(n).Lock(owner) }},
			{kind + " fenced TryLock", func(ctx context.Context, n string) error { return err1(mk(n).TryLock(ctx, 0)) }},
		}
	}
	var fencedOps []op
	fencedOps = append(fencedOps, fenced("lock", func(n string) lockKind { return rlock.New(c, n, rlock.WithFencing()) })...)
	fencedOps = append(fencedOps, fenced("fair lock", func(n string) lockKind { return rlock.NewFair(c, n, rlock.WithFencing()) })...)
	fencedOps = append(fencedOps, fenced("spin lock", func(n string) lockKind { return rlock.NewSpin(c, n, rlock.WithFencing()) })...)
	counterSetups := map[string]func(ctx context.Context, counter string) error{
		"hash":   func(ctx context.Context, k string) error { return rdb.HSet(ctx, k, "email", "x@example.com").Err() },
		"list":   func(ctx context.Context, k string) error { return rdb.RPush(ctx, k, "a").Err() },
		"string": func(ctx context.Context, k string) error { return rdb.Set(ctx, k, "not a number", 0).Err() },
	}
	for _, o := range fencedOps {
		for kind, setup := range counterSetups {
			t.Run(o.what+" with a "+kind+" counter", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				defer cancel()
				name := redistest.Key(t)
				require.NoError(t, setup(ctx, "redisson_lock_token:{"+name+"}"))
				before := redistest.Snapshot(t, rdb, name)
				err := o.run(ctx, name)
				require.Error(t, err)
				assert.ErrorIs(t, err, redisync.ErrWrongType)
				assert.NotContains(t, err.Error(), "script")
				assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "nothing changed")
				assert.Zero(t, rdb.Exists(ctx, name).Val(), "no lock hash left behind")
			})
		}
	}
}
