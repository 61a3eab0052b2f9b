package core

import (
	"time"

	"github.com/redisync/redisync/internal/core/replica"

	"github.com/redisync/redisync/internal/core/request"
)

// Op is one lock script call for one owner.
type Op struct {
	Name  string // the lock's name: its hash key
	Owner string // "<client id>:<token>"
	Field string // the owner's field in the hash (Scripts.Field of Owner)
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
	Sync *replica.Sync
	// sync is where Sync points in the engine's acquisitions and releases
	// (newSyncIn): the Op is on the heap already, so the Sync costs no
	// allocation of its own.
	sync replica.Sync
	// Deadline is a fresh hold's acquisition's request deadline
	// (FreshDeadline, epoch ms by the server's clock), in the acquisition
	// and in the hold's release and undo, whose marks must outlive it.
	Deadline int64
}

// LeaseMillis is the lease in the whole milliseconds the scripts take.
func (op *Op) LeaseMillis() int64 { return Millis(op.Lease) }

// Undoes returns, for a release, whether it undoes an acquisition
// (UndoKey set) and the request key of the acquisition it undoes or
// releases: UndoKey in an undo, else ReqKey (the scripts' UndoRequest).
func (op *Op) Undoes() (undo bool, key string) {
	if op.UndoKey != "" {
		return true, op.UndoKey
	}
	return false, op.ReqKey
}

// FieldAt returns where a fresh hold's field starts in its request key
// req, which ends with it (1-based, as Lua's string.sub counts): the fresh
// scripts read the field from there instead of being sent it again.
func FieldAt(req, field string) int { return len(req) - len(field) + 1 }

// ForcedMarkTTL is how long, in milliseconds, a force unlock's marks on the
// request keys of fresh holds live: past the deadline of any copy of their
// acquisitions, sent before the force unlock by any client.
var ForcedMarkTTL = (request.MaxTTL + time.Second).Milliseconds()

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

// HandoffOutcome is the result of one Handoffer.RunHandoff call.
type HandoffOutcome struct {
	// Remaining is the releasing owner's count: 0 when the lock was handed
	// over or, the acquisition having been cancelled, released; -1 when
	// that owner did not hold the lock (nothing changed).
	Remaining int64
	Acquired  bool  // the next owner holds the lock
	Fence     int64 // its fencing token
}
