package core

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/request"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/pubsub"
)

// The engine's design (owners, exactly once, fresh holds): doc.go.

// Lock is the engine's state of one lock handle.
type Lock struct {
	Handle
	Fixed   time.Duration // fixed lease; 0: renewed by the watchdog
	Fencing bool          // every acquisition takes a fencing token

	gate Gate
	// Built once (names), for context owners and the record-based path:
	// the handle's request keys without the sequence number (requestKey),
	// and the name of the handle's own owner. A fresh hold needs neither
	// (withFreshOwner builds its key in place).
	once      sync.Once
	reqPrefix string
	ownName   string

	mu     sync.Mutex
	latest *Hold // the hold of the latest acquisition through this handle
	fence  int64 // its fencing token
	// took says, per side (took[1]: a shared side's, an rwlock's read
	// side), that a caller without a context owner took a hold through
	// this handle: from then on the handle answers for its own holds only
	// (doc.go: "Ownerless holds").
	took [2]bool
	// oless and ofence are the hold of the latest acquisition through this
	// handle without a context owner, and its fencing token: what a
	// handle of the name that never acquired acts for (latestHold).
	oless  *Hold
	ofence int64
	// fresh is the request of the latest fresh hold taken through this
	// handle: the hold's own copy, which never changes (its Shutdown
	// record, release.go), not one more in every handle.
	fresh *Request
}

// NewLock returns a handle's engine state. It does no I/O.
func NewLock(c *Client, kind, name string) *Lock {
	return &Lock{Handle: NewHandle(c, kind, name)}
}

func (l *Lock) lease() time.Duration { return l.Lease(l.Fixed) }

// buildNames builds the names l keeps, once ([Lock].once).
func buildNames(l *Lock) {
	l.once.Do(func() {
		l.reqPrefix = keys.RequestPrefix(l.Name) + l.C.reqs.Prefix()
		l.ownName = ownerName(l.C.id, l.Token)
	})
}

// owner returns the owner of token, [ownerName](id, token), kept for the
// handle's own token.
func (l *Lock) owner(token uint64) string {
	if token != l.Token {
		return ownerName(l.C.id, token)
	}
	buildNames(l)
	return l.ownName
}

// requestKey returns a new request key on the lock, the same as
// [keys.Request](l.Name, id) but built from a prefix kept in the handle.
func (l *Lock) requestKey() string {
	buildNames(l)
	return l.reqPrefix + strconv.FormatUint(l.C.reqs.Next(), 36)
}

// setRequestKey gives req a new request key, unless req is a fresh hold's,
// whose acquisition, release and undo share the key
// [Lock.withFreshOwner] gave it.
func (l *Lock) setRequestKey(req *Request) {
	if !req.Fresh {
		req.ReqKey = l.requestKey()
	}
}

// withFreshOwner returns the request of one acquisition of side s from
// base: base itself, or for a fresh hold a new owner
// ([freshToken]), its owner "<client id>:<token>", its field
// ([Scripts].Field), its request key [keys.Request](Name, field) and the
// request's deadline ([request.Requests.FreshDeadline]).
func (l *Lock) withFreshOwner(ctx context.Context, s *Side, base Request) Request {
	if !base.Fresh {
		return base
	}
	// [keys.Request](Name, "<client id>:<token>") in one allocation, the
	// string, for names up to 200 bytes or so; the owner starts at at.
	var buf [256]byte
	b := keys.AppendRequestPrefix(buf[:0], l.Name)
	at := len(b)
	b = append(append(b, l.C.id...), ':')
	req := string(strconv.AppendUint(b, freshToken(l.C.freshBase), 10))
	owner := req[at:]
	if field := s.Scripts.Field(owner); field != owner {
		req = req[:at] + field // [keys.Request](Name, field)
	}
	base.ReqKey = req
	base.Owner = owner
	base.Field = req[at:]
	base.Deadline = l.C.reqs.FreshDeadline(ctx, l.lease())
	return base
}

// freshHold returns the request of the latest fresh hold taken through the
// handle (its owner is empty before any).
func (l *Lock) freshHold() Request {
	l.mu.Lock()
	r := l.fresh
	l.mu.Unlock()
	if r == nil {
		return Request{}
	}
	return *r
}

// token checks the handle and returns the owner token acting in ctx and
// whether ctx carries it (else it is the handle's own).
func (l *Lock) token(ctx context.Context) (uint64, bool, error) {
	if err := l.Check(ctx); err != nil {
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

// baseRequest returns what the requests of the owner of token on side s
// share: the lock's name, the owner and its field. Without a context
// owner (own false) on a Fresh side it is a fresh hold's, with no owner
// yet: each acquisition takes one of its own ([Lock.withFreshOwner]).
func (l *Lock) baseRequest(s *Side, token uint64, own bool) Request {
	if !own && s.Fresh {
		return Request{Name: l.Name, Fresh: true}
	}
	owner := l.owner(token)
	return Request{Name: l.Name, Owner: owner, Field: s.Scripts.Field(owner)}
}

// fail wraps err, the failure of an operation on the side of the lock
// name, with the kind and name of the lock, mapping a wrong-type reply to
// [errs.ErrWrongType] ([errs.ReplyError]).
func (s *Side) fail(name string, err error) error {
	return fmt.Errorf("%s %q: %w", s.Kind, name, errs.ReplyError(err))
}

// ForceEnded ends every hold of this client on the lock (any owner), after
// a ForceUnlock deleted it.
func (l *Lock) ForceEnded() {
	l.C.holds.endAll(l.Name, fmt.Errorf("%w: force-unlocked", errs.ErrLockLost))
}

// Side configures the engine for one kind of hold: what it is (Kind,
// Part, Shared, Fresh, Line) and what it runs in Redis (Scripts, Handoff),
// interfaces that rlock and rwlock implement with named types.
type Side struct {
	// Kind names the primitive in errors ("rlock", "rwlock", ...), Part
	// the side of a read-write lock ("read", "write"; "" for a lock).
	Kind, Part string
	// Shared: holds of this side through one handle may coexist (an
	// rwlock's read side).
	Shared bool
	// Fresh: a caller without a context owner takes fresh holds
	// ([Request].Fresh). Only for a side that is not Shared (a fresh
	// hold's count is 1): the lock's, and the rwlock's write side. A
	// fresh hold's request key is [keys.Request](name, Field(owner)),
	// which ends with the field.
	Fresh bool
	// Line, when not empty, is the key of the client's local line
	// ([Lines.Join]) in which this side's waiters for the lock line up
	// (see [Lock.Acquire]); [LockLine] builds it. Empty: no line.
	Line string
	// Scripts runs the side's scripts and says how its waiters wait.
	Scripts Scripts
	// Queue, when set, is the lock's queue of waiting Clients, in which
	// the side's waits queue ([PubSub].Queue names it too).
	Queue *Queue
	// Handoff, when set (with Line and Fresh), hands a fresh hold on to
	// the next caller in the line in one script (release.go); nil: a
	// release always frees the lock in Redis.
	Handoff Handoffer
}

// Scripts is what one side of a lock runs in Redis, through the typed
// bindings of package lua. rlock (lockScripts, spinScripts, fairScripts)
// and rwlock (readScripts, writeScripts) implement it. The engine fills
// every request it passes: its deadline or mark and its runner
// ([Request].Deadline, MarkUntil, Runner).
type Scripts interface {
	// Field returns an owner's field in the hash.
	Field(owner string) string
	// RunAcquire runs the script of one acquisition.
	RunAcquire(ctx context.Context, req *Request) (Outcome, error)
	// RunRelease runs a release's script, which sets the owner's count to
	// req.Count (0: the hold ends), or undoes an acquisition
	// (req.UndoKey). It returns the owner's remaining count, -1 when the
	// owner did not hold it (nothing changed), -2 when an undone
	// acquisition had not taken place.
	RunRelease(ctx context.Context, req *Request) (int64, error)
	// Renewal returns how the watchdog renews the hold req took (nil:
	// this side is never renewed).
	Renewal(req *Request) *RenewSpec
	// Waiting returns how a waiter for req waits.
	Waiting(req *Request) Waiting
}

// Waiting is how a side's waiter for one request waits
// ([Scripts].Waiting): on a channel (PubSub) or spinning (Spin), and what
// giving up must clean (GiveUp; nil: nothing). A caller in a local line
// waits on the subscription the line passes on ([acquisition.wait]).
type Waiting struct {
	PubSub *PubSub // the channel where releases are published
	Spin   *Spin   // set instead of PubSub: no subscription
	GiveUp GiveUpper
}

// PubSub is a wait on a channel where releases are published (see
// loop.pubsub).
type PubSub struct {
	Channel string        // where releases are published
	Wake    pubsub.Policy // how many local waiters one message wakes
	// Queue, when set, makes the wait one in the lock's queue of waiting
	// Clients (lua/prelude_wake.lua): the Client listens on its own
	// channel, where a release wakes the first Client of the queue, and on
	// Channel too only while the lock's holder is foreign
	// ([Outcome].Foreign). Nil: every waiter listens on Channel.
	Queue *Queue
}

// Queue names a lock's queue of waiting Clients (lua/prelude_wake.lua):
// its keys, the lock and its channel, and the prefix of the Clients' own
// channels. Message is what a wake-up passed on by a Client leaving the
// queue publishes: the lock's release message ("" is "0", a lock's; a
// read-write lock's write side passes on its write release's "1").
type Queue struct {
	Lock, Channel, Waiters, State, WakePrefix, Message string
}

// Spin is a wait without pub/sub (see loop.spin): no subscription, a
// pause between attempts that starts at Min and doubles up to Max.
type Spin struct {
	Min, Max time.Duration
}

// GiveUpper cleans what a wait's attempts left behind (a fair lock's queue
// entry) when the wait ends without success.
type GiveUpper interface {
	// GiveUp runs on a detached context; Close waits for it.
	GiveUp(ctx context.Context)
}

// Handoffer hands a lock from one fresh hold to the next caller's.
type Handoffer interface {
	// RunHandoff releases the fresh hold from and takes a fresh hold for to,
	// the next caller in the line, in one script (release.go). from.Count
	// is 0; to.Count, Lease, Fencing and ReqKey are the acquisition's.
	RunHandoff(ctx context.Context, from, to *Request) (HandoffOutcome, error)
}

// step names a step of the side in an error: "read acquire" on an
// rwlock's read side, "acquire" on a lock.
func (s *Side) step(verb string) string {
	if s.Part == "" {
		return verb
	}
	return s.Part + " " + verb
}

// sideOf names the side in an error about one owner: "read side, " or
// "write side, " for a read-write lock, "" for a lock, which has one.
func (s *Side) sideOf() string {
	if s.Part == "" {
		return ""
	}
	return s.Part + " side, "
}

// ForcedMarkTTL is how long, in milliseconds, a force unlock's marks on the
// request keys of fresh holds live: past the deadline of any copy of their
// acquisitions, sent before the force unlock by any client.
var ForcedMarkTTL = (request.MaxTTL + time.Second).Milliseconds()

// Outcome is the result of one acquisition script call.
type Outcome struct {
	Acquired bool
	Fence    int64         // the fencing token taken ([Request.Fencing])
	Retry    time.Duration // not acquired: re-check at the latest then (≤ 0: unknown)
	// Lost: the owner's hold that a reentrant acquisition meant to extend
	// was gone from Redis; the engine ends it and tries afresh.
	Lost bool
	// Err refuses the acquisition for good ([errs.ErrUpgrade]); nothing
	// changed.
	Err error
	// Foreign: not acquired, and the holder is not the one the lock's
	// queue recorded ([PubSub].Queue): the waiter listens on the lock's
	// channel too.
	Foreign bool
}

// HandoffOutcome is the result of one [Handoffer].RunHandoff call.
type HandoffOutcome struct {
	// Remaining is the releasing owner's count: 0 when the lock was handed
	// over or, the acquisition having been cancelled, released; -1 when
	// that owner did not hold the lock (nothing changed).
	Remaining int64
	Acquired  bool  // the next owner holds the lock
	Fence     int64 // its fencing token
}

// label returns how observers name a hold of side s ("" when nobody
// observes: a client without hooks).
func (s *Side) label(observed bool) string {
	if !observed {
		return ""
	}
	return primitiveLabel(s.Kind, s.Part)
}

// Ownerless holds, the handles of one name as one mutex: doc.go.

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

// ownerlessKeyOf returns the key of the handle's lock in the registry.
func ownerlessKeyOf(l *Lock) ownerlessKey { return ownerlessKey{kind: l.Kind, name: l.Name} }

// tookOwnerless records, after req took a hold through l on side s
// ([Lock.record]), when the acquisition is one without a context owner (a
// fresh hold, or the handle's own owner's), that l holds: it is listed in
// the registry, last, and l answers for its own holds of the side from
// now on.
func tookOwnerless(l *Lock, s *Side, req Request, h *Hold) {
	if req.Fresh || req.Owner == l.owner(l.Token) {
		l.mu.Lock()
		l.took[sideIndex(s.Shared)] = true
		l.oless = h
		if l.Fencing {
			l.ofence = h.FencingToken()
		}
		l.mu.Unlock()
		l.C.ownerless.add(l)
	}
}

// sideIndex is the index of a side in [Lock].took: 1 for a shared one.
func sideIndex(shared bool) int {
	if shared {
		return 1
	}
	return 0
}

// tookHere reports whether a caller without a context owner ever took a
// hold of the side (shared: a read side) through l.
func tookHere(l *Lock, shared bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.took[sideIndex(shared)]
}

// ownerlessHolder returns the handle that acts for a call without a
// context owner on side s through l: l when its gate holds a place of the
// side or when a hold of the side was ever taken through it (the handle
// answers for its own holds: once they are released, a second Unlock
// through it is refused, whoever else holds the name), else the latest
// other handle of the name that holds, else l.
func ownerlessHolder(l *Lock, s *Side) *Lock {
	if l.C == nil || l.gate.Holds(s.Shared) || tookHere(l, s.Shared) {
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
		// Its latest hold without a context owner: the Client's hold of
		// the name, not a context owner's it took since.
		x.mu.Lock()
		h, fence = x.oless, x.ofence
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
// name that does (doc.go: "Ownerless holds").
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
// through the latest other handle of the name that does ("Ownerless
// holds", above). It sends nothing.
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
