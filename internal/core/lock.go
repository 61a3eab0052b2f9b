package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/wait"
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
// carries a deadline by the Redis server's clock (RequestDeadline: the time
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
// (Side.Field: the owner itself for a lock, "<owner>:write" for an
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
// before its lease ends (FreshDeadline); a lease too short for that makes
// the script record the acquisition as the record-based path does. So a
// fresh hold costs 9 commands in Redis per lock and unlock (8 for the spin
// lock, which publishes nothing; 11 for an rwlock's write side, which also
// deletes the field "mode"), against 14 on the record-based path (19 for
// the rwlock's write side), and is exactly once as that one is, save for a
// lock deleted from outside redisync (DEL, a Redisson forceUnlock), which
// leaves no mark.

// Op is one lock script call for one owner.
type Op struct {
	Name  string // the lock's name: its hash key
	Owner string // "<client id>:<token>"
	Field string // the owner's field in the hash (Side.Field of Owner)
	// Count is the owner's hold count once the call has taken effect, as
	// this client counts it: the scripts set it rather than add to what
	// Redis has. 0 in a release frees the owner's hold.
	Count int64
	Lease time.Duration
	// Fencing: the lock is fenced; an acquisition that starts a hold
	// (Count 1) takes a fencing token (INCR of the counter).
	Fencing bool
	// Fence, in a re-entry (Count > 1), is the hold's fencing token (0 for
	// a hold without one), which the script records and returns instead of
	// taking a new one.
	Fence  int64
	ReqKey string // where the script records its result
	// UndoKey, in a release, turns it into the undo of the acquisition
	// recorded under UndoKey: the release happens only if that acquisition
	// took place, and marks it cancelled otherwise.
	UndoKey string
	// Publish is the command a release publishes with (PublishCommand:
	// "publish", or "spublish" for sharded pub/sub on a Cluster).
	Publish string
	// Fresh marks a fresh hold (see "Fresh holds" above): its owner was
	// made for one acquisition attempt and holds the lock once, never
	// again. Its acquisition, release and undo share one request key,
	// keys.Request(Name, Field), and ReqKey is that key in all three.
	Fresh bool
	// Sync, when set, makes the script call wait for replicas (Eval): the
	// engine sets it on acquisitions and releases (NewSync), never on
	// undos, renewals and in-process handoffs.
	Sync *Sync
	// sync is where Sync points in the engine's acquisitions and releases
	// (newSyncIn): the Op is on the heap already, so the Sync costs no
	// allocation of its own.
	sync Sync
	// Deadline is a fresh hold's acquisition's request deadline
	// (FreshDeadline, epoch ms by the server's clock), in the acquisition
	// and in the hold's release and undo, whose marks must outlive it.
	Deadline int64
}

// LeaseMillis is the lease in the whole milliseconds the scripts take.
func (op *Op) LeaseMillis() int64 { return Millis(op.Lease) }

// FieldAt returns where a fresh hold's field starts in its request key
// req, which ends with it (1-based, as Lua's string.sub counts): the fresh
// scripts read the field from there instead of being sent it again.
func FieldAt(req, field string) int { return len(req) - len(field) + 1 }

// MarkUntil returns when the mark a fresh hold's release (or undo, or
// handoff) leaves on its request key expires, in epoch milliseconds by the
// server's clock: a second past the later of the acquisition's deadline
// (Op.Deadline) and the deadline of a request sent now, as request records
// outlive theirs (lua/prelude_request.lua).
func (c *Client) MarkUntil(ctx context.Context, deadline int64) int64 {
	return max(deadline, c.RequestDeadline(ctx)) + 1000
}

// ForcedMarkTTL is how long, in milliseconds, a force unlock's marks on the
// request keys of fresh holds live: past the deadline of any copy of their
// acquisitions, sent before the force unlock by any client.
var ForcedMarkTTL = (MaxRequestTTL + time.Second).Milliseconds()

// Outcome is the result of one acquisition script call.
type Outcome struct {
	Acquired bool
	Fence    int64         // the fencing token taken (Op.Fencing)
	Retry    time.Duration // not acquired: re-check at the latest then (≤ 0: unknown)
	// Lost: the owner's hold that a reentrant acquisition meant to extend
	// was gone from Redis; the engine ends it and tries afresh.
	Lost bool
	// Err refuses the acquisition for good (errs.ErrUpgrade); nothing changed.
	Err error
}

// Side configures the engine for one kind of hold: what it is (Kind,
// What, Shared, Fresh, Line) and what it runs in Redis (Scripts, Handoff),
// interfaces that rlock and rwlock implement with named types.
type Side struct {
	// Kind names the primitive in errors ("rlock", "rwlock", ...), What
	// the side ("read ", "write " or "").
	Kind, What string
	// Shared: holds of this side through one handle may coexist (an
	// rwlock's read side).
	Shared bool
	// Fresh: a caller without a context owner takes fresh holds (Op.Fresh),
	// which Acquire and Release take and release with their own scripts.
	// Only for a side that is not Shared (a fresh hold's count is 1): the
	// lock's, and the rwlock's write side. A fresh hold's request key is
	// keys.Request(name, Field(owner)), which ends with the field.
	Fresh bool
	// Line, when not empty, is the key of the client's local line
	// (JoinLine) in which this side's waiters for the lock line up (see
	// Acquire); LockLine builds it. Empty: waiters do not line up.
	Line string
	// Scripts runs the side's scripts and says how its waiters wait.
	Scripts Scripts
	// Handoff, when set (with Line and Fresh), hands a fresh hold on to
	// the next caller in the line in one step (handoff.go); nil: a
	// release always frees the lock in Redis.
	Handoff Handoffer
}

// Scripts is what one side of a lock runs in Redis, through the typed
// bindings of package lua. rlock (lockScripts, spinScripts, fairScripts)
// and rwlock (readScripts, writeScripts) implement it.
type Scripts interface {
	// Field returns an owner's field in the hash.
	Field(owner string) string
	// Acquire runs one acquisition attempt.
	Acquire(ctx context.Context, op *Op) (Outcome, error)
	// Release sets the owner's count to op.Count (0: the hold ends), or
	// undoes an acquisition (op.UndoKey). It returns the owner's remaining
	// count, -1 when the owner did not hold it (nothing changed), -2 when
	// an undone acquisition had not taken place.
	Release(ctx context.Context, op *Op) (int64, error)
	// Renewal returns how the watchdog renews the hold op took (nil: this
	// side is never renewed).
	Renewal(op *Op) *RenewSpec
	// Waiting returns how a waiter for op waits.
	Waiting(op *Op) Waiting
}

// Waiting is how a side's waiter for one op waits (Scripts.Waiting): the
// strategy (wait.PubSub on the lock's channel, or wait.Spin), and what
// giving up must clean (nil: nothing). The engine runs the wait within
// the caller's bound, with the caller's attempts, and makes a PubSub wait
// of a side with a local line wait.Lined.
type Waiting struct {
	Strategy wait.Strategy
	GiveUp   GiveUpper
}

// GiveUpper cleans what a wait's attempts left behind (a fair lock's queue
// entry) when the wait ends without success.
type GiveUpper interface {
	// GiveUp runs on a detached context; Close waits for it.
	GiveUp(ctx context.Context)
}

// Handoffer hands a lock from one fresh hold to the next caller's.
type Handoffer interface {
	// Handoff releases the fresh hold from and takes a fresh hold for to,
	// the next caller in the line, in one script (handoff.go). from.Count
	// is 0; to.Count, Lease, Fencing and ReqKey are the acquisition's.
	Handoff(ctx context.Context, from, to *Op) (HandoffOutcome, error)
}

// HandoffOutcome is the result of one Side.Handoff call.
type HandoffOutcome struct {
	// Remaining is the releasing owner's count: 0 when the lock was handed
	// over or, the acquisition having been cancelled, released; -1 when
	// that owner did not hold the lock (nothing changed).
	Remaining int64
	Acquired  bool  // the next owner holds the lock
	Fence     int64 // its fencing token
}

// LockLine returns the key of the local line of a lock's waiters (a
// Side's Line): one line per kind and name, so that the waiters of
// different kinds on one name ("rlock" and "rwlock" writers) never line up
// together. Its leading NUL keeps it apart from the semaphores' lines,
// which are keyed by the bare name.
func LockLine(kind, name string) string { return "\x00" + kind + "\x00" + name }

// Lock is the engine's state of one lock handle.
type Lock struct {
	Handle
	Fixed   time.Duration // fixed lease; 0: renewed by the watchdog
	Fencing bool          // every acquisition takes a fencing token

	gate gate
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
	latest *Hold // the hold of the latest acquisition through this handle
	fence  int64 // its fencing token
	fresh  Op    // the op of the latest fresh hold taken through this handle
}

// NewLock returns a handle's engine state. It does no I/O.
func NewLock(c *Client, kind, name string) *Lock {
	return &Lock{Handle: NewHandle(c, kind, name)}
}

func (l *Lock) lease() time.Duration { return l.Lease(l.Fixed) }

// names builds the names the handle keeps (l.once).
func (l *Lock) names() {
	p := keys.RequestPrefix(l.Name)
	l.reqPrefix = p + l.C.reqID + "."
	l.ownName = l.C.ownerName(l.Token)
	l.freshPrefix, l.ownerAt = p+l.C.id+":", len(p)
}

// ownerName returns the owner of token, l.C.ownerName(token), kept for the
// handle's own token.
func (l *Lock) ownerName(token uint64) string {
	if token != l.Token {
		return l.C.ownerName(token)
	}
	l.once.Do(l.names)
	return l.ownName
}

// requestKey returns a fresh request key on the lock, the same as
// keys.Request(l.Name, l.C.RequestID()) but built from a prefix kept in the
// handle.
func (l *Lock) requestKey() string {
	l.once.Do(l.names)
	return l.reqPrefix + strconv.FormatUint(l.C.reqSeq.Add(1), 36)
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
	var buf [20]byte
	req := l.freshPrefix + string(strconv.AppendUint(buf[:0], l.C.FreshToken(), 10))
	owner := req[l.ownerAt:]
	if field := s.Scripts.Field(owner); field != owner {
		req = l.freshPrefix[:l.ownerAt] + field // keys.Request(Name, field)
	}
	base.ReqKey = req
	base.Owner = owner
	base.Field = req[l.ownerAt:]
	base.Deadline = l.C.FreshDeadline(ctx, l.lease())
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

// sideOf names the side in an error about one owner: "read side, " or
// "write side, " for a read-write lock, "" for a lock, which has one.
func (s *Side) sideOf() string {
	if s.What == "" {
		return ""
	}
	return s.What + "side, "
}

// fail wraps err, the failure of an operation on side s, with the kind and
// name of the lock, mapping a wrong-type reply to errs.ErrWrongType
// (errs.ReplyError).
func (l *Lock) fail(s *Side, err error) error {
	return fmt.Errorf("%s %q: %w", s.Kind, l.Name, errs.ReplyError(err))
}

// Acquire takes one hold of side s, waiting until ctx ends (forever) or at
// most within (0: one attempt). It returns (true, nil) when held, (false,
// nil) when the wait ran out, and an error otherwise (wrapping ctx.Err()
// when ctx ended); on failure it holds nothing, locally or in Redis. Each
// call after the argument checks is one observed wait (BeginWait).
//
// With s.Line, the callers of this client that wait for the lock (any
// handle, any owner) line up locally in arrival order, and only the head
// of the line asks Redis and subscribes: one waiter per client contends in
// Redis instead of all of them, and a release wakes one. The head leaves
// the line when it got the lock, gave up or failed, and the next caller
// tries at once, on the subscription the head hands it (the channel stays
// subscribed while the line lasts). An owner that already holds the lock,
// on any side, re-enters (or is refused an upgrade) without lining up (the
// caller it would wait behind may wait for it), and a single
// attempt (wait 0) does not overtake the line: it is made only when the
// line is empty, and reports false otherwise.
func (l *Lock) Acquire(ctx context.Context, s *Side, forever bool, within time.Duration) (ok bool, err error) {
	token, own, err := l.owner(ctx)
	if err != nil {
		return false, err
	}
	if !own && s.Fresh {
		token = freshOwner
	}
	if !forever && within < 0 {
		return false, l.Invalid("negative wait %v", within)
	}
	ctx, obs := l.C.BeginWait(ctx, s.Kind, s.What, l.Name, forever, within)
	defer func() { obs.End(ok, err) }()
	start := time.Now()
	if !own {
		ok, err := l.gate.enter(ctx, s.Shared, forever, within, l.C.closing)
		if err != nil || !ok {
			if err != nil {
				err = l.fail(s, err)
			}
			return false, err
		}
	}
	ok, err = l.acquire(ctx, s, token, forever, within, start)
	if !ok && !own {
		l.gate.leave(s.Shared)
	}
	if err != nil {
		return false, l.fail(s, err)
	}
	return ok, nil
}

// acquire is Acquire past the gate: the local line, then the wait in Redis.
// The whole call, from start, takes at most within unless forever.
func (l *Lock) acquire(ctx context.Context, s *Side, token uint64, forever bool, within time.Duration, start time.Time) (bool, error) {
	base := l.op(s, token)
	var (
		turn *Turn
		a    *acceptor
	)
	if s.Line != "" && !l.holdsAny(base) {
		t := l.C.JoinLine(s.Line, !forever && within == 0)
		if t == nil {
			return false, nil // others wait: a single attempt does not overtake them
		}
		defer t.Leave()
		turn = t
		if s.Handoff != nil && base.Fresh {
			// A caller without a context owner holds nothing while it
			// waits (the gate), so a handoff gives it a fresh hold.
			a = l.newAcceptor(ctx, s, base, turn)
		}
		left := within
		if !forever {
			left = max(within-time.Since(start), 0)
		}
		if ok, err := t.Await(ctx, forever, left); !ok || err != nil {
			if a != nil && a.Withdraw() {
				return true, nil // handed the lock as the wait ended
			}
			return false, err
		}
	}
	// The attempts' base on the heap, where the attempt and the side's
	// Waiting find it: the acceptor's copy when there is one (allocated
	// anyway), so that base itself stays on the stack.
	var bp *Op
	if a != nil {
		bp = &a.base
	} else {
		bp = new(Op)
		*bp = base
	}
	w := s.Scripts.Waiting(bp)
	b := wait.Bound{Forever: forever}
	if !forever {
		b.Wait = max(within-time.Since(start), 0)
	}
	st := w.Strategy
	if p, ok := st.(*wait.PubSub); ok && turn != nil {
		// The channel stays subscribed from one head of the line to the
		// next: no UNSUBSCRIBE and SUBSCRIBE between them, and no release
		// unseen.
		ln := &wait.Lined{PubSub: *p, Turn: turn}
		if a != nil {
			ln.Handoff = a
		}
		st = ln
	}
	ok, err := l.wait(ctx, st, b, &lockAttempt{l: l, s: s, base: bp}, w.GiveUp)
	if ok && turn != nil && (a == nil || !a.handed) {
		// Taken from Redis, maybe before other processes' waiters woken by
		// the same release: this client's subscription moves to the end
		// of the channel's subscribers (Redis delivers in subscription
		// order), so that the next release reaches it last, and the
		// processes take turns.
		turn.Hand(nil)
	}
	return ok, err
}

// lockAttempt is one acquisition attempt of side s through l for the
// owner of base (for a fresh hold, a new owner per attempt): the engine's
// wait.Attempt.
type lockAttempt struct {
	l    *Lock
	s    *Side
	base *Op
}

// Try makes the attempt (Lock.try).
func (t *lockAttempt) Try(ctx context.Context) (bool, time.Duration, error) {
	return t.l.try(ctx, t.s, t.l.attempt(ctx, t.s, *t.base))
}

// wait runs the wait (wait.Waits.Wait); when it ends without success, g
// (when set) cleans what the attempts left, on a detached context. Close
// waits for that clean-up, so that a process exiting after Close leaves
// no fair-lock queue entry behind.
func (l *Lock) wait(ctx context.Context, st wait.Strategy, b wait.Bound, a wait.Attempt, g GiveUpper) (ok bool, err error) {
	c := l.C
	if g == nil {
		return c.waits.Wait(ctx, st, b, a)
	}
	if !c.track() {
		return false, errs.ErrClosed
	}
	defer c.untrack()
	defer func() {
		if !ok {
			gctx, cancel := c.DetachedContext(ctx)
			defer cancel()
			g.GiveUp(gctx)
		}
	}()
	return c.waits.Wait(ctx, st, b, a)
}

// holdsAny reports whether the owner of base holds the lock in this
// client: its field's hold, or its own field's (Field differs from Owner
// on an rwlock's write side, whose owner may hold read holds under its own
// name). A fresh hold's base has no owner yet, and holds nothing.
func (l *Lock) holdsAny(base Op) bool {
	if base.Owner == "" {
		return false
	}
	return l.C.HeldCount(HoldKey{Key: base.Name, Field: base.Field}) > 0 ||
		(base.Field != base.Owner && l.C.HeldCount(HoldKey{Key: base.Name, Field: base.Owner}) > 0)
}

// try makes one acquisition attempt for the owner of base.
func (l *Lock) try(ctx context.Context, s *Side, base Op) (bool, time.Duration, error) {
	hk := HoldKey{Key: base.Name, Field: base.Field}
	ol, err := l.C.owners.lock(ctx, hk)
	if err != nil {
		return false, 0, err
	}
	undoing := false
	defer func() {
		if !undoing {
			l.C.owners.unlock(hk, ol)
		}
	}()
	for {
		op := base
		op.Count = 1
		if h := l.C.liveHold(hk); h != nil {
			if n := h.Count(); n > 0 {
				// A re-entry: the hold keeps its fencing token, which
				// the script records instead of taking a new one.
				op.Count, op.Fence = n+1, h.FencingToken()
			}
		}
		op.Lease = l.lease()
		op.Fencing = l.Fencing
		l.setRequestKey(&op)
		op.Sync = l.C.newSyncIn(&op.sync)
		sent := time.Now() // Redis starts the lease after this
		out, err := s.Scripts.Acquire(ctx, &op)
		if err == nil && out.Acquired && op.Sync.SyncErr() != nil {
			// Taken on the primary, not acknowledged by its replicas: a
			// failover could lose it. It is undone before the error
			// returns (for as long as the undo's bound allows).
			err = op.Sync.Err
		}
		switch {
		case err != nil:
			if !errs.IsReply(err) {
				// The undo goes on in the background, still holding the
				// owner's lock: the owner's next operation waits for it
				// (as long as its ctx allows); this one waits for it at
				// most undoWait (a replica that did not acknowledge:
				// until it is done).
				wait := undoWait
				if errors.Is(err, errs.ErrNotReplicated) {
					wait = releaseTimeout
				}
				var done <-chan struct{}
				undoing, done = l.undo(s, op, func() { l.C.owners.unlock(hk, ol) })
				awaitUndo(done, wait)
			}
			return false, 0, fmt.Errorf("%sacquire: %w", s.What, err)
		case out.Err != nil:
			return false, 0, out.Err
		case out.Lost && op.Count > 1:
			l.C.endHold(hk, fmt.Errorf("%w: a reentrant acquisition found the hold gone from Redis", errs.ErrLockLost))
			continue // try afresh, as a new hold
		case !out.Acquired:
			return false, out.Retry, nil
		}
		var renew *RenewSpec
		if l.Fixed == 0 {
			renew = s.Scripts.Renewal(&op)
		}
		h := l.C.acquiredAs(s.Kind, s.What, sent, hk, op.Count, out.Fence, op.Lease, renew)
		if op.Count == 1 && s.Handoff != nil && s.Line != "" {
			h.setChain(l.C.newChain()) // a hold taken from Redis begins a chain
			l.C.holdThrough(h, s.Line)
		}
		l.took(h, op)
		return true, 0, nil
	}
}

// took makes h, just acquired (or re-entered) by op, the handle's latest
// hold; the handle's fencing token becomes the hold's.
func (l *Lock) took(h *Hold, op Op) {
	l.mu.Lock()
	l.latest = h
	if l.Fencing {
		l.fence = h.FencingToken()
	}
	if op.Fresh {
		l.fresh = op
	}
	l.mu.Unlock()
}

// undo reverts, in the background, an acquisition whose reply was lost
// (ctx ended, the connection broke): if it took place, the owner's count
// goes back to what it was; if it has not yet, it is marked cancelled so a
// late copy does nothing. An owner's undo whose own reply is lost is
// settled (Client.Settle) before unlock. It calls unlock (the owner's
// lock) when done and reports whether it started, with a channel closed
// when it is done; when it did not (the client is closed), the caller
// unlocks, and the acquisition, if it took place, expires with its lease.
func (l *Lock) undo(s *Side, acq Op, unlock func()) (bool, <-chan struct{}) {
	// The undo is re-sent until Redis answers it, for as long as the
	// acquisition's record lives (sent before now, it ends before this).
	until := time.Now().Add(l.C.reqTTL + recordSlack)
	done := make(chan struct{})
	started := l.C.finish(l.C.reqTTL+closeGrace, func(ctx context.Context) {
		defer close(done)
		op := acq
		op.Sync = nil
		op.Count = acq.Count - 1
		op.UndoKey = acq.ReqKey
		op.ReqKey = l.requestKey()
		op.Publish = ""
		var err error
		if op.Publish, err = l.C.PublishCommand(ctx); err == nil {
			err = l.C.resendUntil(ctx, until, func() error {
				_, err := s.Scripts.Release(ctx, &op)
				return err
			})
		}
		if err != nil {
			if !errs.IsReply(err) {
				l.C.ctr.undoFailed.Add(1)
			}
			l.C.log.Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
				"kind", s.Kind, "name", l.Name, "owner", op.Owner, "err", err)
		}
		// An owner's undo is a release: one whose reply was lost is
		// settled before the owner's next request (Client.Settle).
		if err == nil || errs.IsReply(err) || op.Fresh || op.Publish == "" || !l.C.Settle(op.ReqKey, unlock) {
			unlock()
		}
	})
	if !started {
		return false, nil
	}
	return true, done
}

// awaitUndo waits for an undo to finish (done closed), at most d; a nil
// done (no undo started) is not waited for.
func awaitUndo(done <-chan struct{}, d time.Duration) {
	if done == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Release releases one hold of side s by the owner acting in ctx. It runs
// on a detached context, so a cancelled ctx still releases. Without a
// context owner it releases the hold the handle took without one, from any
// goroutine. It returns an error wrapping errs.ErrNotHeld when this client holds
// nothing for that owner (after clearing what Redis may keep of it), or
// when Redis no longer had the hold (it was lost). Without a context owner
// and nothing taken through the handle, it sends nothing.
func (l *Lock) Release(ctx context.Context, s *Side) error {
	token, own, err := l.owner(ctx)
	if err != nil {
		return err
	}
	if !own && s.Fresh {
		token = freshOwner
	}
	base := l.op(s, token)
	if !own {
		if !l.gate.holds(s.Shared) {
			return l.fail(s, fmt.Errorf("%sside not locked through this handle: %w", s.What, errs.ErrNotHeld))
		}
		defer l.gate.leave(s.Shared)
	}
	if base.Fresh {
		if base = l.freshHold(); base.Owner == "" {
			return l.fail(s, fmt.Errorf("%sside not locked through this handle: %w", s.What, errs.ErrNotHeld))
		}
	}
	hk := HoldKey{Key: base.Name, Field: base.Field}
	ctx, cancel := l.C.DetachedContext(ctx)
	defer cancel()
	ol, err := l.C.owners.lock(ctx, hk)
	if err != nil {
		return l.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	}
	// An owner's release whose reply was lost is settled before the
	// owner's lock is given back (Client.Settle).
	var unsettled string
	defer func() {
		// The closure for Settle is made only when it is needed.
		if unsettled == "" || !l.C.Settle(unsettled, func() { l.C.owners.unlock(hk, ol) }) {
			l.C.owners.unlock(hk, ol)
		}
	}()
	op := base
	op.Lease = l.lease()
	l.setRequestKey(&op)
	pub, err := l.C.PublishCommand(ctx)
	if err != nil {
		return l.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	}
	op.Publish = pub
	send := func() (int64, error) {
		remaining, err := s.Scripts.Release(ctx, &op)
		if err != nil && !errs.IsReply(err) && !op.Fresh {
			unsettled = op.ReqKey
		}
		return remaining, err
	}
	cur := l.C.HeldCount(hk)
	if cur == 0 {
		// This client holds nothing for the owner (never acquired, lost,
		// released). Whatever Redis keeps for this client's owner is stale
		// (a lease about to run out, a field left by a failed release): the
		// release clears it, and changes nothing else.
		if _, err := send(); err != nil {
			l.C.log.Debug("redisync: clearing a stale hold failed", "kind", s.Kind, "name", l.Name, "err", err)
		}
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	}
	op.Count = cur - 1
	if o, chain := l.claimNext(s, hk, op); o != nil {
		return l.handOff(ctx, s, hk, op, o, chain)
	}
	op.Sync = l.C.newSyncIn(&op.sync)
	remaining, err := l.C.Release(hk, op.Count, send)
	if err != nil && op.Count == 0 && s.Line != "" {
		l.C.WakeLine(s.Line) // the release may not have published
	}
	switch {
	case err != nil:
		return l.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	case remaining < 0:
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), base.Owner, errs.ErrNotHeld))
	case op.Sync.SyncErr() != nil:
		return l.fail(s, fmt.Errorf("%sreleased on the primary: %w", s.What, op.Sync.Err))
	}
	return nil
}

// claimNext returns, for the release op of hold hk, the offer of the next
// caller in the lock's local line that the release may hand the lock to
// (handoff.go), claimed, and the chain the hold is part of; nil when the
// release frees the lock in Redis instead.
func (l *Lock) claimNext(s *Side, hk HoldKey, op Op) (*Offer, Chain) {
	if !op.Fresh || op.Count != 0 || s.Handoff == nil || s.Line == "" {
		return nil, Chain{}
	}
	h := l.C.liveHold(hk)
	if h == nil {
		return nil, Chain{}
	}
	chain := h.chainOf()
	return l.C.Claim(s.Line, chain), chain
}

// handOff releases the owner's last hold (op) and acquires the lock for the
// caller whose offer o the release claimed, in one script; the caller's
// wait ends with the outcome (acceptor.End). It answers the releaser as
// Release does.
func (l *Lock) handOff(ctx context.Context, s *Side, hk HoldKey, op Op, o *Offer, chain Chain) error {
	to := o.Op
	var out HandoffOutcome
	sent := time.Now()
	remaining, err := l.C.Release(hk, 0, func() (int64, error) {
		var err error
		out, err = s.Handoff.Handoff(ctx, &op, &to)
		return out.Remaining, err
	})
	handed := Handed{Sent: sent, Chain: chain}
	switch {
	case err != nil:
		// An error reply ran nothing; without a reply, the acquisition
		// may have taken place.
		handed.Unknown = !errs.IsReply(err)
	case out.Acquired:
		handed.Acquired, handed.Fence = true, out.Fence
	}
	o.Finish(handed)
	switch {
	case err != nil:
		return l.fail(s, fmt.Errorf("%srelease: %w", s.What, err))
	case remaining < 0:
		return l.fail(s, fmt.Errorf("%sowner %s: %w", s.sideOf(), op.Owner, errs.ErrNotHeld))
	}
	return nil
}

// acceptor lets a caller waiting in a lock's local line be handed the lock
// (wait.Lined.Handoff).
type acceptor struct {
	l    *Lock
	s    *Side
	base Op // the caller's own attempts' base (Lock.acquire)
	// first is the turn's first offer, allocated with the acceptor
	// (Turn.Accepts makes the next ones); its Op is the acquisition a
	// releaser makes for the caller, which nobody changes.
	first Offer
	turn  *Turn
	// handed: the caller got the lock by a handoff.
	handed bool
}

// newAcceptor makes the caller's turn accept handoffs of a fresh hold
// (base is a fresh hold's op without an owner yet: attempt gives it one).
func (l *Lock) newAcceptor(ctx context.Context, s *Side, base Op, turn *Turn) *acceptor {
	op := l.attempt(ctx, s, base)
	op.Count = 1
	op.Lease = l.lease()
	op.Fencing = l.Fencing
	a := &acceptor{l: l, s: s, base: base, turn: turn}
	a.first = Offer{Op: op, done: make(chan struct{})}
	turn.offers(&a.first)
	return a
}

func (a *acceptor) BeginTry(force bool) bool {
	return (force || !a.l.C.HeldHere(a.s.Line)) && a.turn.BeginTry()
}

func (a *acceptor) EndTry()                 { a.turn.EndTry() }
func (a *acceptor) Handed() <-chan struct{} { return a.turn.Handed() }

func (a *acceptor) Take() bool {
	o := a.turn.Handover()
	if o == nil {
		return false
	}
	if a.took(o) {
		return true
	}
	a.turn.Accepts(a.first.Op) // ready for the next release
	return false
}

func (a *acceptor) Withdraw() bool {
	o := a.turn.Withdraw()
	return o != nil && a.took(o)
}

// took takes the outcome of the handoff o: the hold when the caller got the
// lock; an undo in the background when the reply was lost. It gives back
// the owner's lock Claim took.
func (a *acceptor) took(o *Offer) bool {
	l, s, op := a.l, a.s, o.Op
	hk := HoldKey{Key: op.Name, Field: op.Field}
	unlock := func() {
		if o.ol != nil { // nil: a wake-up, not a handoff (heldEnded)
			l.C.owners.unlock(hk, o.ol)
		}
	}
	r := o.res
	switch {
	case r.Unknown:
		if ok, _ := l.undo(s, op, unlock); !ok {
			unlock()
		}
		return false
	case !r.Acquired:
		unlock()
		return false
	}
	var renew *RenewSpec
	if l.Fixed == 0 {
		renew = s.Scripts.Renewal(&op)
	}
	h := l.C.acquiredAs(s.Kind, s.What, r.Sent, hk, op.Count, r.Fence, op.Lease, renew)
	h.setChain(r.Chain)
	l.C.holdThrough(h, s.Line)
	unlock()
	l.took(h, op)
	a.handed = true
	return true
}

// Hold returns the live hold of side s of the owner acting in ctx, nil if
// it has none: a context owner's hold (whatever handle took it), or without
// one the hold taken through this handle (on a Fresh side, its latest
// fresh hold; else the handle's own owner's). It sends nothing.
func (l *Lock) Hold(ctx context.Context, s *Side) *Hold {
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
	return l.C.liveHold(HoldKey{Key: l.Name, Field: field})
}

// ForceEnded ends every hold of this client on the lock (any owner), after
// a ForceUnlock deleted it.
func (l *Lock) ForceEnded() {
	l.C.endHolds(l.Name, fmt.Errorf("%w: force-unlocked", errs.ErrLockLost))
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
