package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/pipeline"
	"github.com/redisync/redisync/pubsub"
)

// Hold is one owner's hold on one primitive in this client: from the
// acquisition that took the hold count from 0 to 1 until the release that
// takes it back to 0, or until it is lost. Re-entries by the same owner,
// through any handle, extend it (the client keeps one Hold per Key).
// Handles give out its Done/Err (of the latest hold taken through them), and
// the hold itself (redisync.Hold).
type Hold struct {
	hs    *Holds
	key   HoldKey
	renew *RenewSpec // nil: fixed lease, no watchdog
	// renewOf is renew made for this hold when renew is lazy ([RenewSpec.Of]),
	// the first time the watchdog renews it (renewal), under mu.
	renewOf *RenewSpec
	lease   time.Duration // the lease Redis was given
	fence   int64         // fencing token of the acquisition that took it; 0 without fencing
	done    chan struct{} // Done, made when first asked for (under mu)
	// start is when the acquisition that started the hold was sent, for
	// HoldEnd's Duration.
	start time.Time

	mu       sync.Mutex
	count    int64       // hold count the server last reported
	err      error       // why the hold ended; nil while it lasts
	timer    *time.Timer // fixed lease: fires at the lease's end
	renewing bool        // registered with the watchdog
	inRound  bool        // a renewal round has it (due, below)
	chain    Chain       // its chain of in-process handoffs (release.go)
	line     string      // the local line whose caller took it ([Hold.through])
	// lastOK is when the last write that extended the lease was sent (the
	// acquisition, a re-entry, a renewal): with replica acknowledgement
	// on, only a write the replicas acknowledged in time extends it, so
	// that the hold ends (LeaseMargin before lastOK + lease) before a
	// promoted replica could let another owner in. unacked is the
	// acknowledgement error of a renewal that ran on the primary since.
	lastOK  time.Time
	unacked error
	// due is when the watchdog renews the hold next.
	due time.Time
	// ctx is the hold's context (Context), made when first asked for;
	// cancel ends it with the hold's error.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// shut is how Shutdown releases the hold (shutdown.go), and the lock
	// side that took it, which labels it for observers: set when the hold
	// begins ([Holds.acquiredAs]), never changed (read without mu).
	shut shutdownRelease
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
		if h.ctx == nil && h.err == nil {
			h.hs.wd.watchKey(h, h.done) // a loss told within a round trip (events.go)
		}
	}
	return h.done
}

// Err is nil while the hold lasts, then says why it ended: [errs.ErrNotHeld] after
// the final release, [errs.ErrLockLost] (wrapped) after a loss.
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

// endedContext is the Context of a nil hold: done, with [errs.ErrNotHeld] as its
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
		} else if h.done == nil {
			h.hs.wd.watchKey(h, h.ctx.Done())
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
	line := h.line // the local line it was taken through (Hold.through), forgotten
	h.line = ""
	h.mu.Unlock()
	// Out of its local line first, whose head may have to be woken when
	// the hold was lost (ErrNotHeld: a release that took effect).
	h.hs.lines.left(line, err != errs.ErrNotHeld)
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
	switch err {
	case errs.ErrNotHeld: // released by its owner
	case ErrShutdown: // released by Shutdown: a deploy's routine, no warning
		h.hs.log.Debug("redisync: hold released by Shutdown", "key", h.key.Key, "owner", h.key.Field)
	default:
		h.hs.log.Warn("redisync: hold ended", "key", h.key.Key, "owner", h.key.Field, "err", err)
	}
	holdEnded(h, err)
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

// ackedAt returns when h's last acknowledged write that set its lease was
// sent (lastOK: for a fixed lease, its acquisition), for a hold handed off
// without acknowledgement; than when h is nil or that is after than.
func (h *Hold) ackedAt(than time.Time) time.Time {
	if h == nil {
		return than
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastOK.After(than) {
		return than
	}
	return h.lastOK
}

// Key returns what the hold is a hold of.
func (h *Hold) Key() HoldKey { return h.key }

// Start returns when the acquisition that started the hold was sent.
func (h *Hold) Start() time.Time { return h.start }

// through records that the hold was taken by a caller of the local line
// key ([Lines.heldHere]), on the chain of handoffs ch, and counts it in ls
// ([Lines.Held]) while holding the hold's lock, so that the count cannot
// miss the hold's end ([Hold.end] takes the line back). It counts nothing
// for a hold that ended or is counted already.
func (h *Hold) through(key string, ls *Lines, ch Chain) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chain = ch
	if h.err != nil || h.line != "" {
		return
	}
	h.line = key
	ls.Held(key)
}

// Holds are one client's live holds, one per Key, and the watchdog
// that renews them.
type Holds struct {
	mu      sync.Mutex
	m       map[HoldKey]*Hold
	wd      watchdog
	closing <-chan struct{}
	log     *slog.Logger
	// What the holds tell the client: the local lines whose holds end
	// ([Lines.left]), the counters and the hooks that count and report
	// their ends and renewals (holdEnded, [watchdog.renewed]), and the
	// primaries' policies that name an eviction ([evictions.goneErr]).
	lines *Lines
	ctr   *counters
	hooks *Hooks
	evict *evictions
}

// holdsConfig is what a client's holds need from it.
type holdsConfig struct {
	Cluster bool               // renewals batch per slot
	Pipe    *pipeline.Pipeline // renewals go through the script pipeline and wait for replicas as acquisitions do
	Context context.Context    // done when the client closes: renewal rounds stop
	Closing <-chan struct{}    // closed when the client closes: renewals stop
	Log     *slog.Logger
	Lines   *Lines      // the client's local lines
	Ctr     *counters   // the client's counters
	Hooks   *Hooks      // the client's hooks (nil: none)
	Evict   *evictions  // the client's primaries' policies
	Mux     *pubsub.Mux // keyspace notifications of watched holds' keys (events.go)
	Bg      *bg.Group   // the goroutines that watch them
}

// newHolds returns a client's holds, none live. It does no I/O.
func newHolds(cfg holdsConfig) *Holds {
	hs := &Holds{m: make(map[HoldKey]*Hold), closing: cfg.Closing, log: cfg.Log,
		lines: cfg.Lines, ctr: cfg.Ctr, hooks: cfg.Hooks, evict: cfg.Evict}
	hs.wd = watchdog{hs: hs, pipe: cfg.Pipe, cluster: cfg.Cluster, ctx: cfg.Context, wake: make(chan struct{}, 1),
		mux: cfg.Mux, bg: cfg.Bg}
	return hs
}

// acquiredAs records a successful acquisition of key by this client, after
// which the owner's hold count is count, as this client counts it (the
// script set it in Redis). sent is when the acquiring command was sent:
// Redis started the lease after that, so a local deadline counted from sent
// ends no later than the lease in Redis (Done closes before another owner
// can take the lock, never after). Without a live hold it starts one;
// otherwise it extends the live one. lease is what Redis was given; renew is
// nil for a fixed lease, which then ends by itself when the lease runs out.
// The caller serializes the owner's operations (ownerLocks).
//
// shut, for a lock's hold, is how Shutdown releases it: its handle, its
// side (which labels it for observers: HoldEnd) and the acquisition's
// request; it is kept when the acquisition starts the hold. fence is the
// fencing token the acquisition took; it becomes the hold's when the
// acquisition starts the hold, and is ignored for a re-entry (the hold
// keeps its token).
func (hs *Holds) acquiredAs(shut shutdownRelease, sent time.Time, key HoldKey, count, fence int64, lease time.Duration, renew *RenewSpec) *Hold {
	hs.mu.Lock()
	h := hs.m[key]
	if h == nil {
		h = &Hold{hs: hs, key: key, renew: renew, lease: lease, fence: fence, lastOK: sent, start: sent, shut: shut,
			due: sent.Add(lease / 3)}
		hs.m[key] = h
	}
	hs.mu.Unlock()

	h.mu.Lock()
	h.count = count
	h.lease = lease
	if h.renew == nil {
		h.resetTimerLocked(sent)
	} else if sent.After(h.lastOK) {
		h.lastOK = sent // a reentrant acquisition (acknowledged) re-set the lease too
		h.unacked = nil
	}
	startRenewal := h.renew != nil && !h.renewing
	if startRenewal {
		h.renewing = true
	}
	due := h.due
	h.mu.Unlock()
	if startRenewal {
		hs.wd.add(h, due)
	}
	select {
	case <-hs.closing: // Close raced with the acquisition: no renewal will come
		h.end(fmt.Errorf("%w: client closed, renewal stopped (%w)", errs.ErrLockLost, errs.ErrClosed))
	default:
	}
	return h
}

// Live returns key's live hold in this client, or nil.
func (hs *Holds) Live(key HoldKey) *Hold {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.m[key]
}

// Count returns the owner's hold count on key as this client counts it:
// 0 without a live hold.
func (hs *Holds) Count(key HoldKey) int64 {
	h := hs.Live(key)
	if h == nil {
		return 0
	}
	return h.Count()
}

// End ends key's live hold, if any, with err.
func (hs *Holds) End(key HoldKey, err error) {
	if h := hs.Live(key); h != nil {
		h.end(err)
	}
}

// beginRelease returns key's live hold (nil if none) before a release
// that sets the owner's count to count is sent; when count is 0 the
// hold's renewal stops first, whatever the release's outcome. The caller
// sends the release, then tells the hold ([Hold.released]).
func (hs *Holds) beginRelease(key HoldKey, count int64) *Hold {
	h := hs.Live(key)
	if h != nil && count == 0 {
		h.mu.Lock()
		stopped := h.renewing
		h.renewing = false
		h.mu.Unlock()
		if stopped {
			hs.wd.remove(h)
		}
	}
	return h
}

// released applies the outcome of a release of h, sent at sent, that set
// the owner's count to count: the owner's remaining count (negative: Redis
// did not have the hold), or err. A nil h (no live hold) ignores it.
//
// This client's count is the authority: it becomes count whatever the
// outcome. After a failed release (no reply) the hold ends when count is 0,
// and Redis keeps the stale count only until its lease runs out, never
// renewed and never adopted by a later acquisition; when count is above 0
// the hold goes on with count, and the next renewal sets it in Redis. When
// Redis says it did not have the hold, the hold was lost.
func (h *Hold) released(count, remaining int64, err error, sent time.Time) {
	if h == nil {
		return
	}
	switch {
	case err != nil && count == 0:
		h.end(fmt.Errorf("%w: released by this client; the release failed (%v), so Redis keeps the hold until its lease ends", errs.ErrNotHeld, err))
	case err != nil:
		h.setCount(count, time.Time{})
	case remaining < 0:
		h.end(fmt.Errorf("%w: Redis no longer had it at release", errs.ErrLockLost))
	case remaining == 0:
		h.end(errs.ErrNotHeld)
	default:
		h.setCount(remaining, sent)
	}
}

// endAll ends every live hold of this client on the Redis key (any owner)
// with err: for ForceUnlock and Delete, which remove the key whoever holds
// it. An empty key ends every live hold (Close).
func (hs *Holds) endAll(key string, err error) {
	hs.mu.Lock()
	var ended []*Hold
	for k, h := range hs.m {
		if key == "" || k.Key == key {
			ended = append(ended, h)
		}
	}
	hs.mu.Unlock()
	for _, h := range ended {
		h.end(err)
	}
}

// Len returns the number of live holds.
func (hs *Holds) Len() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.m)
}

// Wait waits for the watchdog's goroutine to stop once the client closes.
func (hs *Holds) Wait() { hs.wd.wait() }

// add registers h, due for renewal at due, with the watchdog, whose
// goroutine ([watchdog.run]) starts if it is not running, or is woken
// when h is due before it would wake up: it renews h every third of its
// lease.
func (w *watchdog) add(h *Hold, due time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds == nil {
		w.holds = make(map[*Hold]struct{})
	}
	w.holds[h] = struct{}{}
	if w.running {
		if due.Before(w.nextAt) {
			w.nextAt = time.Time{}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		return
	}
	select {
	case <-w.hs.closing:
		return
	default:
	}
	w.running = true
	w.wg.Add(1)
	go w.run()
}

// remove stops renewing h.
func (w *watchdog) remove(h *Hold) {
	w.mu.Lock()
	delete(w.holds, h)
	w.mu.Unlock()
}

// ErrShutdown is the cause of the holds [Shutdown] released: lost to
// their owners, but released, so not counted as lost (holdEnded).
var ErrShutdown = fmt.Errorf("%w: released by Client.Shutdown (%w)", errs.ErrLockLost, errs.ErrClosed)

// holdEnded counts and reports the end of hold h with err, before its Done
// closes ([Hold.end]).
func holdEnded(h *Hold, err error) {
	// A hold Shutdown released was released, not lost, though its owner
	// sees ErrLockLost: the lock is no longer theirs.
	shut := err == ErrShutdown
	lost := !shut && errors.Is(err, errs.ErrLockLost)
	switch {
	case shut:
		h.hs.ctr.shutdown.Add(1)
	case lost:
		h.hs.ctr.lost.Add(1)
	}
	hk := h.hs.hooks
	if hk == nil || hk.HoldEnd == nil {
		return
	}
	hk.HoldEnd(HoldEnd{
		Primitive: h.shut.primitive(),
		Name:      h.Key().Key,
		Owner:     h.Key().Field,
		Duration:  time.Since(h.Start()),
		Lost:      lost,
		Shutdown:  shut,
		Err:       err,
	})
}
