package core

import (
	"context"

	"github.com/redisync/redisync/internal/core/hold"
	"github.com/redisync/redisync/internal/core/wait"
)

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
	// (Lines.Join) in which this side's waiters for the lock line up (see
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
	// RunAcquire runs one acquisition attempt's script.
	RunAcquire(ctx context.Context, op *Op) (Outcome, error)
	// RunRelease runs a release's script, which sets the owner's count to op.Count (0: the hold ends), or
	// undoes an acquisition (op.UndoKey). It returns the owner's remaining
	// count, -1 when the owner did not hold it (nothing changed), -2 when
	// an undone acquisition had not taken place.
	RunRelease(ctx context.Context, op *Op) (int64, error)
	// Renewal returns how the watchdog renews the hold op took (nil: this
	// side is never renewed).
	Renewal(op *Op) *hold.RenewSpec
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
	// RunHandoff releases the fresh hold from and takes a fresh hold for to,
	// the next caller in the line, in one script (handoff.go). from.Count
	// is 0; to.Count, Lease, Fencing and ReqKey are the acquisition's.
	RunHandoff(ctx context.Context, from, to *Op) (HandoffOutcome, error)
}

// LockLine returns the key of the local line of a lock's waiters (a
// Side's Line): one line per kind and name, so that the waiters of
// different kinds on one name ("rlock" and "rwlock" writers) never line up
// together. Its leading NUL keeps it apart from the semaphores' lines,
// which are keyed by the bare name.
func LockLine(kind, name string) string { return "\x00" + kind + "\x00" + name }

// sideOf names the side in an error about one owner: "read side, " or
// "write side, " for a read-write lock, "" for a lock, which has one.
func (s *Side) sideOf() string {
	if s.What == "" {
		return ""
	}
	return s.What + "side, "
}
