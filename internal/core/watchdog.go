package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/replica"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// MaxBatch is the most holds one renewal script call renews.
const MaxBatch = 100

// maxRetryDelay bounds the wait before renewals that failed with an error
// are tried again, so a short outage does not cost a whole interval.
const maxRetryDelay = time.Second

// watchdog renews every watchdog-held hold of one client from one
// goroutine, which runs only while there is something to renew.
type watchdog struct {
	hs       *Holds
	rdb      redis.UniversalClient
	cluster  bool
	lease    time.Duration
	replicas *replica.Replicas
	// leaseMillis and ackMillis: Config's.
	leaseMillis, ackMillis int64
	mu                     sync.Mutex
	holds                  map[*Hold]struct{}
	running                bool
	wg                     sync.WaitGroup
	ticks                  uint64 // completed renewal rounds, for tests
	calls                  uint64 // renewal script calls sent, for tests and benchmarks
	trips                  uint64 // pipelines sent
}

// wait waits for the renewal goroutine to stop after closing was closed.
func (w *watchdog) wait() { w.wg.Wait() }

func (w *watchdog) run() {
	defer w.wg.Done()
	interval := w.lease / 3
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-w.hs.closing:
			w.mu.Lock()
			w.running = false
			w.mu.Unlock()
			return
		case <-timer.C:
		}
		failed := w.renewAll(interval)
		w.mu.Lock()
		w.ticks++
		if len(w.holds) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		next := interval
		if failed {
			next = min(interval, maxRetryDelay)
		}
		timer.Reset(next)
	}
}

type batchKey struct {
	script *redis.Script
	slot   int
}

// renewAll renews every registered hold once and reports whether any batch
// failed with an error (those holds are retried soon, and lost once no
// renewal has succeeded for a whole lease). It counts and reports the round
// ([Client.renewed]).
func (w *watchdog) renewAll(timeout time.Duration) (failed bool) {
	var tick RenewalTick
	began := time.Now()
	defer func() {
		tick.Duration = time.Since(began)
		w.hs.c.renewed(tick)
	}()
	w.mu.Lock()
	holds := make([]*Hold, 0, len(w.holds))
	for h := range w.holds {
		holds = append(holds, h)
	}
	w.mu.Unlock()

	now := time.Now()
	groups := make(map[batchKey][]*Hold)
	var order []batchKey
	for _, h := range holds {
		h.mu.Lock()
		expired := now.Sub(h.lastOK) >= h.lease
		lease := h.lease
		h.mu.Unlock()
		if expired {
			h.end(fmt.Errorf("%w: no renewal succeeded within the lease of %v", errs.ErrLockLost, lease))
			tick.Lost++
			continue
		}
		spec := h.renewal()
		k := batchKey{script: spec.Script}
		if w.cluster {
			k.slot = keys.Slot(spec.Keys[0])
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], h)
	}

	var batches []renewBatch
	for _, k := range order {
		hs := groups[k]
		for len(hs) > 0 {
			n := min(len(hs), MaxBatch)
			batches = append(batches, newRenewBatch(w.leaseMillis, k.script, hs[:n]))
			hs = hs[n:]
		}
	}
	for len(batches) > 0 {
		n := min(len(batches), maxPipeline)
		r, err := w.renewPipelined(batches[:n], timeout)
		tick.Renewed += r.Renewed
		tick.Failed += r.Failed
		tick.Lost += r.Lost
		if err != nil {
			failed = true
			w.hs.log.Warn("redisync: renewal failed, will retry", "batches", n, "err", err)
		}
		batches = batches[n:]
	}
	return failed
}

// maxPipeline bounds the renewal scripts sent in one pipeline (100 holds
// each): 1,000 holds cost one round trip per tick (per node on a Cluster).
const maxPipeline = 64

// renewBatch is one renewal script call.
type renewBatch struct {
	script *redis.Script
	holds  []*Hold
	keys   []string
	args   []any
}

func newRenewBatch(leaseMillis int64, script *redis.Script, holds []*Hold) renewBatch {
	call := lua.NewRenewalBatch(leaseMillis, len(holds))
	for _, h := range holds {
		spec := h.renewal()
		call.Add(spec.Keys, spec.Args, h.Count()) // the count this client believes in
	}
	return renewBatch{script: script, holds: holds, keys: call.Keys(), args: call.Args()}
}

// renewPipelined sends the batches in one pipeline (EVALSHA, then EVAL for
// those the server does not have cached) and applies the results. It
// returns the holds renewed, found gone and failed (in a batch whose call
// failed), and the first error; batches that succeeded are applied
// regardless.
func (w *watchdog) renewPipelined(batches []renewBatch, timeout time.Duration) (RenewalTick, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	cmds := make([]*redis.Cmd, len(batches))
	w.count(len(batches))
	ack := w.ackWait(ctx)
	var acks []*redis.IntCmd
	_, _ = w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range batches {
			cmds[i] = b.script.EvalSha(ctx, p, b.keys, b.args...)
		}
		acks = append(acks, ack(p))
		return nil
	})
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		w.count(len(missing))
		_, _ = w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range missing {
				b := batches[i]
				cmds[i] = b.script.Eval(ctx, p, b.keys, b.args...)
			}
			acks = append(acks, ack(p))
			return nil
		})
	}
	var first error
	var r RenewalTick
	for i, cmd := range cmds {
		renewed, gone, err := w.apply(batches[i], cmd, start)
		r.Renewed += renewed
		r.Lost += gone
		if err != nil {
			r.Failed += len(batches[i].holds)
			if first == nil {
				first = err
			}
		}
	}
	if r.Renewed > 0 && !w.acknowledged(acks) {
		w.hs.c.ctr.renewUnacked.Add(uint64(r.Renewed)) // Stats.RenewalsNotReplicated
		w.hs.log.Warn("redisync: renewals not acknowledged by the primary's replicas in time; a failover now could lose these holds",
			"holds", r.Renewed)
	}
	return r, first
}

// ackWait returns what the watchdog adds to a renewal pipeline for replica
// acknowledgement (WithReplicaSync): WAIT on the primary, which a renewal
// pipeline of a single node or a Sentinel client reaches on one
// connection, when that primary has replicas; nothing otherwise (a
// Cluster's pipelines go to several nodes, where WAIT would not follow
// the renewals). The watchdog does not hold anyone up while it waits, and
// an unacknowledged renewal is only counted (Stats.RenewalsNotReplicated),
// as Redisson does not wait for renewals at all.
func (w *watchdog) ackWait(ctx context.Context) func(redis.Pipeliner) *redis.IntCmd {
	none := func(redis.Pipeliner) *redis.IntCmd { return nil }
	rs := w.replicas.Settings()
	node, ok := w.rdb.(*redis.Client)
	if !w.replicas.On() || !ok {
		return none
	}
	n, err := w.replicas.Count(ctx, node, "")
	if err != nil || n == 0 {
		return none
	}
	want := rs.Replicas
	if want == replica.All {
		want = n
	}
	// At most a sixth of the watchdog timeout (Config.AckMillis): a
	// lagging replica must not delay the next tick.
	timeout := w.ackMillis
	return func(p redis.Pipeliner) *redis.IntCmd {
		cmd := redis.NewIntCmd(ctx, "wait", int64(want), timeout)
		_ = p.Process(ctx, cmd)
		return cmd
	}
}

// acknowledged reports whether every WAIT of a tick (nil: none sent) saw
// as many replicas as it asked for.
func (w *watchdog) acknowledged(acks []*redis.IntCmd) bool {
	for _, a := range acks {
		if a == nil {
			continue
		}
		if a.Err() != nil || a.Val() < a.Args()[1].(int64) {
			return false
		}
	}
	return true
}

// count records script calls and one round trip, for WatchdogStats.
func (w *watchdog) count(calls int) {
	w.mu.Lock()
	w.calls += uint64(calls)
	w.trips++
	w.mu.Unlock()
}

// apply applies one batch's result: renewed holds count from start, holds
// found gone are lost. It returns how many of each (holds released
// meanwhile count as neither).
func (w *watchdog) apply(b renewBatch, cmd *redis.Cmd, start time.Time) (renewed, gone int, err error) {
	res, err := cmd.Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != len(b.holds) {
		return 0, 0, fmt.Errorf("renewal script returned %d results for %d holds", len(res), len(b.holds))
	}
	for i, h := range b.holds {
		h.mu.Lock()
		live := h.renewing && h.err == nil
		if live && res[i] == lua.RenewLockRenewed { // renew_read's RenewReadRenewed too
			renewed++
			if start.After(h.lastOK) {
				h.lastOK = start
			}
		}
		h.mu.Unlock()
		// A hold whose renewal was stopped meanwhile (by Unlock) is not
		// lost when its field is found gone: it was released.
		if live && res[i] == 0 {
			h.end(w.hs.c.goneErr(h)) // names eviction when the primary may evict (eviction.go)
			gone++
		}
	}
	return renewed, gone, nil
}

// WatchdogStats reports the watchdog's activity, for tests and benchmarks.
type WatchdogStats struct {
	Holds      int    // holds being renewed
	Ticks      uint64 // renewal rounds completed
	Calls      uint64 // renewal script calls sent
	RoundTrips uint64 // pipelines sent (one round trip each, per node on a Cluster)
}

// Stats returns a snapshot of the watchdog's activity.
func (hs *Holds) Stats() WatchdogStats {
	hs.wd.mu.Lock()
	defer hs.wd.mu.Unlock()
	return WatchdogStats{Holds: len(hs.wd.holds), Ticks: hs.wd.ticks, Calls: hs.wd.calls, RoundTrips: hs.wd.trips}
}

// RenewSpec says how the watchdog renews one hold. Script is a batch script
// in the common renewal encoding ([lua.RenewalBatch]); Keys and Args are the
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
