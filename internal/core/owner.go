package core

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/hold"
)

// Owner tokens. An owner is "<client id>:<token>". Tokens are random 63-bit
// numbers (never 0), so that two processes given the same client id
// (WithID) do not hand out the same owners: with tokens counted from 1 in
// every process, both processes' first owners were "<id>:1" and held one
// lock at once. Within a process they are also distinct: NewToken maps a
// sequence number, offset by a random key drawn at start, through a
// bijection of the 63-bit numbers (mix63), so no token repeats before 2^63
// of them have been handed out.
var (
	tokenSeq atomic.Uint64
	tokenKey = rand.Uint64()
)

// tokenMask keeps the low 63 bits: tokens are positive as int64 too.
const tokenMask = 1<<63 - 1

// mix63 is a bijection of [0, 2^63): xor-shifts and multiplications by odd
// constants modulo 2^63, each invertible, that scatter consecutive inputs
// over the whole range.
func mix63(x uint64) uint64 {
	x &= tokenMask
	x ^= x >> 31
	x = (x * 0x7fb5d329728ea185) & tokenMask
	x ^= x >> 27
	x = (x * 0x41c64e6da3bc0075) & tokenMask
	x ^= x >> 33
	return x
}

// minToken is the least token NewToken returns: below it lie the fresh
// holds' owners (FreshToken), which must never be a context owner's or a
// handle's. A random 63-bit number falls below it once in 2^21 draws, and is
// then drawn again.
const minToken = 1 << 42

// NewToken returns a fresh owner token: random-looking, 63 bits, at least
// minToken (so never 0), and distinct from every other token of the
// process.
func NewToken() uint64 {
	for {
		if t := mix63(tokenSeq.Add(1) + tokenKey); t >= minToken {
			return t
		}
	}
}

// freshSeq numbers the fresh holds' owners of the process (FreshToken).
var freshSeq atomic.Uint64

type ownerKey struct{}

// WithOwnerToken returns ctx carrying owner token t.
func WithOwnerToken(ctx context.Context, t uint64) context.Context {
	return context.WithValue(ctx, ownerKey{}, t)
}

// OwnerToken returns the owner token ctx carries and whether it carries one.
func OwnerToken(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(ownerKey{}).(uint64)
	return t, ok
}

// ownerName returns the owner "<client id>:<token>" of token in the
// client called id.
func ownerName(id string, token uint64) string {
	return id + ":" + strconv.FormatUint(token, 10)
}

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
