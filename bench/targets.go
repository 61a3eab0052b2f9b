package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Target is one target checked on one run's results: a figure of one of
// redisync's rows (Library: the plain lock's, "redisync", unless the target
// names another kind), either as a ratio to a reference from the same run
// (a peer's figure, a floor's, or another redisync kind's) or, where the
// target is absolute, as it is.
type Target struct {
	Name     string `json:"name"`
	Scenario string `json:"scenario"`
	// Library is the redisync row judged: "redisync" (the plain lock) or
	// "redisync-fair".
	Library string `json:"library"`
	// Metric is the Result field compared: ops_per_sec, p50_ms, p99_ms,
	// round_trips_per_op, commands_per_op, server_cpu_us_per_op or
	// allocs_per_op.
	Metric   string   `json:"metric"`
	Redisync *float64 `json:"redisync"`
	// Reference is the figure redisync's is divided by, and ReferenceOf
	// where it comes from ("redisson-floor", "pubsub-floor", "best peer:
	// redsync", "redisync (plain lock)"); both empty for an absolute
	// target.
	Reference   *float64 `json:"reference"`
	ReferenceOf string   `json:"reference_of,omitempty"`
	// Ratio is Redisync / Reference; null for an absolute target.
	Ratio *float64 `json:"ratio"`
	// Target says what must hold ("≥ 0.95×" for a ratio, "≤ 3" for an
	// absolute figure); AtLeast and Bound say it as data: the ratio (or,
	// for an absolute target, the figure) must be ≥ Bound when AtLeast,
	// else ≤ Bound.
	Target  string  `json:"target"`
	Bound   float64 `json:"bound"`
	AtLeast bool    `json:"at_least"`
	// Pass is null when the run has no row to judge by (a scenario or
	// library not selected, or no peer of the kind).
	Pass *bool `json:"pass"`
}

// isPeer reports whether lib is one of the libraries redisync is compared
// with: redsync, redislock-* and rueidislock. The floors (pubsub-floor,
// redisson-floor) and redisync's own kinds are no peers.
func isPeer(lib string) bool {
	if isAutoPipelined(lib) {
		return false
	}
	return lib == "redsync" || lib == "redislock" || strings.HasPrefix(lib, "redislock-") || lib == "rueidislock"
}

// contendedScenarios are those whose targets are the same.
var contendedScenarios = []string{scContended0, scContended1, scContended0Many, scContended1Many}

// metric returns the named field of r.
func metric(r Result, name string) *float64 {
	switch name {
	case "ops_per_sec":
		return r.OpsPerSec
	case "p50_ms":
		return r.P50ms
	case "p99_ms":
		return r.P99ms
	case "round_trips_per_op":
		return r.RoundTripsPerOp
	case "commands_per_op":
		return r.CommandsPerOp
	case "server_cpu_us_per_op":
		return r.ServerCPUusPerOp
	case "allocs_per_op":
		return r.AllocsPerOp
	}
	panic("unknown metric " + name)
}

// evaluateTargets checks the targets on results, each against a reference
// measured in the same run:
//   - uncontended ops/s ≥ 0.95× the redisson-floor row's, and Redis CPU per
//     uncontended lock+unlock ≤ 1.15× the redisson-floor row's: what
//     redisync adds to Redisson's own protocol;
//   - many-locks ops/s ≥ 1.5× the best peer's, and Redis CPU per
//     lock+unlock ≤ the best peer's; many-locks-replica (redisync with one
//     replica and acknowledgement on) ops/s ≥ 1.2× the best peer's
//     many-locks (without replica: the peers cannot acknowledge);
//   - handoff p50 ≤ 1.15× the pubsub-floor row's;
//   - in every contended scenario (both sizes, both holds) ops/s ≥ 1.0× the
//     best peer's and at most 3 round trips per acquisition;
//   - the fair lock's contended-0ms ops/s (16 goroutines, 0 ms hold) ≥ 0.6×
//     the plain lock's;
//   - the semaphore at most 3 round trips per acquisition;
//   - at most 30 allocations per uncontended lock+unlock (the uncontended
//     row's allocs_per_op);
//   - issue 41's: uncontended ops/s ≥ 0.9× redislock's; Redis CPU per
//     many-locks lock+unlock ≤ 1.6× that of redislock on a go-redis
//     client with AutoPipeline (redislock-autopipeline, no peer of the
//     others: it batches what the others send alone); and the same bound
//     on the server-cost rows (redislock's commands pipelined as that row
//     sends them), where the client's CPU and the machine's load count
//     least.
func evaluateTargets(results []Result) []Target {
	tg := &targeting{results: results}
	const floor = "redisson-floor"
	tg.ratio("uncontended ops/s vs redisson-floor", scUncontended, "redisync", "ops_per_sec",
		tg.figure(scUncontended, floor, "ops_per_sec"), floor, true, 0.95)
	tg.ratio("uncontended Redis CPU per lock+unlock vs redisson-floor", scUncontended, "redisync", "server_cpu_us_per_op",
		tg.figure(scUncontended, floor, "server_cpu_us_per_op"), floor, false, 1.15)
	v, of := tg.best(scManyLocks, "ops_per_sec")
	tg.ratio("many-locks ops/s vs the best peer", scManyLocks, "redisync", "ops_per_sec", v, bestPeer(of), true, 1.5)
	tg.ratio("many-locks Redis CPU per lock+unlock vs the best peer", scManyLocks, "redisync", "server_cpu_us_per_op",
		tg.figure(scManyLocks, of, "server_cpu_us_per_op"), bestPeer(of), false, 1.0)
	tg.ratio("many-locks with a replica (sync on) ops/s vs the best peer without", scManyLocksReplica, "redisync", "ops_per_sec",
		v, bestPeer(of), true, 1.2)
	tg.ratio("handoff p50 vs pubsub-floor", scHandoff, "redisync", "p50_ms",
		tg.figure(scHandoff, "pubsub-floor", "p50_ms"), "pubsub-floor", false, 1.15)
	for _, sc := range contendedScenarios {
		v, of = tg.best(sc, "ops_per_sec")
		tg.ratio(sc+" ops/s vs the best peer", sc, "redisync", "ops_per_sec", v, bestPeer(of), true, 1.0)
		tg.absolute(sc+" round trips per acquisition", sc, "round_trips_per_op", false, 3)
	}
	tg.ratio("fair lock contended-0ms ops/s vs the plain lock", scContended0, "redisync-fair", "ops_per_sec",
		tg.figure(scContended0, "redisync", "ops_per_sec"), "redisync (plain lock)", true, 0.6)
	tg.absolute("semaphore round trips per acquisition", scSemaphore, "round_trips_per_op", false, 3)
	tg.absolute("uncontended allocations per lock+unlock", scUncontended, "allocs_per_op", false, 30)
	const rl, rlAuto = "redislock", "redislock-autopipeline"
	tg.ratio("uncontended ops/s vs redislock", scUncontended, "redisync", "ops_per_sec",
		tg.figure(scUncontended, rl, "ops_per_sec"), rl, true, 0.9)
	tg.ratio("many-locks Redis CPU per lock+unlock vs redislock-autopipeline", scManyLocks, "redisync", "server_cpu_us_per_op",
		tg.figure(scManyLocks, rlAuto, "server_cpu_us_per_op"), rlAuto, false, 1.6)
	tg.ratio("server-cost Redis CPU per lock+unlock vs redislock", scServerCost, "redisync", "server_cpu_us_per_op",
		tg.figure(scServerCost, rl, "server_cpu_us_per_op"), rl, false, 1.6)
	return tg.out
}

// targeting judges targets against a run's rows, collecting them in out.
type targeting struct {
	results []Result
	out     []Target
}

// find returns the row of scenario sc and library lib.
func (tg *targeting) find(sc, lib string) (Result, bool) {
	for _, r := range tg.results {
		if r.Scenario == sc && r.Library == lib {
			return r, true
		}
	}
	return Result{}, false
}

// best returns the peer row of sc with the highest figure.
func (tg *targeting) best(sc, m string) (*float64, string) {
	var v *float64
	lib := ""
	for _, r := range tg.results {
		if r.Scenario != sc || !isPeer(r.Library) {
			continue
		}
		x := metric(r, m)
		if x == nil {
			continue
		}
		if v == nil || *x > *v {
			v, lib = x, r.Library
		}
	}
	return v, lib
}

// figure returns metric m of the row of sc and lib; nil when it was not
// run.
func (tg *targeting) figure(sc, lib, m string) *float64 {
	if r, ok := tg.find(sc, lib); ok {
		return metric(r, m)
	}
	return nil
}

// ratio adds a target on lib's figure m in sc as a multiple of ref (the
// figure of refOf): at least or at most bound.
func (tg *targeting) ratio(name, sc, lib, m string, ref *float64, refOf string, atLeast bool, bound float64) {
	t := Target{Name: name, Scenario: sc, Library: lib, Metric: m, ReferenceOf: refOf, Bound: bound, AtLeast: atLeast}
	t.Target = fmt.Sprintf("%s %g×", cmpSign(atLeast), bound)
	t.Redisync = tg.figure(sc, lib, m)
	t.Reference = ref
	if t.Redisync != nil && ref != nil && *ref > 0 {
		q := *t.Redisync / *ref
		t.Ratio = f(q)
		t.Pass = judge(q, atLeast, bound)
	}
	tg.out = append(tg.out, t)
}

// absolute adds a target on redisync's figure m in sc itself: at least or
// at most bound.
func (tg *targeting) absolute(name, sc, m string, atLeast bool, bound float64) {
	t := Target{Name: name, Scenario: sc, Library: "redisync", Metric: m, Bound: bound, AtLeast: atLeast}
	t.Target = fmt.Sprintf("%s %g", cmpSign(atLeast), bound)
	t.Redisync = tg.figure(sc, "redisync", m)
	if t.Redisync != nil {
		t.Pass = judge(*t.Redisync, atLeast, bound)
	}
	tg.out = append(tg.out, t)
}

// bestPeer names the best peer lib of a target's reference.
func bestPeer(lib string) string {
	if lib == "" {
		return "no best peer run"
	}
	return "best peer: " + lib
}

func cmpSign(atLeast bool) string {
	if atLeast {
		return "≥"
	}
	return "≤"
}

func judge(v float64, atLeast bool, bound float64) *bool {
	// Compare at the precision shown (4 significant digits), so that a
	// figure printed as meeting its bound does meet it.
	v = round4(v)
	ok := v <= bound
	if atLeast {
		ok = v >= bound
	}
	return &ok
}

// writeTargets prints the targets as a markdown table with a count of
// those met.
func writeTargets(w io.Writer, targets []Target, results []Result) {
	if len(targets) == 0 {
		return
	}
	met, judged := countMet(targets)
	fmt.Fprintf(w, "\nTargets (ratios within this run; redisync = the plain lock's row unless the target names another kind): %d of %d met", met, judged)
	if n := len(targets) - judged; n > 0 {
		fmt.Fprintf(w, ", %d not judged (rows not run)", n)
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | redisync | reference | ratio | must be | result |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
	for _, t := range targets {
		writeTargetRow(w, t)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "- Peers: redsync, redislock-*, rueidislock; best peer: the highest ops/s among them. The floors are no peers.")
	writeFloors(w, results)
}

// countMet counts the targets judged and those met.
func countMet(targets []Target) (met, judged int) {
	for _, t := range targets {
		if t.Pass != nil {
			judged++
			if *t.Pass {
				met++
			}
		}
	}
	return met, judged
}

// writeTargetRow prints a target's row of the table.
func writeTargetRow(w io.Writer, t Target) {
	ref, ratio := "–", "–"
	if t.ReferenceOf != "" || t.Reference != nil {
		ref = fmt.Sprintf("%s (%s)", metricCell(t.Reference, t.Metric), t.ReferenceOf)
	}
	if t.Ratio != nil {
		ratio = num(t.Ratio, 2) + "×"
	}
	result := "not judged"
	if t.Pass != nil {
		result = "FAIL"
		if *t.Pass {
			result = "pass"
		}
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", t.Name, metricCell(t.Redisync, t.Metric), ref, ratio, t.Target, result)
}

// writeFloors prints what the floor rows of results show.
func writeFloors(w io.Writer, results []Result) {
	for _, r := range results {
		if r.Scenario == scHandoff && r.Library == "pubsub-floor" && r.P50RTT != nil {
			fmt.Fprintf(w, "- Handoff floor: the pubsub-floor row (bare go-redis: release script, message, SET NX) hands over in %.1f× the\n", *r.P50RTT)
			fmt.Fprintln(w, "  PING p50 on this machine; no lock woken by pub/sub can do less here.")
		}
		if r.Scenario == scUncontended && r.Library == "redisson-floor" && r.OpsPerSec != nil {
			fmt.Fprintf(w, "- Compatibility floor: the redisson-floor row (Redisson's own lock protocol in bare go-redis, nothing added)\n")
			fmt.Fprintf(w, "  locks and unlocks %s times a second from one goroutine here, at %s µs of Redis CPU per pair.\n",
				num(r.OpsPerSec, 0), num(r.ServerCPUusPerOp, 0))
		}
	}
}

// metricCell formats a target's figure with its unit.
func metricCell(v *float64, m string) string {
	if v == nil {
		return "–"
	}
	switch m {
	case "ops_per_sec":
		return num(v, 0) + "/s"
	case "p50_ms", "p99_ms":
		return num(v, 3) + " ms"
	case "server_cpu_us_per_op":
		return num(v, 1) + " µs"
	}
	if math.Abs(*v) >= 100 {
		return num(v, 0)
	}
	return num(v, 2)
}
