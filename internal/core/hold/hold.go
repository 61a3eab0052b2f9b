package hold

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/lua"
)

// Key names a hold: the Redis hash and the owner's field in it.
type Key struct {
	Key   string // the hash (the primitive's name)
	Field string // the owner's field: "<client id>:<token>" or "<...>:write"
}

// RenewSpec says how the watchdog renews one hold. Script is a batch script
// in the common renewal encoding (lua.RenewalBatch); Keys and Args are the
// hold's part of it, from its typed binding (NewRenewSpec).
//
// Holds sharing Script and the cluster slot of Keys[0] are renewed in one
// call, at most MaxBatch at a time.
//
// A spec with Of set instead serves every hold of a side: the watchdog
// makes a hold's Script, Keys and Args from its Key when it first
// renews it (Hold.renewal), so an acquisition allocates nothing for a
// renewal that may never come.
type RenewSpec struct {
	Script *redis.Script
	Keys   []string
	Args   []any
	// Of returns the renewal binding of the hold named k (lazy specs).
	Of func(k Key) lua.Renewal
}

// NewRenewSpec returns how the watchdog renews a hold, from the hold's
// typed renewal binding (lua.RenewLockHold, lua.RenewReadHold).
func NewRenewSpec(r lua.Renewal) *RenewSpec {
	script, keys, args := r.Renewal()
	return &RenewSpec{Script: script, Keys: keys, Args: args}
}

// renewal returns how the watchdog renews h: h.renew, or for a lazy spec
// the one made from h's key the first time.
func (h *Hold) renewal() *RenewSpec {
	if h.renew.Of == nil {
		return h.renew
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.renewOf == nil {
		h.renewOf = NewRenewSpec(h.renew.Of(h.key))
	}
	return h.renewOf
}

// Hold is one owner's hold on one primitive in this client: from the
// acquisition that took the hold count from 0 to 1 until the release that
// takes it back to 0, or until it is lost. Re-entries by the same owner,
// through any handle, extend it (the client keeps one Hold per Key).
// Handles give out its Done/Err (of the latest hold taken through them), and
// the hold itself (redisync.Hold).
type Hold struct {
	hs    *Holds
	key   Key
	renew *RenewSpec // nil: fixed lease, no watchdog
	// renewOf is renew made for this hold when renew is lazy (RenewSpec.Of),
	// the first time the watchdog renews it (renewal), under mu.
	renewOf *RenewSpec
	lease   time.Duration // the lease Redis was given
	fence   int64         // fencing token of the acquisition that took it; 0 without fencing
	done    chan struct{} // Done, made when first asked for (under mu)
	// start is when the acquisition that started the hold was sent, for
	// HoldEnd's Duration; primitive labels the hold for observers (set
	// only when the client has hooks: AcquiredAs).
	start     time.Time
	primitive string

	mu       sync.Mutex
	count    int64       // hold count the server last reported
	err      error       // why the hold ended; nil while it lasts
	timer    *time.Timer // fixed lease: fires at the lease's end
	renewing bool        // registered with the watchdog
	chain    Chain       // its chain of in-process handoffs (core's handoff.go)
	line     string      // the local line whose caller took it (Through)
	lastOK   time.Time   // start of the last successful renewal (or the acquisition)
	// ctx is the hold's context (Context), made when first asked for;
	// cancel ends it with the hold's error.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// closedChan is returned by Done before any acquisition.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done is closed when the hold ends. The channel is made when first asked
// for (most holds are released without anyone asking).
func (h *Hold) Done() <-chan struct{} {
	if h == nil {
		return closedChan
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = make(chan struct{}) // end sets closedChan once it is over
	}
	return h.done
}

// Err is nil while the hold lasts, then says why it ended: errs.ErrNotHeld after
// the final release, errs.ErrLockLost (wrapped) after a loss.
func (h *Hold) Err() error {
	if h == nil {
		return errs.ErrNotHeld
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// FencingToken returns the fencing token of the acquisition that took the
// hold (re-entries keep it), 0 without fencing.
func (h *Hold) FencingToken() int64 {
	if h == nil {
		return 0
	}
	return h.fence
}

// endedContext is the Context of a nil hold: done, with errs.ErrNotHeld as its
// cause.
var endedContext = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errs.ErrNotHeld)
	return ctx
}()

// Context returns a context that is done when the hold ends, whose cause
// (context.Cause) is then Err. It is made when first asked for.
func (h *Hold) Context() context.Context {
	if h == nil {
		return endedContext
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancelCause(context.Background())
		if h.err != nil {
			h.cancel(h.err)
		}
	}
	return h.ctx
}

// Count returns the hold count last reported by the server, 0 once ended.
func (h *Hold) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return 0
	}
	return h.count
}

// resetTimerLocked (re)arms a fixed-lease hold's end, lease after sent.
// h.mu must be held.
func (h *Hold) resetTimerLocked(sent time.Time) {
	if h.timer != nil {
		h.timer.Stop()
	}
	h.timer = time.AfterFunc(time.Until(sent.Add(h.lease)), func() {
		h.end(fmt.Errorf("%w: lease of %v expired", errs.ErrLockLost, h.lease))
	})
}

// SetChain records the chain of handoffs the hold is part of.
func (h *Hold) SetChain(ch Chain) {
	h.mu.Lock()
	h.chain = ch
	h.mu.Unlock()
}

// Chain returns the chain of handoffs the hold is part of.
func (h *Hold) Chain() Chain {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chain
}

// setCount sets the hold's count; sent, when set, is when a command that
// re-set the lease was sent (a fixed lease then counts from it).
func (h *Hold) setCount(count int64, sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return
	}
	h.count = count
	if h.renew == nil && !sent.IsZero() {
		h.resetTimerLocked(sent)
	}
}

// end ends the hold with err: it stops its renewal and timer, forgets it and
// closes Done. Only the first call has an effect.
func (h *Hold) end(err error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return
	}
	h.err = err
	if h.timer != nil {
		h.timer.Stop()
	}
	wasRenewing := h.renewing
	h.renewing = false
	cancel := h.cancel
	h.mu.Unlock()
	h.hs.obs.Ending(h, err != errs.ErrNotHeld) // ErrNotHeld: a release that took effect
	if wasRenewing {
		h.hs.wd.remove(h)
	}
	h.hs.mu.Lock()
	if h.hs.m[h.key] == h {
		delete(h.hs.m, h.key)
	}
	h.hs.mu.Unlock()
	// Log and observe before closing Done, so that whoever reacts to Done
	// finds the record already written and the counters already counted.
	if err != errs.ErrNotHeld {
		h.hs.log.Warn("redisync: hold ended", "key", h.key.Key, "owner", h.key.Field, "err", err)
	}
	h.hs.obs.Ended(h, err)
	if cancel != nil {
		cancel(err)
	}
	h.mu.Lock()
	if h.done == nil {
		h.done = closedChan // never asked for: nobody waits on it
	} else {
		close(h.done)
	}
	h.mu.Unlock()
}

// Key returns what the hold is a hold of.
func (h *Hold) Key() Key { return h.key }

// Label returns the primitive and side the hold is of, as observers see
// it ("" when nobody observes: AcquiredAs).
func (h *Hold) Label() string { return h.primitive }

// Start returns when the acquisition that started the hold was sent.
func (h *Hold) Start() time.Time { return h.start }

// Through records that the hold was taken by a caller of the local line
// key (core's HeldHere), and counts it in lc while holding the hold's
// lock, so that the count cannot miss the hold's end (TakeLine). It does
// nothing for a hold that ended or is recorded already.
func (h *Hold) Through(key string, lc LineCounter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil || h.line != "" {
		return
	}
	h.line = key
	lc.Held(key)
}

// TakeLine returns the local line the hold was taken through (Through),
// "" if none, and forgets it: for Observer.Ending.
func (h *Hold) TakeLine() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := h.line
	h.line = ""
	return key
}

// LineCounter counts the live holds taken through each local line.
type LineCounter interface {
	Held(key string)
}

// Chain is where a hold stands in a chain of in-process handoffs (core's
// handoff.go): when the chain began (a hold taken from Redis) and the last
// arrival in the local line (core's Turn) it serves in any case.
type Chain struct {
	Start time.Time
	Last  uint64
}
