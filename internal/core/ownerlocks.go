package core

import (
	"context"
	"sync"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/hold"
)

// ownerLocks serialize the operations of one owner on one lock in a client,
// so that the hold count each sends is exact (and an undo in the background
// finishes before the owner's next operation).
type ownerLocks struct {
	mu sync.Mutex
	m  map[hold.Key]*ownerLock
}

type ownerLock struct {
	sem  chan struct{} // holds a value while locked
	refs int
}

// ownerLockPool recycles ownerLocks: one is taken and dropped per
// operation, and an unreferenced one is unlocked and reusable.
var ownerLockPool = sync.Pool{New: func() any { return &ownerLock{sem: make(chan struct{}, 1)} }}

// lock locks k, waiting as long as ctx allows, and returns the lock to
// unlock with o.unlock; when ctx ends first it returns an error wrapping
// ctx.Err() and holds nothing.
func (o *ownerLocks) lock(ctx context.Context, k hold.Key) (*ownerLock, error) {
	ol := o.ref(k)
	select {
	case ol.sem <- struct{}{}:
	default:
		select {
		case ol.sem <- struct{}{}:
		case <-ctx.Done():
			o.drop(k, ol)
			return nil, errs.CtxError(ctx)
		}
	}
	return ol, nil
}

// tryLock locks k if it is not locked, without waiting.
func (o *ownerLocks) tryLock(k hold.Key) (*ownerLock, bool) {
	ol := o.ref(k)
	select {
	case ol.sem <- struct{}{}:
		return ol, true
	default:
		o.drop(k, ol)
		return nil, false
	}
}

// ref returns k's lock, made if needed, with one more reference (drop
// gives it up).
func (o *ownerLocks) ref(k hold.Key) *ownerLock {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[hold.Key]*ownerLock)
	}
	ol := o.m[k]
	if ol == nil {
		ol = ownerLockPool.Get().(*ownerLock)
		o.m[k] = ol
	}
	ol.refs++
	return ol
}

// unlock unlocks k, locked as ol by lock.
func (o *ownerLocks) unlock(k hold.Key, ol *ownerLock) {
	<-ol.sem
	o.drop(k, ol)
}

// drop gives up one reference to k's lock ol, forgetting it with the last.
func (o *ownerLocks) drop(k hold.Key, ol *ownerLock) {
	o.mu.Lock()
	ol.refs--
	last := ol.refs == 0
	if last {
		delete(o.m, k)
	}
	o.mu.Unlock()
	if last {
		ownerLockPool.Put(ol) // unlocked: its last holder unlocked it first
	}
}
