package chaos

import (
	"context"
	"fmt"
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
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/redistest"
)

// run is the state of one run.
type run struct {
	cfg       Config
	h         *History
	srv       *redistest.Server    // Single: the server
	sent      *redistest.Sentinel  // Replicated: the primary, the replica and the sentinel
	cl        *redistest.Cluster   // Cluster: three masters and their replicas
	net       *netTopo             // Netns: the lab, its servers, sentinels and clients
	rl        *redlockLab          // the RedLock's masters (every topology but Netns)
	foreign   *foreignProc         // the foreign client (Config.Foreign), while it runs
	servers   []*redistest.Server  // the data servers, in a fixed order
	proxies   [][]*redistest.Proxy // per client, its proxy in front of each of servers
	clients   []*redisync.Client
	rdbs      []redis.UniversalClient
	closed    bool // clients and rdbs closed (closeClients)
	workers   []*worker
	registers []*register
	// adminRDB is direct to the servers (no proxy): faults, sampler,
	// final checks. A *redis.ClusterClient in Cluster.
	adminRDB  redis.UniversalClient
	recordTTL time.Duration
	liveBound time.Duration

	faultsMu sync.Mutex
	faults   []Fault

	findings    []string // what the checks noted without it being a violation
	skipSemLive bool     // every counted permit was lost: no liveness round on it
	failovers   int      // promotions of a replica (Replicated, Cluster)
	migrations  int      // slots moved to another master (Cluster)
	// clockAhead is how far ahead of the old primary's the clock of a
	// server promoted during the fault under way was, at most (clock.go).
	clockAhead   time.Duration
	clockAheadMu sync.Mutex

	warnMu   sync.Mutex
	warnings []string // the library's warnings (warnLog)

	vmu        sync.Mutex
	violations []Violation
	repeats    map[string]int  // violateOnce key → index in violations
	seenAgain  []int           // per violation: how often it was found again
	liveness   []time.Duration // how long each liveness-round acquisition took

	beliefs       beliefs       // what the workers believed they held, when (beliefs.go)
	beliefOverlap time.Duration // the longest overlap of two holders' beliefs
	overlaps      []overlap     // the overlaps beyond the margin

	state  stateFaults // the restarts without data and the evictions (statefaults.go)
	parts  parts       // the election, the schedulers and the fences (parts.go)
	goCall goCalls     // the Go workers' calls on the foreign client's locks (foreign.go)
}

// Violation is one failed check.
type Violation struct {
	At      int64 // when, on the history's clock, what it found happened (0: not known)
	Check   string
	Detail  string
	Excerpt []string // the history around it
	HTML    string   // porcupine's visualization, if written
	// Apart, when set, says why it is counted apart with the faults no
	// lock survives (Report.Unsurvivable) whatever its time.
	Apart string
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Check, v.Detail)
	if v.Apart != "" {
		fmt.Fprintf(&b, " (counted apart: %s)", v.Apart)
	}
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
	if os.Getenv("CHAOS_DEBUG") != "" { // with CHAOS_LOG=1: each violation's excerpt as it is found
		for _, l := range v.Excerpt {
			r.logf("    %s", l)
		}
	}
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
		r.violate(Violation{At: call, Check: "liveness", Detail: fmt.Sprintf(
			"w%d on %s: blocking acquisition after the faults stopped took %v (bound %v), error: %v",
			worker, object, d.Round(time.Millisecond), r.liveBound, err)})
	}
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
	keys, err := r.keys(ctx, "redisync_request:*probe*")
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
// Neither a failed acquisition nor a failed release can explain a loss:
// the acquisition's undo and the release go on in the background until
// Redis answers, and the client's ledger on the counted semaphore
// (lua/prelude_ledger.lua) tells them whether the request ran however long
// the partition lasted, past the request record TTL included. So with
// PermitsAll, the default, every loss is a violation. PermitsStrict lets
// failed releases explain a loss (a finding that names them), PermitsLoose
// failed acquisitions as well, for comparing with older behaviour.
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

// earliestLoss is how long after an acquisition's call its hold can end
// without a fault no lease survives: the lease, less the margin by which
// the library ends a watchdog-renewed hold before its acknowledged lease
// runs out (core.LeaseMargin: 1% of the lease plus 2 ms). A hold whose
// renewals failed (a failover, a partition) ends then, and its holder's
// release call clears what Redis keeps of it, so another can hold it
// from then on.
func (r *run) earliestLoss() time.Duration {
	return r.cfg.Lease - core.LeaseMargin(r.cfg.Lease)
}
