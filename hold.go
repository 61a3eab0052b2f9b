package redisync

import (
	"context"

	"github.com/redisync/redisync/internal/core"
)

// Hold is one owner's continuous hold of a lock, or of one side of a
// read-write lock: from the acquisition that takes it (hold count 0 → 1) to
// the release that ends it (count back to 0), or its loss. Re-entries by
// the same owner, through any handle of the same Client, belong to the same
// Hold and keep its fencing token. Get it from the lock right after
// acquiring: rlock's Lock.Hold (FairLock.Hold, SpinLock.Hold) and rwlock's
// RWLock.ReadHold and WriteHold. A Hold is safe for concurrent use; its
// methods send nothing to Redis.
//
// A handle's own Done, Err and FencingToken describe the latest hold taken
// through the handle, whoever took it. Use the Hold instead when a handle
// is shared by several owners (context owners, goroutines), or when work
// must follow one particular hold: its Done closes only when that hold
// ends, and its token stays the one of the acquisition that took it.
//
// Hold is defined on the library's internal hold state; a nil *Hold is a
// hold that has ended (Done closed, Err ErrNotHeld, FencingToken 0).
type Hold core.Hold

func (h *Hold) inner() *core.Hold { return (*core.Hold)(h) }

// FencingToken returns the fencing token of the acquisition that took the
// hold (a lock built with rlock.WithFencing): re-entries keep it, so every
// write made under the hold carries the same token, and a later holder's
// token is larger. It is 0 without fencing.
func (h *Hold) FencingToken() int64 { return h.inner().FencingToken() }

// Done returns a channel that is closed when the hold ends: by the release
// that takes the owner's hold count to zero, or by a loss (the watchdog
// found it gone, no renewal succeeded within the lease, the fixed lease ran
// out, a ForceUnlock through this Client, Close). Another owner's release,
// even through the same handle, does not close it.
//
// Asking for Done (or Context) of a watchdog-renewed hold also has the
// Client watch the lock's key through Redis keyspace notifications, when
// the server publishes them (WithKeyspaceEvents): a deletion or expiry of
// the key by anyone (a DEL, redisync unlock -force, a ForceUnlock in
// another process, a lease run out during a pause) has the watchdog
// re-check the hold at once, so a lost hold closes Done within a round
// trip instead of at the next renewal (up to a third of the watchdog
// timeout). See docs/lock-events.md.
func (h *Hold) Done() <-chan struct{} { return h.inner().Done() }

// Err returns nil while the hold lasts; once it ended, an error wrapping
// ErrNotHeld after its release, or ErrLockLost after a loss.
func (h *Hold) Err() error { return h.inner().Err() }

// Context returns a context that is done when the hold ends, with Err as
// its cause (context.Cause(ctx) == h.Err()). Run the work the lock guards
// under it (joined with the caller's context, for example with
// context.AfterFunc or by deriving the work's context from it), so that a
// stalled call stops by itself when the lock is lost. The context carries
// no values and no deadline.
func (h *Hold) Context() context.Context { return h.inner().Context() }
