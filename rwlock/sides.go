package rwlock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// The two sides of the read-write lock as configurations of the lock
// engine (internal/core): their scripts, owner fields, renewals and
// waiting.

// sideScripts is what both sides' scripts share: the lock's channel, its
// timeout keys, the message a release publishes, the queue of Clients
// waiting for the write side, and the recorded release script call
// (rwlock_write_release for the write side, else rwlock_read_release: the
// same KEYS and ARGV).
//
// The write side's waiters queue as a lock's do (lua/prelude_wake.lua,
// docs/wake.md): a Client waiting to write listens on a channel of its
// own, and a release that frees the lock (a write release, the last read
// release, ForceUnlock) wakes the first Client of the queue there instead
// of every waiting process. Readers wait on the lock's channel, as
// Redisson's do: a write release may let every one of them in, so it
// still publishes there whenever anybody listens.
type sideScripts struct {
	e          *core.Lock
	channel    string
	head, tail string // keys.RWTimeoutParts
	msg        string
	write      bool
	queue      *core.Queue // the write side's queue, shared by both sides
}

func newSideScripts(e *core.Lock, write bool, msg string, q *core.Queue) sideScripts {
	head, tail := keys.RWTimeoutParts(e.Name)
	return sideScripts{e: e, channel: keys.RWChannel(e.Name), head: head, tail: tail, msg: msg, write: write, queue: q}
}

// newQueue returns the queue of Clients waiting for the write side of
// the read-write lock e (a lock's keys: prelude_wake). A passed-on wake-up
// publishes the write release's message, which lets readers in too.
func newQueue(e *core.Lock) *core.Queue {
	return &core.Queue{Lock: e.Name, Channel: keys.RWChannel(e.Name), Waiters: keys.LockWaiters(e.Name),
		State: keys.LockWaitState(e.Name), WakePrefix: keys.LockWakePrefix(e.Name), Message: msgWrite}
}

// stay returns the id of the releasing Client when req, a write release,
// keeps it in the queue (its callers still wait: [core.Request].Stay),
// else "".
func (s *sideScripts) stay(req *core.Request) string {
	if !req.Stay {
		return ""
	}
	return s.e.C.ID()
}

// release runs the recorded release script of the side.
func (s *sideScripts) release(ctx context.Context, req *core.Request) (int64, error) {
	undo, undoKey := req.Undoes()
	q, c := s.queue, s.e.C
	if s.write {
		return lua.RWWriteReleaseArgs{Lock: req.Name, Channel: s.channel, Request: req.ReqKey, UndoRequest: undoKey,
			Waiters: q.Waiters, WaitState: q.State,
			LeaseMillis: req.LeaseMillis(), Field: req.Field, Deadline: req.Deadline, Message: s.msg,
			Undo: undo, TimeoutHead: s.head, TimeoutTail: s.tail, Count: req.Count, Publish: req.Publish,
			WakePrefix: q.WakePrefix, Probe: core.Probe(c, req.Publish), Stay: s.stay(req),
			AliveMillis: core.AliveMillis(c),
		}.Run(ctx, req.Runner)
	}
	// a read release that frees the lock wakes the first Client queued
	// for the write side (no reader queues: Stay is for the write side)
	return lua.RWReadReleaseArgs{Lock: req.Name, Channel: s.channel, Request: req.ReqKey, UndoRequest: undoKey,
		Waiters: q.Waiters, WaitState: q.State,
		LeaseMillis: req.LeaseMillis(), Field: req.Field, Deadline: req.Deadline, Message: s.msg,
		Undo: undo, TimeoutHead: s.head, TimeoutTail: s.tail, Count: req.Count, Publish: req.Publish,
		WakePrefix: q.WakePrefix, Probe: core.Probe(c, req.Publish), AliveMillis: core.AliveMillis(c),
	}.Run(ctx, req.Runner)
}

// readSide is the read side's configuration of the engine (readScripts):
// readers wait on the lock's channel with its wake policy (wake).
func readSide(e *core.Lock, q *core.Queue) *core.Side {
	s := &readScripts{sideScripts: newSideScripts(e, false, msgRead, q)}
	s.waiting = core.Waiting{PubSub: &core.PubSub{Channel: s.channel, Wake: wake}}
	return &core.Side{Kind: "rwlock", Part: "read", Shared: true, Scripts: s}
}

// readScripts are the read side's scripts: a read hold is the owner's
// reader field plus one timeout key per hold.
type readScripts struct {
	sideScripts
	waiting core.Waiting // the same for every wait: made once
}

// Waiting waits on the lock's channel with its wake policy (wake).
func (s *readScripts) Waiting(*core.Request) core.Waiting { return s.waiting }

// Field is the owner itself: its reader field.
func (s *readScripts) Field(owner string) string { return owner }

// RunAcquire runs rwlock_read_acquire.
func (s *readScripts) RunAcquire(ctx context.Context, req *core.Request) (core.Outcome, error) {
	rep, err := lua.RWReadAcquireArgs{Lock: req.Name, Request: req.ReqKey, LeaseMillis: req.LeaseMillis(),
		Field: req.Owner, Deadline: req.Deadline, WriteField: keys.RWWriteField(req.Owner),
		TimeoutPrefix: keys.RWTimeoutPrefix(req.Name, req.Owner), Count: req.Count}.Run(ctx, req.Runner)
	return outcome(rep.Code, rep.Value, 0, err, req.Owner)
}

// RunRelease runs rwlock_read_release.
func (s *readScripts) RunRelease(ctx context.Context, req *core.Request) (int64, error) {
	return s.release(ctx, req)
}

// Renewal renews the reader field and the owner's timeout keys
// (lua.RenewRead).
func (s *readScripts) Renewal(req *core.Request) *core.RenewSpec {
	return core.NewRenewSpec(lua.RenewReadHold{Lock: req.Name, Field: req.Owner,
		TimeoutPrefix: keys.RWTimeoutPrefix(req.Name, req.Owner)})
}

// writeSide is the write side's configuration of the engine
// (writeScripts); callers without a context owner take fresh holds, line up
// in the client's local line of the lock's writers, and are handed the
// write side by the writer before them.
func writeSide(e *core.Lock, q *core.Queue) *core.Side {
	scripts := &writeScripts{sideScripts: newSideScripts(e, true, msgWrite, q)}
	scripts.alive = strconv.FormatInt(core.AliveMillis(e.C), 10)
	scripts.waiting = core.Waiting{PubSub: &core.PubSub{Channel: scripts.channel, Wake: wake, Queue: q}}
	return &core.Side{Kind: "rwlock", Part: "write", Fresh: true,
		Line:    core.LockLine("rwlock", e.Name), // writers of a client line up locally
		Scripts: scripts, Handoff: scripts, Queue: q}
}

// writeScripts are the write side's scripts: the owner's write field,
// renewed as a lock's owner field. Context owners take and release it with
// the recorded scripts (rwlock_write_acquire and rwlock_write_release:
// reentrancy, downgrade, ErrUpgrade); fresh holds with
// rwlock_write_acquire_fresh and rwlock_write_release_fresh, and hand it on
// with rwlock_write_handoff.
type writeScripts struct {
	sideScripts
	// alive is how long, in milliseconds, the Client counts as alive in
	// the queue after each attempt (core.AliveMillis), in decimal.
	alive   string
	waiting core.Waiting // the same for every wait: made once
}

// Waiting waits in the queue of Clients waiting for the write side, on
// the Client's own channel (and on the lock's while the holder is one
// the queue did not record: readers, or a Redisson client's writer).
func (s *writeScripts) Waiting(*core.Request) core.Waiting { return s.waiting }

// Field is the owner's write field ("<owner>:write").
func (s *writeScripts) Field(owner string) string { return keys.RWWriteField(owner) }

// RunAcquire runs rwlock_write_acquire_fresh for a fresh hold, else
// rwlock_write_acquire.
func (s *writeScripts) RunAcquire(ctx context.Context, req *core.Request) (core.Outcome, error) {
	e := s.e
	if req.Fresh {
		a := lua.RWWriteAcquireFreshArgs{Lock: req.Name, Request: req.ReqKey, LeaseMillis: req.LeaseMillis(),
			FieldAt: int64(core.FieldAt(req.ReqKey, req.Field)), Deadline: req.Deadline}
		if req.Join {
			// a waiter's attempt names the queue (a first attempt, which
			// does not wait in it, spares the uncontended lock its bytes)
			a.Waiters, a.WaitState, a.Client, a.AliveMillis = s.queue.Waiters, s.queue.State, e.C.ID(), s.alive
		}
		rep, err := a.Run(ctx, req.Runner)
		return outcome(rep.Code, rep.Value, rep.Foreign, err, req.Owner)
	}
	a := lua.RWWriteAcquireArgs{Lock: req.Name, Request: req.ReqKey, LeaseMillis: req.LeaseMillis(),
		Field: req.Owner, Deadline: req.Deadline, WriteField: req.Field,
		TimeoutPrefix: keys.RWTimeoutPrefix(req.Name, req.Owner), Count: req.Count,
		ReadCount: e.C.Holds().Count(core.HoldKey{Key: req.Name, Field: req.Owner})}
	if req.Join {
		a.Waiters, a.WaitState, a.Client, a.AliveMillis = s.queue.Waiters, s.queue.State, e.C.ID(), s.alive
	}
	rep, err := a.Run(ctx, req.Runner)
	return outcome(rep.Code, rep.Value, rep.Foreign, err, req.Owner)
}

// RunRelease runs rwlock_write_release_fresh for a fresh hold, else
// rwlock_write_release.
func (s *writeScripts) RunRelease(ctx context.Context, req *core.Request) (int64, error) {
	if !req.Fresh {
		return s.release(ctx, req)
	}
	// The hold's request key is its acquisition's (undoKey in an undo).
	// Its mark outlives the acquisition's deadline and this request's.
	undo, undoKey := req.Undoes()
	c := s.e.C
	return lua.RWWriteReleaseFreshArgs{Lock: req.Name, Request: undoKey, Channel: s.channel,
		Waiters: s.queue.Waiters, WaitState: s.queue.State,
		FieldAt: int64(core.FieldAt(undoKey, req.Field)), Message: msgWrite, Publish: req.Publish,
		MarkUntil: req.MarkUntil, Undo: undo, TimeoutHead: s.head, TimeoutTail: s.tail,
		WakePrefix: s.queue.WakePrefix, Probe: core.Probe(c, req.Publish), Stay: s.stay(req),
		AliveMillis: core.AliveMillis(c),
	}.Run(ctx, req.Runner)
}

// RunHandoff runs rwlock_write_handoff: from's fresh hold ends and to's
// begins.
func (s *writeScripts) RunHandoff(ctx context.Context, from, to *core.Request) (core.HandoffOutcome, error) {
	rep, err := lua.RWWriteHandoffArgs{Lock: from.Name, Request: from.ReqKey, NextRequest: to.ReqKey, Channel: s.channel,
		Waiters: s.queue.Waiters, WaitState: s.queue.State,
		FieldAt: int64(core.FieldAt(from.ReqKey, from.Field)), NextFieldAt: int64(core.FieldAt(to.ReqKey, to.Field)),
		MarkUntil: from.MarkUntil, NextLeaseMillis: to.LeaseMillis(), Message: msgWrite,
		Publish: from.Publish, TimeoutHead: s.head, TimeoutTail: s.tail,
		WakePrefix: s.queue.WakePrefix, Probe: core.Probe(s.e.C, from.Publish), Client: s.e.C.ID()}.Run(ctx, from.Runner)
	if err != nil {
		return core.HandoffOutcome{}, err
	}
	return core.HandoffOutcome{Remaining: rep.Remaining, Acquired: rep.Acquired == lua.RWWriteHandoffHandedOver}, nil
}

// Renewal is writeRenewal.
func (s *writeScripts) Renewal(*core.Request) *core.RenewSpec { return writeRenewal }

// writeRenewal renews a hold of the write side as a lock's (lua.RenewLock):
// the hash and the write field, which are the hold's key; one lazy spec for
// every hold.
var writeRenewal = &core.RenewSpec{Of: func(k core.HoldKey) lua.Renewal {
	return lua.RenewLockHold{Lock: k.Key, Field: k.Field}
}}

// outcome reads an acquisition script's reply (rwlock_read_acquire,
// rwlock_write_acquire, rwlock_write_acquire_fresh: they share their
// codes): its code and its second element.
func outcome(code, value, foreign int64, err error, owner string) (core.Outcome, error) {
	switch {
	case err != nil:
		return core.Outcome{}, err
	case code == lua.RWWriteAcquireAcquired:
		return core.Outcome{Acquired: true}, nil
	case code == lua.RWWriteAcquireUpgrade:
		return core.Outcome{Err: fmt.Errorf("owner %s: %w", owner, redisync.ErrUpgrade)}, nil
	case code == lua.RWWriteAcquireLost:
		return core.Outcome{Lost: true}, nil
	}
	// busy: foreign, when the attempt joined the queue, says whether the
	// holder is one the queue did not record (prelude_wake's wait_join)
	return core.Outcome{Retry: core.RetryAfterPTTL(value), Foreign: foreign == 1}, nil
}
