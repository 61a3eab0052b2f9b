package core

import (
	"context"
	"slices"
	"sync"
)

// Ownerless holds: the handles of one name are one mutex.
//
// Without a context owner, a lock handle is a distributed sync.Mutex (an
// rwlock handle a sync.RWMutex), and the handles of one name on one
// client are one such mutex: what a caller without a context owner holds
// belongs to the client and the name, not only to the handle it called
// through, so any handle of the name releases it (Redisson's users call
// getLock(name) wherever they need it, and the handle made for the Unlock
// is not the one made for the Lock). Each handle keeps its gate and its
// fresh holds (they exclude each other in Redis as before, and a release
// hands the lock on to a waiter of another handle in the local line); the
// client's registry ([ownerlessRegistry]) lists, per kind and name, the
// handles whose gate has a holder. A handle asked to release, or for its
// Hold without a context owner and holding nothing itself, acts on the
// latest such handle of the name; one that never acquired gives that
// handle's Done, Err and FencingToken too. So the handle's views of what
// it holds ([Lock.Owner], [Lock.Hold], [Lock.FencingToken], [Lock.Done],
// [Lock.Err]) are here, at the end of the file, where they are resolved
// through the registry.
//
// The registry holds its handles strongly while they hold: a handle
// dropped (garbage-collected) while it holds stays reachable from the
// client, where a new handle of the name finds and releases its hold, so
// no hold is renewed that nothing can release. A handle leaves the
// registry when its gate empties.

// ownerlessKey names the handles of one lock: its kind ([Handle].Kind)
// and its name (its key).
type ownerlessKey struct{ kind, name string }

// ownerlessRegistry is a client's handles that hold without a context
// owner, per lock.
type ownerlessRegistry struct {
	mu sync.Mutex
	m  map[ownerlessKey][]*Lock // in the order of their latest acquisition
}

// add lists l, which holds without a context owner, last.
func (r *ownerlessRegistry) add(l *Lock) {
	k := ownerlessKeyOf(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[ownerlessKey][]*Lock)
	}
	ls := slices.DeleteFunc(r.m[k], func(x *Lock) bool { return x == l })
	r.m[k] = append(ls, l)
}

// drop unlists l when its gate is empty.
func (r *ownerlessRegistry) drop(l *Lock) {
	if !l.gate.empty() {
		return
	}
	k := ownerlessKeyOf(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := slices.DeleteFunc(r.m[k], func(x *Lock) bool { return x == l && x.gate.empty() })
	if len(ls) == 0 {
		delete(r.m, k)
	} else {
		r.m[k] = ls
	}
}

// holder returns the latest handle of l's name, other than l, whose gate
// holds a place of the given kind (shared: a read side's), or nil.
func (r *ownerlessRegistry) holder(l *Lock, shared bool) *Lock {
	if l.C == nil {
		return nil
	}
	k := ownerlessKeyOf(l)
	r.mu.Lock()
	ls := slices.Clone(r.m[k])
	r.mu.Unlock()
	for i := len(ls) - 1; i >= 0; i-- {
		if x := ls[i]; x != l && x.gate.Holds(shared) {
			return x
		}
	}
	return nil
}

// latest returns the handle of l's name, other than l, that acquired
// last, or nil.
func (r *ownerlessRegistry) latest(l *Lock) *Lock {
	if l.C == nil {
		return nil
	}
	k := ownerlessKeyOf(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := r.m[k]
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i] != l {
			return ls[i]
		}
	}
	return nil
}

// empty reports whether the gate has neither holder nor waiter.
func (g *Gate) empty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.readers == 0 && !g.writer && len(g.q) == 0
}

// ownerlessKeyOf returns the key of the handle's lock in the registry.
func ownerlessKeyOf(l *Lock) ownerlessKey { return ownerlessKey{kind: l.Kind, name: l.Name} }

// tookOwnerless records, after h was acquired by req through l, when the
// acquisition is one without a context owner (a fresh hold, or the
// handle's own owner's), that l holds: it is listed in the registry, last.
func tookOwnerless(l *Lock, req Request) {
	if req.Fresh || req.Owner == l.owner(l.Token) {
		l.C.ownerless.add(l)
	}
}

// ownerlessHolder returns the handle that acts for a call without a
// context owner on side s through l: l when its gate holds a place of the
// side, else the latest other handle of the name that does, else l.
func ownerlessHolder(l *Lock, s *Side) *Lock {
	if l.C == nil || l.gate.Holds(s.Shared) {
		return l
	}
	if x := l.C.ownerless.holder(l, s.Shared); x != nil {
		return x
	}
	return l
}

// latestHold returns the hold of the latest acquisition through this
// handle and its fencing token; for a handle that never acquired, those
// of the latest other handle of the name that holds without a context
// owner (the name's hold), if any.
func latestHold(l *Lock) (*Hold, int64) {
	l.mu.Lock()
	h, fence := l.latest, l.fence
	l.mu.Unlock()
	if h != nil || l.C == nil {
		return h, fence
	}
	if x := l.C.ownerless.latest(l); x != nil {
		x.mu.Lock()
		h, fence = x.latest, x.fence
		x.mu.Unlock()
	}
	return h, fence
}

// ownerlessOf returns the handle acting for ctx on s: l with a context
// owner, else [ownerlessHolder].
func ownerlessOf(ctx context.Context, l *Lock, s *Side) *Lock {
	if _, ok := OwnerToken(ctx); ok {
		return l
	}
	return ownerlessHolder(l, s)
}

// The handle's views of what it holds, through the registry.

// Owner returns the owner ("<client id>:<token>") acting in ctx on side
// s: without a context owner, on a Fresh side, the owner of the latest
// fresh hold taken through the handle, if any, else the handle's own;
// when the handle holds nothing, those of the latest other handle of the
// name that does (ownerless.go).
func (l *Lock) Owner(ctx context.Context, s *Side) (string, error) {
	l = ownerlessOf(ctx, l, s)
	t, own, err := l.token(ctx)
	if err != nil {
		return "", err
	}
	if !own && s.Fresh {
		if f := l.freshHold(); f.Owner != "" {
			return f.Owner, nil
		}
	}
	return l.owner(t), nil
}

// Hold returns the live hold of side s of the owner acting in ctx, nil if
// it has none: a context owner's hold (whatever handle took it), or without
// one the hold taken through this handle (on a Fresh side, its latest
// fresh hold; else the handle's own owner's), or when it holds nothing,
// through the latest other handle of the name that does (ownerless.go).
// It sends nothing.
func (l *Lock) Hold(ctx context.Context, s *Side) *Hold {
	l = ownerlessOf(ctx, l, s)
	token, own, err := l.token(ctx)
	if err != nil {
		return nil
	}
	var field string
	if !own && s.Fresh {
		if field = l.freshHold().Field; field == "" {
			return nil
		}
	} else {
		field = s.Scripts.Field(l.owner(token))
	}
	return l.C.holds.Live(HoldKey{Key: l.Name, Field: field})
}

// FencingToken returns the fencing token of the hold of the latest
// acquisition through this handle, or without a context owner through
// another handle of the name ([latestHold]; a re-entry's is its
// hold's), 0 without fencing or before any.
func (l *Lock) FencingToken() int64 {
	_, fence := latestHold(l)
	return fence
}

// Done is closed when the latest hold ([latestHold]) ends; closed
// before any.
func (l *Lock) Done() <-chan struct{} {
	h, _ := latestHold(l)
	return h.Done()
}

// Err is nil while the latest hold ([latestHold]) lasts, then says
// why it ended; [errs.ErrNotHeld] before any.
func (l *Lock) Err() error {
	h, _ := latestHold(l)
	return h.Err()
}
