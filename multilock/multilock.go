package multilock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core/errs"
)

// MultiLock is a set of locks taken as one: by New, a lock held when every
// member is held (Redisson's MultiLock); by NewRedLock, a lock held when a
// majority of members is held (Redisson's RedLock). Members are any
// redisync.Locker: rlock.Lock, rwlock.RWLock, the read or write side of an
// rwlock.RWLock, another MultiLock, on one Redis or several.
//
// A MultiLock keeps no lease of its own: each member keeps its own lease,
// watchdog renewal and Done channel.
//
// A MultiLock takes all its members for one owner: the owner ctx carries
// (redisync.WithOwner), or else an owner of its own, new for each hold
// (as a Java thread is one owner for all the members of a Redisson
// MultiLock). So a member named twice — New(l, l), or two handles on one
// name — is re-entered, not waited for, and Unlock releases each member as
// many times as it was taken. Without an owner in ctx, a MultiLock is a
// distributed sync.Mutex, as an rlock.Lock handle is: goroutines that
// share it exclude each other, a second Lock waits for the first hold to
// be released, and Unlock releases the hold taken without an owner, from
// any goroutine. With an owner in ctx it re-enters what that owner holds,
// through the MultiLock or through the members directly.
//
// A MultiLock is safe for concurrent use.
type MultiLock struct {
	g    *group   // the members, shared with take
	take strategy // every member (allOf) or a majority (redLock)
	err  error    // invalid construction, reported by every call

	mu sync.Mutex
	// own is the owner token of the hold taken without an owner in ctx,
	// which such an Unlock releases; 0 when there is none.
	own uint64
}

// strategy is how a MultiLock takes and releases its members. The
// MultiLock checks its own arguments and ctx first; a strategy does the
// rest.
type strategy interface {
	// acquire takes the members, waiting up to wait, or as long as ctx
	// allows when forever, and reports whether it did (see TryLock).
	acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error)
	// unlock releases the members (see Unlock).
	unlock(ctx context.Context) error
}

// New returns a MultiLock that is held when every one of locks is held:
// Lock takes them all or none. Use it to guard several resources at once,
// such as both accounts of a transfer. New does no I/O and never fails: no
// locks, or a nil one, is reported, wrapping redisync.ErrInvalidArgument, by
// the first call.
func New(locks ...redisync.Locker) *MultiLock {
	g := newGroup("multilock", locks)
	return &MultiLock{g: g, take: allOf{g}, err: g.check()}
}

// NewRedLock returns a MultiLock that is held when a majority of locks
// (len(locks)/2 + 1) is held: the Redlock algorithm, for locks on
// independent Redis masters, tolerating the failure of a minority of them.
// Read the package documentation on its limits before relying on it.
// NewRedLock does no I/O and never fails: no locks, or a nil one, is
// reported, wrapping redisync.ErrInvalidArgument, by the first call.
func NewRedLock(locks ...redisync.Locker) *MultiLock {
	g := newGroup("redlock", locks)
	return &MultiLock{g: g, take: newRedLock(g), err: g.check()}
}

// Lock acquires the MultiLock, waiting as long as ctx allows.
//
// From New: members are tried in order, each without waiting. When one is
// busy, those taken are released and Lock waits for the busy one alone,
// through that member's own wait (pub/sub, no polling); once it has it, it
// tries the others again. It never waits for one member while holding
// others, so two MultiLocks over the same members, in any order, cannot
// deadlock. A member's error other than busy (Redis unreachable, a bad
// argument) ends Lock at once with that error, after releasing what it took.
//
// From NewRedLock: Lock returns when a majority is held, and then holds
// every member it got; failed or unreachable members are tolerated. See the
// package documentation for the algorithm and its limits.
//
// When ctx ends first, Lock returns an error wrapping ctx.Err() and holds no
// member.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (m *MultiLock) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, 0, true)
	return err
}

// TryLock acquires the MultiLock if it can within wait, as Lock does, and
// reports whether it did. TryLock(ctx, 0) makes one attempt: each member is
// tried once, without waiting. It returns (false, nil) when members stayed
// busy, having released those it took; an error is for a failure (a bad
// argument, ctx ended: then wrapping ctx.Err(); from New, any member's
// error; from NewRedLock, so many members failing that no majority could
// be reached). A negative wait is an invalid argument.
//
// From NewRedLock, every step is bounded by a share of wait (see the
// package documentation), so an unresponsive server does not keep TryLock
// past wait.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. From New, the passes over the members are
// single attempts (TryLock(ctx, 0)), which the wait does not cut; waiting
// for a busy member is that member's TryLock, which it cuts: see “Wait
// bounds” in [redisync].
func (m *MultiLock) TryLock(ctx context.Context, wait time.Duration) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	if wait < 0 {
		return false, fmt.Errorf("%w: %s: negative wait %v", redisync.ErrInvalidArgument, m.g.kind, wait)
	}
	return m.acquire(ctx, wait, false)
}

func (m *MultiLock) acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("%s: %w", m.g.kind, errs.CtxError(ctx))
	}
	if _, ok := redisync.OwnerToken(ctx); ok {
		return m.take.acquire(ctx, wait, forever)
	}
	// One owner for every member, new for this hold: a member named twice
	// is re-entered, and contenders without an owner (each with one of
	// their own) exclude each other in Redis.
	ctx = redisync.WithOwner(ctx)
	ok, err := m.take.acquire(ctx, wait, forever)
	if ok {
		token, _ := redisync.OwnerToken(ctx)
		m.mu.Lock()
		m.own = token
		m.mu.Unlock()
	}
	return ok, err
}

// Unlock releases the MultiLock. It runs even when ctx is already
// cancelled, as the members' Unlock does, so a deferred Unlock after a
// cancelled request still releases. It acts for the owner ctx carries;
// without one, for the owner of the hold taken without one through this
// MultiLock, from whichever goroutine (when there is none, it returns an
// error wrapping redisync.ErrNotHeld and sends nothing). A member listed
// twice is released twice, as it was taken twice.
//
// From New: every member is released (at once, not one after another), and
// Unlock returns nil when all were; otherwise the members' errors joined,
// the first member's first. A member that reports redisync.ErrNotHeld had
// been lost (its lease ran out, it was force-unlocked), or the MultiLock was
// not held: the error then wraps redisync.ErrNotHeld.
//
// From NewRedLock: the members taken by the latest acquisition of the
// caller's owner through this MultiLock are released; if there is none
// (another process acquired it for this owner, say), every member is, and
// members not held are ignored. Unlock returns an error wrapping
// redisync.ErrNotHeld when so many members reported not held that fewer
// than a majority could still have been held (the RedLock had been lost, or
// was not held), joined with the errors of members that could not be
// released (their server is unreachable); such a member, whose renewal has
// stopped, is freed by Redis when its lease ends.
//
// An error may mean a member's release took effect
// ([redisync.ErrNotReplicated]; a network error, after which its lease
// frees it): never repeat it. See “Errors and retries” in [redisync].
func (m *MultiLock) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	if _, ok := redisync.OwnerToken(ctx); !ok {
		// The hold taken without an owner in ctx, whoever took it.
		m.mu.Lock()
		token := m.own
		m.own = 0
		m.mu.Unlock()
		if token == 0 {
			return fmt.Errorf("%s: not locked without an owner in ctx: %w", m.g.kind, redisync.ErrNotHeld)
		}
		ctx = redisync.WithOwnerToken(ctx, token)
	}
	return m.take.unlock(ctx)
}

// check returns the error every call with ctx reports before doing
// anything: the invalid construction's, or for a zero value (declared, not
// made by New or NewRedLock) or a nil ctx, an error wrapping
// redisync.ErrInvalidArgument.
func (m *MultiLock) check(ctx context.Context) error {
	if m.take == nil {
		return fmt.Errorf("%w: zero MultiLock (make one with multilock.New or NewRedLock)", redisync.ErrInvalidArgument)
	}
	if m.err != nil {
		return m.err
	}
	if ctx == nil {
		return fmt.Errorf("%w: %s: nil context", redisync.ErrInvalidArgument, m.g.kind)
	}
	return nil
}

var _ redisync.Locker = (*MultiLock)(nil)

// group is the members of a MultiLock, and the name its errors start with.
type group struct {
	kind    string // "multilock" (New) or "redlock" (NewRedLock)
	members []redisync.Locker
	// pending[i] is set while an abandoned try of member i (see round) is
	// still running: its server has not answered it.
	pending []atomic.Bool
}

func newGroup(kind string, locks []redisync.Locker) *group {
	return &group{kind: kind, members: slices.Clone(locks), pending: make([]atomic.Bool, len(locks))}
}

// check returns the error every call of a MultiLock over g reports, or nil
// when g has members and none is nil.
func (g *group) check() error {
	if len(g.members) == 0 {
		return fmt.Errorf("%w: %s: no members", redisync.ErrInvalidArgument, g.kind)
	}
	for i, l := range g.members {
		if isNil(l) {
			return fmt.Errorf("%w: %s: member %d is nil", redisync.ErrInvalidArgument, g.kind, i)
		}
	}
	return nil
}

// isNil reports whether l is nil or a nil pointer (or other nil reference)
// in an interface, on which every method would panic.
func isNil(l redisync.Locker) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// release unlocks the members idx, at once, and returns their errors in
// the order of idx. It waits for every member's answer: a member's Unlock
// is bounded by the member (a detached context with a timeout).
func (g *group) release(ctx context.Context, idx []int) []error {
	errs := make([]error, len(idx))
	switch len(idx) {
	case 0:
	case 1:
		errs[0] = g.members[idx[0]].Unlock(ctx)
	default:
		var wg sync.WaitGroup
		for k, i := range idx {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = g.members[i].Unlock(ctx)
			}()
		}
		wg.Wait()
	}
	return errs
}

// all returns the indexes of every member.
func (g *group) all() []int {
	idx := make([]int, len(g.members))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func (g *group) memberErr(i int, err error) error {
	return fmt.Errorf("%s: member %d: %w", g.kind, i, err)
}

// allOf is the strategy of New: every member or none.
type allOf struct{ *group }

// acquire takes every member. A pass tries the members in order without
// waiting; when one is busy, the pass releases what it took and acquire
// waits for that member alone (its own Lock or TryLock, which waits through
// pub/sub), then runs a pass again with it already held. The wait for one
// member is not cut into slices: every member is needed, so nothing else is
// worth trying meanwhile.
func (a allOf) acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	deadline := time.Now().Add(wait)
	first := -1 // a member taken by waiting for it, held into the next pass
	for {
		busy, err := a.pass(ctx, first)
		if err != nil {
			return false, err
		}
		if busy < 0 {
			return true, nil
		}
		var ok bool
		if forever {
			err = a.members[busy].Lock(ctx)
			ok = err == nil
		} else {
			left := time.Until(deadline)
			if left <= 0 {
				return false, nil
			}
			ok, err = a.members[busy].TryLock(ctx, left)
		}
		if err != nil {
			return false, a.memberErr(busy, err)
		}
		if !ok {
			return false, nil
		}
		first = busy
	}
}

// pass tries each member once, in order, without waiting; first (≥ 0) is a
// member already held. It returns -1 when every member is held. Otherwise it
// releases what it holds and returns the busy member, or the error that
// ended the pass (a member's error, or a failed release).
func (a allOf) pass(ctx context.Context, first int) (int, error) {
	taken := make([]int, 0, len(a.members))
	if first >= 0 {
		taken = append(taken, first)
	}
	for i, l := range a.members {
		if i == first {
			continue
		}
		ok, err := l.TryLock(ctx, 0)
		if err == nil && ok {
			taken = append(taken, i)
			continue
		}
		var errs []error
		if err != nil {
			errs = append(errs, a.memberErr(i, err))
		}
		for k, rerr := range a.release(ctx, taken) {
			if rerr != nil {
				errs = append(errs, fmt.Errorf("%s: releasing member %d after a failed attempt: %w", a.kind, taken[k], rerr))
			}
		}
		return i, errors.Join(errs...)
	}
	return -1, nil
}

// unlock releases every member, at once, and joins their errors.
func (a allOf) unlock(ctx context.Context) error {
	var errs []error
	for i, err := range a.release(ctx, a.all()) {
		if err != nil {
			errs = append(errs, a.memberErr(i, err))
		}
	}
	return errors.Join(errs...)
}
