package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/semaphore"
)

// Run runs the fault suite once and returns its report. It fails t only
// for failures of the harness; the checks' findings are in
// Report.Violations.
func Run(t testing.TB, cfg Config) *Report {
	t.Helper()
	cfg.defaults()
	// The history's clock starts first: the clients' warnings at their
	// first connection (an evicting policy) are stamped with it.
	r := &run{cfg: cfg, h: NewHistory()}
	r.startTopology(t)
	r.openClients()
	t.Cleanup(r.closeClients)
	r.setUp(t)
	if cfg.Foreign && cfg.Topology == Single {
		r.startForeign(t)
	}
	r.startParts()
	t.Cleanup(func() { r.stopSchedulers(); r.stopObserver(); r.stopEvictions() })

	// Fault phase: the workload runs while the schedule injects faults.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(stop)
		}()
	}
	samplerStop := make(chan struct{})
	samplerDone := make(chan struct{})
	s := newSampler(r)
	go func() {
		defer close(samplerDone)
		s.loop(samplerStop)
	}()
	faultsEnd := time.Now().Add(cfg.Duration)
	r.schedule(t, rand.New(rand.NewPCG(uint64(cfg.Seed), 0)), faultsEnd)
	r.logf("faults over")
	close(stop)
	wg.Wait()
	r.stopSchedulers()
	r.stopForeign()
	faultPhaseEnd := r.h.Now()

	r.settleAndProbe(t)
	close(samplerStop)
	<-samplerDone
	r.stopObserver()
	r.stopEvictions()
	r.logf("workload over")

	// Final state, with every client closed.
	var undosFailed uint64
	for _, c := range r.clients {
		undosFailed += c.Stats().UndosFailed
	}
	r.closeClients()
	r.checkFinalState(t)
	rep := r.report(time.Duration(faultPhaseEnd), undosFailed, s.judged)
	for _, c := range r.clients { // completions under way count once Close has ended them
		rep.ReleasesFailed += c.Stats().ReleasesFailed
	}
	return rep
}

// openClients creates a redisync Client on each client connection.
func (r *run) openClients() {
	for i, rdb := range r.rdbs {
		// The default replica acknowledgement: every replica, 1s.
		opts := []redisync.Option{redisync.WithWatchdogTimeout(r.cfg.Lease),
			redisync.WithRecheckInterval(r.cfg.Recheck),
			redisync.WithLogger(r.logger(i))}
		c := redisync.New(rdb, append([]redisync.Option{redisync.WithID(fmt.Sprintf("chaos-c%d-%d", i, r.cfg.Seed))}, opts...)...)
		r.clients = append(r.clients, c)
		if r.rl != nil {
			r.openRedlockClients(i, opts...)
		}
	}
}

// closeClients closes the Clients and their connections, once.
func (r *run) closeClients() {
	if r.closed {
		return
	}
	r.closed = true
	for i, c := range r.clients {
		_ = c.Close()
		_ = r.rdbs[i].Close()
		r.closeRedlockClients(i)
	}
}

// setUp prepares what must be in place before the history starts: the
// semaphores' totals, and the request record TTL the clients use; then
// the history, the fenced registers and the workers.
func (r *run) setUp(t testing.TB) {
	t.Helper()
	cfg := r.cfg
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := semaphore.New(r.clients[0], semName).TrySetPermits(ctx, cfg.Permits); err != nil {
		t.Fatalf("chaos: set up the semaphore: %v", err)
	}
	if _, err := semaphore.NewExpirable(r.clients[0], xsemName).TrySetPermits(ctx, cfg.Permits); err != nil {
		t.Fatalf("chaos: set up the expirable semaphore: %v", err)
	}
	if _, err := ratelimit.New(r.clients[0], rateName).TrySetRate(ctx, ratelimit.Overall, rateLimit, rateInterval); err != nil {
		t.Fatalf("chaos: set up the rate limiter: %v", err)
	}
	r.recordTTL = r.measureRecordTTL(t)
	r.liveBound = cfg.Recheck + 2*time.Second

	for range lockNames {
		r.registers = append(r.registers, &register{})
	}
	for c := range cfg.Clients {
		for range cfg.Workers {
			w := newWorker(r, len(r.workers), r.clients[c])
			if r.rl != nil {
				w.redlock, w.rlMembers = r.newRedLock(c)
			}
			r.workers = append(r.workers, w)
		}
	}
	r.logf("seed %d, %s: %d clients × %d workers, lease %v, permit lease %v, re-check %v, request record TTL %v, late delivery %v",
		cfg.Seed, cfg.Topology, cfg.Clients, cfg.Workers, cfg.Lease, cfg.PermitLease, cfg.Recheck, r.recordTTL, cfg.LateDelivery)
}

// settleAndProbe follows the fault phase: it lets what the faults left
// behind settle, then runs the liveness round.
func (r *run) settleAndProbe(t testing.TB) {
	t.Helper()
	// Settle: whatever a fault left behind (a hold whose release was lost, a
	// permit whose undo failed) ends within its lease.
	settle := max(r.cfg.Lease, r.cfg.PermitLease) + time.Second
	r.logf("settling for %v", settle)
	time.Sleep(settle)

	// Liveness round: every worker makes one blocking acquisition of every
	// primitive and one latch round; each must return within the bound.
	// Counted permits lost for good cannot come back; if all are, the
	// semaphore's liveness cannot be judged (see lostPermits).
	if avail := r.lostPermits(t, "before the liveness round"); avail <= 0 {
		r.skipSemLive = true
	}
	r.logf("liveness round (bound %v)", r.liveBound)
	r.latchRound(t)
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.liveRound()
		}()
	}
	wg.Wait()
}

// report gathers the run's figures, runs the history checks and returns
// the report. faultPhase is how long the fault phase lasted, undosFailed
// the clients' failed undos, samples the sampler's checked reads.
func (r *run) report(faultPhase time.Duration, undosFailed uint64, samples int) *Report {
	cfg := r.cfg
	ops := r.h.Ops()
	r.warnMu.Lock()
	warnings := append([]string(nil), r.warnings...)
	r.warnMu.Unlock()
	rep := &Report{Seed: cfg.Seed, Topology: cfg.Topology, Failovers: r.failovers, Migrations: r.migrations, UndosFailed: undosFailed, Warnings: warnings, Ops: ops, Faults: r.faults, FaultPhase: faultPhase,
		RecordTTL: r.recordTTL, Lease: cfg.Lease, LiveBound: r.liveBound, Liveness: r.liveness, Samples: samples}
	for _, ps := range r.proxies {
		for _, p := range ps {
			rep.Dropped += p.Dropped()
			rep.Held += p.Held()
			rep.LateDelivered += p.LateDelivered()
		}
	}
	for _, reg := range r.registers {
		rep.RegisterAccepted += reg.accepted
		rep.RegisterRejected += reg.rejected
	}
	r.checkHistory(ops, rep)
	for i, n := range r.seenAgain {
		if n > 0 {
			r.violations[i].Detail += fmt.Sprintf(" (found again in %d later samples)", n)
		}
	}
	rep.Violations, rep.Unsurvivable = r.unsurvivable(r.violations)
	rep.Findings = r.findings
	if len(rep.Violations) > 0 {
		rep.HistoryFile = r.writeHistory(ops)
	}
	return rep
}
