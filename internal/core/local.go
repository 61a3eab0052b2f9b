package core

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
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
// holds' owners ([freshToken]), which must never be a context owner's or a
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

// freshSeq numbers the fresh holds' owners of the process ([freshToken]).
var freshSeq atomic.Uint64

type ownerKey struct{}

// WithOwnerToken returns ctx carrying owner token t.
func WithOwnerToken(ctx context.Context, t uint64) context.Context {
	return context.WithValue(ctx, ownerKey{}, t)
}

// OwnerToken returns the owner token ctx carries and whether it carries
// one. A nil ctx carries none (the operation's check then refuses it:
// [Handle.Check]).
func OwnerToken(ctx context.Context) (uint64, bool) {
	if ctx == nil {
		return 0, false
	}
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
	m  map[HoldKey]*ownerLock
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
func (o *ownerLocks) lock(ctx context.Context, k HoldKey) (*ownerLock, error) {
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
func (o *ownerLocks) tryLock(k HoldKey) (*ownerLock, bool) {
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
func (o *ownerLocks) ref(k HoldKey) *ownerLock {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[HoldKey]*ownerLock)
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
func (o *ownerLocks) unlock(k HoldKey, ol *ownerLock) {
	<-ol.sem
	o.drop(k, ol)
}

// drop gives up one reference to k's lock ol, forgetting it with the last.
func (o *ownerLocks) drop(k HoldKey, ol *ownerLock) {
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

// Gate is a lock handle's local read-write gate for callers without a
// context owner. Such callers all act for the handle's own owner, which
// Redis would let re-enter; the gate makes them exclude each other as
// sync.RWMutex's callers do: one exclusive holder (a lock, a write side) or
// any number of shared ones (read sides). Callers wait in arrival order,
// locally, without touching Redis; a waiting exclusive caller keeps later
// shared ones out, so writers are not starved. The zero value is an open
// gate.
type Gate struct {
	mu      sync.Mutex
	readers int  // shared holders
	writer  bool // an exclusive holder
	q       []*gateWaiter
}

type gateWaiter struct {
	shared bool
	ready  chan struct{} // closed when admitted
}

// admits reports whether a caller may pass now. g.mu must be held.
func (g *Gate) admits(shared bool) bool {
	if shared {
		return !g.writer
	}
	return !g.writer && g.readers == 0
}

func (g *Gate) take(shared bool) {
	if shared {
		g.readers++
	} else {
		g.writer = true
	}
}

// Enter passes the gate: at once when it admits the caller and nobody
// waits; otherwise after the callers before it, waiting as long as ctx,
// closing and (unless forever) wait allow. wait 0 and no admission gives
// (false, nil) at once. It returns (false, nil) when the wait ran out and
// an error wrapping ctx.Err() (or [errs.ErrClosed]) when ctx ended or the client
// closed; then it holds nothing and has left the queue.
func (g *Gate) Enter(ctx context.Context, shared, forever bool, wait time.Duration, closing <-chan struct{}) (bool, error) {
	g.mu.Lock()
	if len(g.q) == 0 && g.admits(shared) {
		g.take(shared)
		g.mu.Unlock()
		return true, nil
	}
	if !forever && wait <= 0 {
		g.mu.Unlock()
		return false, nil
	}
	w := &gateWaiter{shared: shared, ready: make(chan struct{})}
	g.q = append(g.q, w)
	g.mu.Unlock()

	var timeout <-chan time.Time
	if !forever {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case <-w.ready:
		return true, nil
	case <-timeout:
	case <-ctx.Done():
		err = errs.CtxError(ctx)
	case <-closing:
		err = errs.ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // admitted meanwhile: give the place back
		g.leaveLocked(shared)
	default:
		for i, o := range g.q {
			if o == w {
				g.q = append(g.q[:i], g.q[i+1:]...)
				break
			}
		}
		g.admitLocked() // a waiting writer that gave up may unblock readers
	}
	return false, err
}

// Holds reports whether the gate has a holder of the given kind.
func (g *Gate) Holds(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		return g.readers > 0
	}
	return g.writer
}

// Leave gives one place back and admits the callers it unblocks. It
// reports false, changing nothing, when there was no such holder.
func (g *Gate) Leave(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leaveLocked(shared)
}

func (g *Gate) leaveLocked(shared bool) bool {
	switch {
	case shared && g.readers > 0:
		g.readers--
	case !shared && g.writer:
		g.writer = false
	default:
		return false
	}
	g.admitLocked()
	return true
}

// admitLocked admits waiters from the head of the queue while the gate
// admits them. g.mu must be held.
func (g *Gate) admitLocked() {
	for len(g.q) > 0 && g.admits(g.q[0].shared) {
		w := g.q[0]
		g.q = g.q[1:]
		g.take(w.shared)
		close(w.ready)
	}
}

// queued returns the number of callers waiting to pass, for tests.
func (g *Gate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.q)
}

// freshToken returns the token of a fresh hold's owner (see Lock): a
// sequence number of the process plus base, a random number drawn for the
// client (its freshBase, between 2^40 and 2^41). A fresh owner is made for every
// acquisition attempt, so the cheap sequence serves; the random base keeps
// a process restarted with the same client id (WithID) from giving its
// first holds the owners whose holds and marks its predecessor left in
// Redis. Fresh tokens stay below minToken (2^41 holds would be needed to
// reach it), apart from every NewToken, and short (13 digits) in the keys
// that carry them.
func freshToken(base uint64) uint64 { return base + freshSeq.Add(1) }

// HoldKey names a hold: the Redis hash and the owner's field in it.
type HoldKey struct {
	Key   string // the hash (the primitive's name)
	Field string // the owner's field: "<client id>:<token>" or "<...>:write"
}

// empty reports whether the gate has neither holder nor waiter.
func (g *Gate) empty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readers == 0 && !g.writer && len(g.q) == 0
}
