package core

import (
	"time"

	"github.com/redisync/redisync/internal/core/pipeline"
	"github.com/redisync/redisync/lua"
)

// Request is one script call of a lock for one owner: an acquisition, a
// release, an undo or a handoff.
type Request struct {
	Name  string // the lock's name: its hash key
	Owner string // "<client id>:<token>"
	Field string // the owner's field in the hash ([Scripts].Field of Owner)
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
	// Publish is the command a release publishes with
	// ([Client.PublishCommand]: "publish", or "spublish" for sharded
	// pub/sub on a Cluster).
	Publish string
	// Join, in an acquisition of a queued side ([PubSub].Queue), makes the
	// Client join the lock's queue of waiting Clients when the lock is busy
	// (set once the Client listens on its own channel: an attempt before
	// that joins nothing). Stay, in a release, is set when callers of this
	// Client still wait for the lock: the Client joins the queue before
	// the release wakes its first Client.
	Join, Stay bool
	// Fresh marks a fresh hold (see "Fresh holds" above): its owner was
	// made for one acquisition and holds the lock once, never again. Its
	// acquisition, release and undo share one request key,
	// [keys.Request](Name, Field), and ReqKey is that key in all three.
	Fresh bool
	// Sync, when set, makes the script call wait for replicas: the engine
	// sets it on acquisitions, releases and in-process handoffs
	// ([pipeline.Pipeline.NewSyncIn]), never on undos and renewals.
	Sync *pipeline.Sync
	// sync is where Sync points in the engine's acquisitions and releases:
	// the Request is on the heap already, so the Sync costs no allocation
	// of its own.
	sync pipeline.Sync
	// Deadline is the request's deadline by the server's clock (epoch ms):
	// a fresh hold's acquisition's ([request.Requests.FreshDeadline]),
	// kept in the hold's release and undo, whose marks must outlive it;
	// any other request's, [request.Requests.Deadline] when it is sent.
	// The engine sets it.
	Deadline int64
	// MarkUntil, in a fresh hold's release, undo or handoff, is until when
	// its mark lives ([request.Requests.MarkUntil] of Deadline). The
	// engine sets it.
	MarkUntil int64
	// Runner sends the script: the replica runner of Sync
	// ([pipeline.Pipeline.Runner]), or the client's plain one for a
	// handoff ([Client.Direct]). The engine sets it.
	Runner lua.Runner
}

// LeaseMillis is the lease in the whole milliseconds the scripts take.
func (req *Request) LeaseMillis() int64 { return Millis(req.Lease) }

// Undoes returns, for a release, whether it undoes an acquisition
// (UndoKey set) and the request key of the acquisition it undoes or
// releases: UndoKey in an undo, else ReqKey (the scripts' UndoRequest).
func (req *Request) Undoes() (undo bool, key string) {
	if req.UndoKey != "" {
		return true, req.UndoKey
	}
	return false, req.ReqKey
}

// FieldAt returns where a fresh hold's field starts in its request key
// key, which ends with it (1-based, as Lua's string.sub counts): the fresh
// scripts read the field from there instead of being sent it again.
func FieldAt(key, field string) int { return len(key) - len(field) + 1 }
