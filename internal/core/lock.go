package core

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/gate"
	"github.com/redisync/redisync/internal/core/hold"
	"github.com/redisync/redisync/internal/keys"
)

// The lock engine.
//
// Every hold-based lock — rlock's Lock, FairLock and SpinLock, and both
// sides of rwlock's RWLock — is a Lock (a handle's state) driven through a
// Side (a kind of hold: its scripts, its owner field, how its waiters
// wait). The engine does the rest once: owners and the local gate, the
// attempt / undo / hold bookkeeping, waiting, release, renewal, Done and
// Err.
//
// Owners. A context carrying an owner (WithOwner) makes every handle act for
// that owner, which re-enters what it holds: hold counts, as Redisson's per
// thread. Without one, a handle acts for its own owner token, and its local
// gate makes the goroutines calling through it exclude each other as
// sync.Mutex's (sync.RWMutex's for an rwlock) callers do, waiting locally
// in arrival order; such a handle is never reentrant. On a side that takes
// fresh holds (Side.Fresh: the lock, the spin lock and the rwlock's write
// side), such a caller does not use the handle's token in Redis either: see
// Fresh holds.
//
// The client is the authority over its own owners' hold counts. Every
// acquisition and release tells Redis the count the owner has once it takes
// effect, as this client counts it, and the scripts set that count instead
// of adding to whatever Redis has. So a count left in Redis by a release
// whose reply was lost, or by a late copy of a request, is never adopted
// into a hold: the next acquisition overwrites it, and the watchdog renews
// exactly the holds this client believes in, with the counts it believes
// in (the renewal scripts set them too). Operations of one owner on one
// lock are serialized in the client, so the count they send is exact.
//
// Exactly once. A copy of a request may reach Redis at any later time: a
// go-redis re-send after a lost reply, or a request held up in the network
// and delivered after the client gave up on it. Each state-changing script
// records its result under a request key (keys.Request) and returns the
// record when a copy of the same request runs again; and each request
// carries a deadline by the Redis server's clock (request.Requests.Deadline: the time
// go-redis may take to re-send, converted with a measured offset), checked
// in the script with TIME: a copy that finds no record after the deadline
// is refused and changes nothing. The record lives until just past the
// deadline, so a copy either finds it or is refused, and no record outlives
// its purpose (lua/prelude_request.lua). Owner-based locks have a second
// defence: the scripts set the count the client believes in, so a
// duplicate that slipped through would change nothing. An acquisition whose
// reply is lost is undone by a release in undo mode, which marks the
// acquisition cancelled if it has not run yet, so a later copy of it does
// nothing either. This is the record-based path, for context owners, the
// fair lock and the rwlock's read side; fresh holds take a cheaper one.
//
// Fresh holds. A caller without a context owner on a Fresh side holds the
// lock at most once at a time through its handle (the gate), so its hold
// count is always 1. Each of its acquisition attempts takes an owner of its
// own: a new token (FreshToken), the owner "<client id>:<token>" in
// Redisson's layout as any other (attempt), whose field is the side's
// (Scripts.Field: the owner itself for a lock, "<owner>:write" for an
// rwlock's write side); the handle remembers the owner of the hold it took
// (Lock.fresh) and releases that one. As that owner's field in the hash
// serves one hold and no other, the field is the acquisition's record while
// the hold lasts, and the hold's request key, keys.Request(name, field),
// shared by its acquisition, release and undo, carries the marks that
// outlive it (the rwlock's write side: lua/rwlock_write_*_fresh.lua, the
// same steps with the field "mode"):
//
//   - acquisition (lua/lock_acquire_fresh.lua): when neither the hash nor
//     the request key exists, refuse a late copy (TIME), then HSET, PEXPIRE
//     (and INCR for fencing); no record. Otherwise it changes nothing: a
//     copy finding the field answers "acquired" (a re-send), one finding a
//     mark answers "cancelled", else "held by another";
//   - release (lua/lock_release_fresh.lua): HDEL of the field, PUBLISH, and
//     the mark "released" on the request key until a second past the later
//     of the acquisition's deadline and the release's own. A copy of the
//     acquisition in time finds the mark and changes nothing; a later one
//     is refused; a re-sent release finds the mark and answers 0 again; a
//     late release deletes a field nobody uses any more. No TIME needed;
//   - undo: the mark "cancelled" and HDEL of the field (a publish if that
//     freed the lock), the same however often it runs;
//   - a force unlock marks the request keys of every field it deletes.
//
// For the field to outlive every copy of the acquisition that could still
// be accepted, the acquisition's deadline comes at least two seconds
// before its lease ends (request.Requests.FreshDeadline); a lease too short for that makes
// the script record the acquisition as the record-based path does. So a
// fresh hold costs 9 commands in Redis per lock and unlock (8 for the spin
// lock, which publishes nothing; 11 for an rwlock's write side, which also
// deletes the field "mode"), against 14 on the record-based path (19 for
// the rwlock's write side), and is exactly once as that one is, save for a
// lock deleted from outside redisync (DEL, a Redisson forceUnlock), which
// leaves no mark.

// Lock is the engine's state of one lock handle.
type Lock struct {
	Handle
	Fixed   time.Duration // fixed lease; 0: renewed by the watchdog
	Fencing bool          // every acquisition takes a fencing token

	gate gate.Gate
	// Built once (names): the handle's request keys without the sequence
	// number (requestKey), and the name of the handle's own owner.
	once      sync.Once
	reqPrefix string
	ownName   string
	// freshPrefix is a fresh hold's request key without the owner token:
	// keys.RequestPrefix(Name) + "<client id>:"; the owner starts at
	// ownerAt.
	freshPrefix string
	ownerAt     int

	mu     sync.Mutex
	latest *hold.Hold // the hold of the latest acquisition through this handle
	fence  int64      // its fencing token
	fresh  Op         // the op of the latest fresh hold taken through this handle
}

// sideCall is one acquisition or release through the handle of one of its
// sides: the engine's steps past the checks (acquire.go, release.go),
// which need both.
type sideCall struct {
	Lock *Lock
	s    *Side
}

// NewLock returns a handle's engine state. It does no I/O.
func NewLock(c *Client, kind, name string) *Lock {
	return &Lock{Handle: NewHandle(c, kind, name)}
}

func (l *Lock) lease() time.Duration { return l.Lease(l.Fixed) }

// names builds the names the handle keeps (l.once).
func (l *Lock) names() {
	p := keys.RequestPrefix(l.Name)
	l.reqPrefix = p + l.C.reqs.Prefix()
	l.ownName = ownerName(l.C.id, l.Token)
	l.freshPrefix, l.ownerAt = p+l.C.id+":", len(p)
}

// ownerName returns the owner of token, ownerName(l.C.id, token), kept for the
// handle's own token.
func (l *Lock) ownerName(token uint64) string {
	if token != l.Token {
		return ownerName(l.C.id, token)
	}
	l.once.Do(l.names)
	return l.ownName
}

// requestKey returns a fresh request key on the lock, the same as
// keys.Request(l.Name, l.C.Requests().ID()) but built from a prefix kept in the
// handle.
func (l *Lock) requestKey() string {
	l.once.Do(l.names)
	return l.reqPrefix + strconv.FormatUint(l.C.reqs.Next(), 36)
}

// setRequestKey gives op a fresh request key, unless op is a fresh hold's,
// whose acquisition, release and undo share the key attempt gave it.
func (l *Lock) setRequestKey(op *Op) {
	if !op.Fresh {
		op.ReqKey = l.requestKey()
	}
}

// freshOwner stands for the owner token of a caller without a context
// owner on a Fresh side (Acquire, Release): each acquisition attempt takes
// an owner of its own (attempt), and the release is the latest fresh
// hold's (freshHold). Real tokens are positive.
const freshOwner uint64 = 0

// attempt returns the op of one acquisition attempt of side s from base:
// base itself, or for a fresh hold a new owner token (FreshToken), its
// owner "<client id>:<token>", its field (s.Field), its request key
// keys.Request(Name, field) and the request's deadline (FreshDeadline).
func (l *Lock) attempt(ctx context.Context, s *Side, base Op) Op {
	if !base.Fresh {
		return base
	}
	l.once.Do(l.names)
	var buf [256]byte // one allocation, the string, for names up to 200 bytes or so
	req := string(strconv.AppendUint(append(buf[:0], l.freshPrefix...), l.C.FreshToken(), 10))
	owner := req[l.ownerAt:]
	if field := s.Scripts.Field(owner); field != owner {
		req = l.freshPrefix[:l.ownerAt] + field // keys.Request(Name, field)
	}
	base.ReqKey = req
	base.Owner = owner
	base.Field = req[l.ownerAt:]
	base.Deadline = l.C.reqs.FreshDeadline(ctx, l.lease())
	return base
}

// freshHold returns the op of the latest fresh hold taken through the
// handle (its owner is empty before any).
func (l *Lock) freshHold() Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fresh
}

// owner checks the handle and returns the owner token acting in ctx and
// whether ctx carries it (else it is the handle's own).
func (l *Lock) owner(ctx context.Context) (uint64, bool, error) {
	if err := l.Check(); err != nil {
		return 0, false, err
	}
	t, ok := OwnerToken(ctx)
	if !ok {
		return l.Token, false, nil
	}
	if t == 0 {
		return 0, false, fmt.Errorf("%w: owner token must be positive", errs.ErrInvalidArgument)
	}
	return t, true, nil
}

// op returns the parts of an Op that name the owner of token; for
// freshOwner, a fresh hold's op without an owner yet (attempt).
func (l *Lock) op(s *Side, token uint64) Op {
	if token == freshOwner {
		return Op{Name: l.Name, Fresh: true}
	}
	owner := l.ownerName(token)
	return Op{Name: l.Name, Owner: owner, Field: s.Scripts.Field(owner)}
}

// Owner returns the owner ("<client id>:<token>") acting in ctx on side
// s: without a context owner, on a Fresh side, the owner of the latest
// fresh hold taken through the handle, if any, else the handle's own.
func (l *Lock) Owner(ctx context.Context, s *Side) (string, error) {
	t, own, err := l.owner(ctx)
	if err != nil {
		return "", err
	}
	if !own && s.Fresh {
		if f := l.freshHold(); f.Owner != "" {
			return f.Owner, nil
		}
	}
	return l.ownerName(t), nil
}

// fail wraps err, the failure of an operation on side s, with the kind and
// name of the lock, mapping a wrong-type reply to errs.ErrWrongType
// (errs.ReplyError).
func (l *Lock) fail(s *Side, err error) error {
	return fmt.Errorf("%s %q: %w", s.Kind, l.Name, errs.ReplyError(err))
}

// Hold returns the live hold of side s of the owner acting in ctx, nil if
// it has none: a context owner's hold (whatever handle took it), or without
// one the hold taken through this handle (on a Fresh side, its latest
// fresh hold; else the handle's own owner's). It sends nothing.
func (l *Lock) Hold(ctx context.Context, s *Side) *hold.Hold {
	token, own, err := l.owner(ctx)
	if err != nil {
		return nil
	}
	var field string
	if !own && s.Fresh {
		if field = l.freshHold().Field; field == "" {
			return nil
		}
	} else {
		field = s.Scripts.Field(l.ownerName(token))
	}
	return l.C.holds.Live(hold.Key{Key: l.Name, Field: field})
}

// ForceEnded ends every hold of this client on the lock (any owner), after
// a ForceUnlock deleted it.
func (l *Lock) ForceEnded() {
	l.C.holds.EndAll(l.Name, fmt.Errorf("%w: force-unlocked", errs.ErrLockLost))
}

// FencingToken returns the fencing token of the hold of the latest
// acquisition through this handle (a re-entry's is its hold's), 0 without
// fencing or before any.
func (l *Lock) FencingToken() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fence
}

// Done is closed when the hold of the latest acquisition through this
// handle ends; closed before any.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest.Done()
}

// Err is nil while the hold of the latest acquisition through this handle
// lasts, then says why it ended; errs.ErrNotHeld before any.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest.Err()
}
