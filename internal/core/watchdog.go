package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/pipeline"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// idleLinger is how long the watchdog's goroutine stays without a hold
// to renew before it ends (watchdog.step).
const idleLinger = time.Second

// MaxBatch is the most holds one renewal script call renews.
const MaxBatch = 100

// maxRetryDelay bounds the wait before a renewal that failed (an error,
// or not acknowledged by the replicas) is tried again, so a short outage
// does not cost a whole interval.
const maxRetryDelay = time.Second

// LeaseMargin is how much earlier than its lease a watchdog-renewed hold
// ends on the client's clock: 1% of the lease plus 2 ms (the Redlock algorithm's clock
// drift factor), at most half the lease. A hold's lease is measured on the
// client's monotonic clock from when its last acknowledged write was sent;
// Redis measures it on the servers' clocks (the primary's PEXPIRE, then
// a promoted replica's clock against the absolute expiry it replicated).
// The margin covers a server clock that runs up to 1% faster than the
// client's, and 2 ms of difference between the servers' wall clocks; a
// server clock that jumps forward ends leases early by the jump, which no
// margin covers (FAULTS.md).
func LeaseMargin(lease time.Duration) time.Duration {
	return min(lease/100+2*time.Millisecond, lease/2)
}

// watchdog renews every watchdog-held hold of one client: a hold of lease
// L every L/3 (between L/6 and L/3 when it joins another's round), on
// its own schedule. One goroutine (run) keeps the
// schedule, while there is something to renew: it ends the holds whose
// lease ran out and starts a renewal round (renew, a goroutine of its
// own) for the holds that are due; a round never holds up the schedule,
// so a hold ends on time even while its renewal waits for the replicas.
//
// Renewals go through the client's script pipeline (package pipeline) as
// every state-changing script: batched with the other calls to the same
// primary, with one NOSCRIPT fallback, and, with replica acknowledgement
// on, one WAIT per batch on every topology (on a Cluster, per master).
// A renewal extends a hold only when acknowledged (ack): see Hold.lastOK.
type watchdog struct {
	hs      *Holds
	pipe    *pipeline.Pipeline
	cluster bool
	ctx     context.Context // done when the client closes: rounds stop
	wake    chan struct{}   // a round ended, or a hold due earlier was added
	// mux has the keyspace notifications of watched holds' keys, and bg
	// the goroutines that watch them (watchKey, events.go).
	mux *pubsub.Mux
	bg  *bg.Group

	mu      sync.Mutex
	holds   map[*Hold]struct{}
	running bool
	idle    bool      // run found nothing to renew at its last step
	nextAt  time.Time // when run wakes up next (the zero time: now)
	rounds  int       // renewal rounds in flight
	scratch []*Hold   // run's list of holds, reused
	wg      sync.WaitGroup
	ticks   uint64 // completed renewal rounds, for tests
	calls   uint64 // renewal script calls sent, for tests and benchmarks
}

// wait waits for the renewal goroutines to stop after closing was closed.
func (w *watchdog) wait() { w.wg.Wait() }

// run keeps the schedule until no hold is left and no round is in flight,
// or the client closes.
func (w *watchdog) run() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, ok := w.step(time.Now())
		if !ok {
			return
		}
		timer.Reset(time.Until(next))
		select {
		case <-w.hs.closing:
			w.mu.Lock()
			w.running = false
			w.mu.Unlock()
			return
		case <-timer.C:
		case <-w.wake:
		}
	}
}

// step ends the holds whose lease ran out by now, starts a round for the
// holds due, and returns when to step again; false when nothing is left
// (run ends).
func (w *watchdog) step(now time.Time) (time.Time, bool) {
	w.mu.Lock()
	if len(w.holds) == 0 && w.rounds == 0 {
		defer w.mu.Unlock()
		return w.idleLocked(now)
	}
	w.idle = false
	holds := w.scratch[:0]
	for h := range w.holds {
		holds = append(holds, h)
	}
	w.mu.Unlock()

	next := now.Add(time.Hour)
	var due, ended []*Hold
	for _, h := range holds {
		h.mu.Lock()
		end := h.leaseEndLocked()
		switch {
		case !now.Before(end):
			ended = append(ended, h)
		case !h.inRound && !now.Before(h.due.Add(-h.lease/6)):
			// Due, or due within half its interval when another is due
			// (step wakes up at the first due): renewed now with the
			// others, in as few calls as possible. Holds due apart come
			// together so within an interval: of two groups, the later
			// is due within half an interval of the earlier, or the
			// earlier within half an interval of the later.
			h.inRound = true
			due = append(due, h)
			next = minTime(next, end)
		case h.inRound:
			next = minTime(next, end)
		default:
			next = minTime(next, minTime(end, h.due))
		}
		h.mu.Unlock()
	}
	clear(holds)
	w.mu.Lock()
	w.scratch = holds[:0]
	w.nextAt = next
	if len(due) > 0 {
		w.rounds++
		w.wg.Add(1)
	}
	w.mu.Unlock()
	if len(ended) > 0 && w.endLeases(ended, now) {
		next = now // one was renewed meanwhile: schedule it again
	}
	if len(due) > 0 {
		go w.renew(due)
	}
	return next, true
}

// idleLocked is step with nothing to renew (w.mu held): the goroutine
// ends after idleLinger without a hold, so that a client taking and
// releasing holds one after another does not start one (and its timer)
// every time.
func (w *watchdog) idleLocked(now time.Time) (time.Time, bool) {
	if w.idle {
		w.running = false
		return time.Time{}, false
	}
	w.idle = true
	w.nextAt = now.Add(idleLinger)
	return w.nextAt, true
}

// endLeases ends the holds whose lease ran out at now, counts and
// reports them, and reports whether one of them was renewed meanwhile.
func (w *watchdog) endLeases(ended []*Hold, now time.Time) (renewed bool) {
	var tick RenewalTick
	for _, h := range ended {
		if h.endLease(now) {
			tick.Lost++
		} else if h.Err() == nil {
			renewed = true
		}
	}
	w.renewed(tick)
	return renewed
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// leaseEndLocked returns when h's lease ends on the client's clock
// (h.mu held): its lease after the last write that extended it
// (lastOK), less the margin (LeaseMargin).
func (h *Hold) leaseEndLocked() time.Time {
	return h.lastOK.Add(h.lease - LeaseMargin(h.lease))
}

// endLease ends h, whose lease ran out at now on the client's clock, as
// lost, and reports whether it ended it. The cause wraps
// [errs.ErrNotReplicated] when a renewal ran on the primary since the last
// acknowledged write but the replicas did not acknowledge it: a failover
// could bring back the older lease, so the hold ends before a promoted
// replica could let another owner in.
func (h *Hold) endLease(now time.Time) bool {
	h.mu.Lock()
	live := h.err == nil && now.After(h.leaseEndLocked())
	unacked, lease := h.unacked, h.lease
	h.mu.Unlock()
	if !live {
		return false
	}
	if unacked != nil {
		h.hs.ctr.lostUnacked.Add(1)
		h.end(fmt.Errorf("%w: no renewal acknowledged by the replicas within the lease of %v (less a margin of %v), "+
			"so a promoted replica could let another owner in: %w", errs.ErrLockLost, lease, LeaseMargin(lease), unacked))
	} else {
		h.end(fmt.Errorf("%w: no renewal succeeded within the lease of %v (less a margin of %v)",
			errs.ErrLockLost, lease, LeaseMargin(lease)))
	}
	return true
}

// batchKey groups the holds renewed in one call: same script, same lease
// (the script's ARGV[1]), same cluster slot.
type batchKey struct {
	script *redis.Script
	lease  time.Duration
	slot   int
}

// renewBatch is one renewal script call.
type renewBatch struct {
	holds []*Hold
	cmd   lua.Command
}

// renew is one renewal round: it renews holds (inRound, each due) in as
// few script calls as their scripts, leases and slots allow (MaxBatch
// holds each), sent at once through the client's script pipeline, and
// applies the results. It counts and reports the round ([watchdog.renewed]).
func (w *watchdog) renew(holds []*Hold) {
	defer w.wg.Done()
	began := time.Now()
	groups := make(map[batchKey][]*Hold)
	var order []batchKey
	timeout := time.Duration(0)
	for _, h := range holds {
		spec := h.renewal()
		h.mu.Lock()
		lease := h.lease
		h.mu.Unlock()
		k := batchKey{script: spec.Script, lease: lease}
		if w.cluster {
			k.slot = keys.Slot(spec.Keys[0])
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], h)
		if timeout == 0 || lease/3 < timeout {
			timeout = lease / 3
		}
	}
	var batches []renewBatch
	for _, k := range order {
		hs := groups[k]
		for len(hs) > 0 {
			n := min(len(hs), MaxBatch)
			batches = append(batches, newRenewBatch(k, hs[:n]))
			hs = hs[n:]
		}
	}
	w.mu.Lock()
	w.calls += uint64(len(batches))
	w.mu.Unlock()

	// A round's calls are bounded by a third of the shortest lease (the
	// next renewal is due then) plus the acknowledgement's own bound (a
	// reply comes after its WAIT), and end when the client closes.
	ctx, cancel := context.WithTimeout(w.ctx, timeout+w.pipe.Settings().Timeout)
	defer cancel()
	ticks := make([]RenewalTick, len(batches))
	var wg sync.WaitGroup
	for i := range batches {
		if i == len(batches)-1 {
			ticks[i] = w.send(ctx, batches[i])
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ticks[i] = w.send(ctx, batches[i])
		}()
	}
	wg.Wait()

	var tick RenewalTick
	for _, t := range ticks {
		tick.Renewed += t.Renewed
		tick.Failed += t.Failed
		tick.Lost += t.Lost
	}
	tick.Duration = time.Since(began)
	w.renewed(tick)
	w.mu.Lock()
	w.ticks++
	w.rounds--
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// watchKey has h renewed at once whenever its key is deleted, expires or
// is evicted, by the key's keyspace notifications (events.go), until stop
// closes: a lost hold ends within a round trip instead of at its next
// renewal. Only watchdog-renewed holds are watched, in a goroutine Close
// waits for.
func (w *watchdog) watchKey(h *Hold, stop <-chan struct{}) {
	if h.renew == nil || w.mux == nil || !w.bg.Track() {
		return
	}
	go func() {
		defer w.bg.Untrack()
		if err := watchLoss(w.ctx, w.mux, h.key.Key, stop, func() { w.recheck(h) }); err != nil {
			w.hs.log.Debug("redisync: no keyspace notifications of a held key: its renewals alone tell a loss",
				"key", h.key.Key, "err", err)
		}
	}()
}

// recheck renews h alone, at once, as a round does (send): a hold found
// gone ends, one still the owner's has its lease extended. A hold no
// longer renewed (released) is left alone.
func (w *watchdog) recheck(h *Hold) {
	h.mu.Lock()
	live, lease := h.renewing && h.err == nil, h.lease
	h.mu.Unlock()
	if !live {
		return
	}
	spec := h.renewal()
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, lease/3+w.pipe.Settings().Timeout)
	defer cancel()
	w.renewed(w.send(ctx, newRenewBatch(batchKey{script: spec.Script, lease: lease}, []*Hold{h})))
}

func newRenewBatch(k batchKey, holds []*Hold) renewBatch {
	call := lua.NewRenewalBatch(Millis(k.lease), len(holds))
	for _, h := range holds {
		spec := h.renewal()
		call.Add(spec.Keys, spec.Args, h.Count()) // the count this client believes in
	}
	return renewBatch{holds: holds, cmd: lua.NewCommand(k.script, call.Keys(), call.Args())}
}

// send sends one renewal call through the script pipeline, waiting for
// the replicas as acquisitions do, and applies its result.
func (w *watchdog) send(ctx context.Context, b renewBatch) RenewalTick {
	sent := time.Now()
	sync := w.pipe.NewSync()
	reply := w.pipe.EvalCommand(ctx, sync, b.cmd)
	t, err := w.apply(b, reply, sync.SyncErr(), sent)
	if err != nil {
		w.hs.log.Warn("redisync: renewal failed, will retry", "holds", len(b.holds), "err", err)
	}
	return t
}

// apply applies one call's result (reply, and ackErr: the replicas'
// acknowledgement error), sent at sent: a hold renewed and acknowledged
// has its lease run from sent, unless its lease had already run out on
// the client's clock (it is ending); a hold renewed but not acknowledged
// keeps its lease (unacked); a hold found gone is lost. Every hold is
// due again a third of its lease after sent, or sooner after a failure.
func (w *watchdog) apply(b renewBatch, reply *redis.Cmd, ackErr error, sent time.Time) (t RenewalTick, err error) {
	res, err := reply.Int64Slice()
	if err == nil && len(res) != len(b.holds) {
		err = fmt.Errorf("renewal script returned %d results for %d holds", len(res), len(b.holds))
	}
	now := time.Now()
	var unacked int
	for i, h := range b.holds {
		var r int64
		if err == nil {
			r = res[i]
		}
		switch applyHold(h, r, err, ackErr, now, sent) {
		case renewFailed:
			t.Failed++
		case renewUnacked:
			unacked++
		case renewDone:
			t.Renewed++
		case renewGone:
			h.end(w.hs.evict.goneErr(h.key.Key)) // names eviction when the primary may evict (eviction.go)
			t.Lost++
		}
	}
	if unacked > 0 {
		w.hs.ctr.renewUnacked.Add(uint64(unacked)) // Stats.RenewalsNotReplicated
		w.hs.log.Warn("redisync: renewals not acknowledged by the primary's replicas in time; "+
			"these holds end when their acknowledged lease runs out unless a later renewal is acknowledged",
			"holds", unacked, "err", ackErr)
	}
	return t, err
}

// renewOutcome is what one renewal round did to one hold (applyHold).
type renewOutcome int

const (
	renewNone    renewOutcome = iota // nothing: the hold's renewal had stopped, or its lease ran out meanwhile
	renewFailed                      // the call failed
	renewUnacked                     // the replicas did not acknowledge: the hold keeps its lease
	renewDone                        // renewed and acknowledged
	renewGone                        // found gone from Redis: the hold is lost
)

// applyHold applies the result r of one hold's renewal (err: the call's
// error; ackErr: the replicas' acknowledgement error), sent at sent, seen
// at now, to h, and says what it was. A hold whose renewal was stopped
// meanwhile (by Unlock) is not lost when its field is found gone: it was
// released. Nor is one found gone by a server whose replicas did not
// acknowledge the round: it may be an old primary that a split brain left
// serving, which never had the hold. Such a hold lives on until its
// acknowledged lease ends, unless a later renewal is acknowledged.
func applyHold(h *Hold, r int64, err, ackErr error, now, sent time.Time) renewOutcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inRound = false
	h.due = sent.Add(min(h.lease/3, maxRetryDelay))
	switch {
	case !h.renewing || h.err != nil:
		return renewNone
	case err != nil:
		return renewFailed
	case ackErr != nil && (r == lua.RenewLockRenewed || r == 0): // renew_read's RenewReadRenewed too
		h.unacked = ackErr
		return renewUnacked
	case r == 0:
		return renewGone
	case r == lua.RenewLockRenewed && now.Before(h.leaseEndLocked()):
		h.lastOK = maxTime(h.lastOK, sent)
		h.unacked = nil
		h.due = sent.Add(h.lease / 3)
		return renewDone
	}
	return renewNone
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// WatchdogStats reports the watchdog's activity, for tests and benchmarks.
type WatchdogStats struct {
	Holds int    // holds being renewed
	Ticks uint64 // renewal rounds completed
	Calls uint64 // renewal script calls sent (batched with the client's other scripts)
}

// Stats returns a snapshot of the watchdog's activity.
func (hs *Holds) Stats() WatchdogStats {
	hs.wd.mu.Lock()
	defer hs.wd.mu.Unlock()
	return WatchdogStats{Holds: len(hs.wd.holds), Ticks: hs.wd.ticks, Calls: hs.wd.calls}
}

// RenewSpec says how the watchdog renews one hold. Script is a batch script
// in the common renewal encoding ([lua.RenewalBatch]); Keys and Args are the
// hold's part of it, from its typed binding (NewRenewSpec).
//
// Holds sharing Script, lease and the cluster slot of Keys[0] are renewed
// in one call, at most MaxBatch at a time.
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
	Of func(k HoldKey) lua.Renewal
}

// NewRenewSpec returns how the watchdog renews a hold, from the hold's
// typed renewal binding ([lua.RenewLockHold], [lua.RenewReadHold]).
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

// Millis converts a duration to the whole milliseconds Redis counts leases
// in, rounding up: every positive duration is at least 1. Durations ≤ 0 give
// 0.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// renewed counts and reports one watchdog round.
func (w *watchdog) renewed(t RenewalTick) {
	w.hs.ctr.renewed.Add(uint64(t.Renewed))
	w.hs.ctr.renewFailed.Add(uint64(t.Failed))
	if h := w.hs.hooks; h != nil && h.RenewalTick != nil {
		h.RenewalTick(t)
	}
}
