package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Config is one run of the fault suite.
type Config struct {
	Seed     int64         // seeds the workload's choices and the fault schedule
	Topology Topology      // Single (the default) or Replicated
	Duration time.Duration // the fault phase; the settle, liveness and check phases come after it
	Clients  int           // redisync clients, each with its own go-redis client and proxy. The default is 4.
	Workers  int           // worker goroutines per client, each its own owner. The default is 3.

	// Lease is the clients' watchdog timeout: the lock lease. The default
	// is 2s, and 8s for every third seed (seed % 3 == 0): a lease longer
	// than the clients' request lifetime (7s) plus two seconds lets the
	// fresh holds of the workers' handles without a context owner keep no
	// record (see internal/core's "Fresh holds"), while with 2s their
	// acquisitions record themselves.
	Lease time.Duration
	// PermitLease is the expirable semaphore's permit lease. The default is
	// 3s.
	PermitLease time.Duration
	// Recheck is the clients' re-check interval, the liveness bound's base.
	// The default is 1s.
	Recheck time.Duration
	// Permits is the total of each semaphore. The default is 3.
	Permits int64

	// LateDelivery adds the late-delivery fault: stalls longer than the
	// request record TTL, up to LateMax (default 30s).
	LateDelivery bool
	LateMax      time.Duration

	// PermitAccounting is how strictly counted permits lost for good are judged
	// (see lostPermits). The default is PermitsStrict.
	PermitAccounting PermitAccounting

	// OutDir is where porcupine's HTML goes when a model check fails.
	OutDir string
	// Logf, if set, logs faults and phases as they happen.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.Workers == 0 {
		c.Workers = 3
	}
	if c.Lease == 0 {
		c.Lease = 2 * time.Second
		if c.Seed%3 == 0 {
			c.Lease = 8 * time.Second
		}
	}
	if c.PermitLease == 0 {
		c.PermitLease = 3 * time.Second
	}
	if c.Recheck == 0 {
		c.Recheck = time.Second
	}
	if c.Permits == 0 {
		c.Permits = 3
	}
	if c.LateMax == 0 {
		c.LateMax = 30 * time.Second
	}
	if c.Topology == "" {
		c.Topology = Single
	}
}

// PermitAccounting is how strictly the counted semaphore's permits lost
// for good are judged once nothing is held.
type PermitAccounting int

const (
	// PermitsStrict is the default: a permit lost is a violation unless
	// releases that failed explain it, which is a finding naming them. A
	// failed acquisition's undo is re-sent until Redis answers, so no
	// failed acquisition may lose one.
	PermitsStrict PermitAccounting = iota
	// PermitsLoose lets failed acquisitions explain a loss as well (a
	// finding).
	PermitsLoose
	// PermitsAll makes every permit lost a violation, failed releases
	// included.
	PermitsAll
)

// run is the state of one run.
type run struct {
	cfg       Config
	h         *History
	srv       *redistest.Server    // Single: the server
	sent      *redistest.Sentinel  // Replicated: the primary, the replica and the sentinel
	servers   []*redistest.Server  // the data servers, in a fixed order
	proxies   [][]*redistest.Proxy // per client, its proxy in front of each of servers
	clients   []*redisync.Client
	rdbs      []*redis.Client
	closed    bool // clients and rdbs closed (closeClients)
	workers   []*worker
	registers []*register
	adminRDB  *redis.Client // direct to the server: faults, sampler, final checks
	recordTTL time.Duration
	liveBound time.Duration

	faultsMu sync.Mutex
	faults   []Fault

	findings    []string // what the checks noted without it being a violation
	skipSemLive bool     // every counted permit was lost: no liveness round on it
	failovers   int      // promotions of the replica (Replicated)

	warnMu   sync.Mutex
	warnings []string // the library's warnings (warnLog)

	vmu        sync.Mutex
	violations []Violation
	repeats    map[string]int  // violateOnce key → index in violations
	seenAgain  []int           // per violation: how often it was found again
	liveness   []time.Duration // how long each liveness-round acquisition took
}

// Violation is one failed check.
type Violation struct {
	Check   string
	Detail  string
	Excerpt []string // the history around it
	HTML    string   // porcupine's visualization, if written
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Check, v.Detail)
	if v.HTML != "" {
		fmt.Fprintf(&b, "\n  porcupine visualization: %s", v.HTML)
	}
	for _, l := range v.Excerpt {
		fmt.Fprintf(&b, "\n    %s", l)
	}
	return b.String()
}

func (r *run) violate(v Violation) {
	r.vmu.Lock()
	r.violations = append(r.violations, v)
	r.seenAgain = append(r.seenAgain, 0)
	r.vmu.Unlock()
	r.logf("VIOLATION %s: %s", v.Check, v.Detail)
}

// violateOnce records v the first time key is found and counts the later
// times (a sampler finds a broken state again on every read until it ends).
func (r *run) violateOnce(key string, v Violation) {
	r.vmu.Lock()
	if i, ok := r.repeats[key]; ok {
		r.seenAgain[i]++
		r.vmu.Unlock()
		return
	}
	if r.repeats == nil {
		r.repeats = map[string]int{}
	}
	r.repeats[key] = len(r.violations)
	r.vmu.Unlock()
	r.violate(v)
}

// faultsAround lists the faults that overlapped [from, to].
func (r *run) faultsAround(from, to int64) []string {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	var lines []string
	for _, f := range r.faults {
		if f.End >= from && f.Start <= to {
			lines = append(lines, "fault "+f.String())
		}
	}
	return lines
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf("%9.3fs "+format, append([]any{sec(r.h.Now())}, args...)...)
	}
}

// live records the duration of a liveness-round acquisition and flags one
// that failed or took longer than the bound.
func (r *run) live(worker int, object string, live bool, call, ret int64, err error) {
	if !live {
		return
	}
	d := time.Duration(ret - call)
	r.vmu.Lock()
	r.liveness = append(r.liveness, d)
	r.vmu.Unlock()
	if err != nil || d > r.liveBound {
		r.violate(Violation{Check: "liveness", Detail: fmt.Sprintf(
			"w%d on %s: blocking acquisition after the faults stopped took %v (bound %v), error: %v",
			worker, object, d.Round(time.Millisecond), r.liveBound, err)})
	}
}

// Run runs the fault suite once and returns its report. It fails t only
// for failures of the harness; the checks' findings are in
// Report.Violations.
func Run(t testing.TB, cfg Config) *Report {
	t.Helper()
	cfg.defaults()
	r := &run{cfg: cfg}
	r.startTopology(t)
	r.openClients()
	t.Cleanup(r.closeClients)
	r.setUp(t)

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
	faultPhaseEnd := r.h.Now()

	r.settleAndProbe(t)
	close(samplerStop)
	<-samplerDone
	r.logf("workload over")

	// Final state, with every client closed.
	var undosFailed uint64
	for _, c := range r.clients {
		undosFailed += c.Stats().UndosFailed
	}
	r.closeClients()
	r.checkFinalState(t)
	return r.report(time.Duration(faultPhaseEnd), undosFailed, s.judged)
}

// openClients creates a redisync Client on each client connection.
func (r *run) openClients() {
	for i, rdb := range r.rdbs {
		// The default replica acknowledgement: every replica, 1s.
		c := redisync.New(rdb,
			redisync.WithID(fmt.Sprintf("chaos-c%d-%d", i, r.cfg.Seed)),
			redisync.WithWatchdogTimeout(r.cfg.Lease),
			redisync.WithRecheckInterval(r.cfg.Recheck),
			redisync.WithLogger(r.logger(i)))
		r.clients = append(r.clients, c)
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
	r.recordTTL = r.measureRecordTTL(t)
	r.liveBound = cfg.Recheck + 2*time.Second

	r.h = NewHistory()
	for range lockNames {
		r.registers = append(r.registers, &register{})
	}
	for c := range cfg.Clients {
		for range cfg.Workers {
			r.workers = append(r.workers, newWorker(r, len(r.workers), r.clients[c]))
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
	rep := &Report{Seed: cfg.Seed, Topology: cfg.Topology, Failovers: r.failovers, UndosFailed: undosFailed, Warnings: warnings, Ops: ops, Faults: r.faults, FaultPhase: faultPhase,
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
	rep.Violations = r.violations
	rep.Findings = r.findings
	if len(rep.Violations) > 0 {
		rep.HistoryFile = r.writeHistory(ops)
	}
	return rep
}

// writeHistory writes the whole history and the faults to a text file in
// the output directory and returns its path ("" if it could not).
func (r *run) writeHistory(ops []Op) string {
	dir := r.outDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %s; faults:\n", r.cfg.Seed, r.cfg.Topology)
	for _, f := range r.faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	b.WriteString("operations (by call time):\n")
	for _, op := range ops {
		fmt.Fprintf(&b, "  %s\n", op)
	}
	path := filepath.Join(dir, fmt.Sprintf("seed-%d-%s-history.txt", r.cfg.Seed, r.cfg.Topology))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return ""
	}
	return path
}

// outDir is where failure artefacts go.
func (r *run) outDir() string {
	if r.cfg.OutDir != "" {
		return r.cfg.OutDir
	}
	return filepath.Join(os.TempDir(), "redisync-chaos")
}

// measureRecordTTL returns the request record TTL the clients use, read from
// Redis after one retry-safe call.
func (r *run) measureRecordTTL(t testing.TB) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	probe := "chaos:probe"
	if _, err := countdown.New(r.clients[0], probe).Delete(ctx); err != nil {
		t.Fatalf("chaos: probe: %v", err)
	}
	keys, err := r.adminRDB.Keys(ctx, "redisync_request:*probe*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("chaos: no request record found after a probe (keys %v, err %v)", keys, err)
	}
	ttl, err := r.adminRDB.PTTL(ctx, keys[0]).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("chaos: PTTL of the request record %s: %v, %v", keys[0], ttl, err)
	}
	if err := r.adminRDB.Del(ctx, keys...).Err(); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	// Round up: the record was written a moment ago.
	return ttl.Round(100 * time.Millisecond)
}

// latchRound is the liveness round's latch part: the coordinator (an extra
// client id in the history) sets each latch to the number of workers; each
// worker counts down once and waits; every wait must return within the
// bound after the last count-down.
func (r *run) latchRound(t testing.TB) {
	t.Helper()
	coord := len(r.workers)
	c := r.clients[0]
	n := int64(len(r.workers))
	for _, name := range latchNames {
		l := countdown.New(c, name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// Open the latch first (count it down to zero), so TrySetCount
		// succeeds; the calls are recorded like every other.
		for {
			call := r.h.Now()
			cnt, err := l.Count(ctx)
			r.h.Add(Op{Worker: coord, Object: name, Kind: LatchCount, N: cnt, Outcome: outcome(true, err), Err: errText(err), Call: call, Return: r.h.Now()})
			if err != nil {
				cancel()
				r.violate(Violation{Check: "liveness", Detail: fmt.Sprintf("latch %s: Count after the faults stopped: %v", name, err)})
				return
			}
			if cnt == 0 {
				break
			}
			call = r.h.Now()
			err = l.CountDown(ctx)
			r.h.Add(Op{Worker: coord, Object: name, Kind: LatchDown, Outcome: outcome(true, err), Err: errText(err), Call: call, Return: r.h.Now()})
		}
		call := r.h.Now()
		ok, err := l.TrySetCount(ctx, n)
		r.h.Add(Op{Worker: coord, Object: name, Kind: LatchSet, N: n, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: r.h.Now()})
		cancel()
		if !ok || err != nil {
			r.violate(Violation{Check: "liveness", Detail: fmt.Sprintf("latch %s: TrySetCount on an open latch after the faults stopped: %v, %v", name, ok, err)})
			return
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	lastDown := make([]int64, len(latchNames))
	type waited struct {
		worker, latch int
		ret           int64
	}
	var waits []waited
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, name := range latchNames {
				l := w.latches[i]
				ctx, cancel := context.WithTimeout(w.ctx, 3*r.liveBound)
				call := r.h.Now()
				err := l.CountDown(ctx)
				ret := r.h.Now()
				r.h.Add(Op{Worker: w.id, Object: name, Kind: LatchDown, Outcome: outcome(true, err), Err: errText(err), Call: call, Return: ret})
				mu.Lock()
				lastDown[i] = max(lastDown[i], ret)
				mu.Unlock()
				call = r.h.Now()
				err = l.Wait(ctx)
				ret = r.h.Now()
				cancel()
				r.h.Add(Op{Worker: w.id, Object: name, Kind: LatchWait, Outcome: outcome(err == nil, err), Err: errText(err), Call: call, Return: ret})
				if err != nil {
					r.violate(Violation{Check: "liveness", Detail: fmt.Sprintf("w%d: Wait on latch %s after the faults stopped: %v", w.id, name, err)})
				}
				mu.Lock()
				waits = append(waits, waited{w.id, i, ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, wr := range waits {
		if d := time.Duration(wr.ret - lastDown[wr.latch]); d > r.liveBound {
			r.violate(Violation{Check: "liveness", Detail: fmt.Sprintf(
				"w%d: wait on latch %s returned %v after the last count-down (bound %v)",
				wr.worker, latchNames[wr.latch], d.Round(time.Millisecond), r.liveBound)})
		}
	}
}

// lostPermits compares the counted semaphore's available permits with its
// total while nothing is held, and returns the available count.
//
// A failed acquisition cannot explain a loss: its undo is re-sent until
// Redis answers, so what it may have taken comes back. A failed release
// can: the library re-sends it for the request record TTL and, once its
// deadline has passed, refuses every copy, so a release whose every copy
// was held up longer than that (a partition longer than the record TTL,
// as with the 8s lease) gives nothing back, and its caller, told only
// that it failed, cannot tell whether another release would give the
// permits back twice. With PermitsStrict such a loss, within what the
// failed releases explain, is a finding that names them, and any other
// difference a violation; PermitsLoose lets failed acquisitions explain a
// loss too; with PermitsAll every loss is a violation.
func (r *run) lostPermits(t testing.TB, when string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	total := r.cfg.Permits
	v, err := r.adminRDB.Get(ctx, semName).Int64()
	var maybe, releases int64
	var failed []string
	for _, op := range r.h.Ops() {
		if op.Object == semName && op.Outcome == Unknown {
			maybe += op.N
			if op.Kind == SemRelease {
				releases += op.N
				failed = append(failed, op.String())
			}
		}
	}
	what := "indeterminate calls"
	switch r.cfg.PermitAccounting {
	case PermitsStrict:
		maybe, what = releases, "failed releases"
	case PermitsAll:
		maybe, what = 0, "nothing (PermitsAll)"
	default:
		failed = r.indeterminate(semName)
	}
	switch {
	case err != nil || v > total || total-v > maybe:
		r.violate(Violation{Check: "permits", Detail: fmt.Sprintf(
			"%s: semaphore %s has %d available with nothing held, want %d; %s explain at most %d lost (err %v); the indeterminate calls are:",
			when, semName, v, total, what, maybe, err), Excerpt: r.indeterminate(semName)})
	case v < total:
		r.findings = append(r.findings, fmt.Sprintf(
			"%s: semaphore %s: %d of %d permits lost for good, within what %s explain (the caller got an error and cannot tell whether to call again)%s: %s",
			when, semName, total-v, total, what, map[bool]string{true: "; its liveness is not judged", false: ""}[v <= 0],
			strings.Join(failed, "; ")))
	}
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
