package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Target is one target of issue 16 checked on one run's results: a figure
// of redisync's plain lock (library "redisync"), either as a ratio to a
// reference from the same run (a peer's figure, or the PING round trip)
// or, where the target is absolute, as it is.
type Target struct {
	Name     string `json:"name"`
	Scenario string `json:"scenario"`
	// Metric is the Result field compared: ops_per_sec, p50_ms, p99_ms,
	// round_trips_per_op or commands_per_op.
	Metric   string   `json:"metric"`
	Redisync *float64 `json:"redisync"`
	// Reference is the figure redisync's is divided by, and ReferenceOf
	// where it comes from ("redislock", "best peer: redsync", "best
	// polling peer: redislock-linear10ms", "rtt p50"); both empty for an
	// absolute target.
	Reference   *float64 `json:"reference"`
	ReferenceOf string   `json:"reference_of,omitempty"`
	// Ratio is Redisync / Reference; null for an absolute target.
	Ratio *float64 `json:"ratio"`
	// Target says what must hold ("≥ 0.9×" for a ratio, "≤ 3" for an
	// absolute figure); AtLeast and
	// Bound say it as data: the ratio (or, for an absolute target, the
	// figure) must be ≥ Bound when AtLeast, else ≤ Bound.
	Target  string  `json:"target"`
	Bound   float64 `json:"bound"`
	AtLeast bool    `json:"at_least"`
	// Pass is null when the run has no row to judge by (a scenario or
	// library not selected, or no peer of the kind).
	Pass *bool `json:"pass"`
}

// Peers are the libraries redisync is compared with; polling peers are
// those whose waiters retry on a timer. rueidislock is a peer but does not
// poll: its waiters sleep until the server's invalidation of the lock's
// keys (client-side caching) wakes them.
func isPeer(lib string) bool {
	return lib == "redsync" || lib == "redislock" || strings.HasPrefix(lib, "redislock-") || lib == "rueidislock"
}

func isPollingPeer(lib string) bool { return isPeer(lib) && lib != "rueidislock" }

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
	}
	panic("unknown metric " + name)
}

// evaluateTargets checks issue 16's targets on results: uncontended ops/s
// ≥ 0.9× redislock's and p50 ≤ 1.3× redislock's; at most 8 commands per
// uncontended lock+unlock; handoff p50 ≤ 6× the PING p50; in every
// contended scenario ops/s ≥ 1.0× the best peer's, p99 ≤ 0.5× the best
// (lowest) polling peer's and at most 3 round trips per acquisition;
// many-locks ops/s ≥ 0.9× the best peer's.
func evaluateTargets(results []Result) []Target {
	find := func(sc, lib string) (Result, bool) {
		for _, r := range results {
			if r.Scenario == sc && r.Library == lib {
				return r, true
			}
		}
		return Result{}, false
	}
	// best returns the peer row of sc (polling peers only if polling) with
	// the highest (or, lowest) figure.
	best := func(sc, m string, polling, highest bool) (*float64, string) {
		var v *float64
		lib := ""
		for _, r := range results {
			if r.Scenario != sc || !isPeer(r.Library) || (polling && !isPollingPeer(r.Library)) {
				continue
			}
			x := metric(r, m)
			if x == nil {
				continue
			}
			if v == nil || (highest && *x > *v) || (!highest && *x < *v) {
				v, lib = x, r.Library
			}
		}
		return v, lib
	}
	var out []Target
	ratio := func(name, sc, m string, ref *float64, refOf string, atLeast bool, bound float64) {
		t := Target{Name: name, Scenario: sc, Metric: m, ReferenceOf: refOf, Bound: bound, AtLeast: atLeast}
		t.Target = fmt.Sprintf("%s %.1f×", cmpSign(atLeast), bound)
		if r, ok := find(sc, "redisync"); ok {
			t.Redisync = metric(r, m)
		}
		t.Reference = ref
		if t.Redisync != nil && ref != nil && *ref > 0 {
			q := *t.Redisync / *ref
			t.Ratio = f(q)
			t.Pass = judge(q, atLeast, bound)
		}
		out = append(out, t)
	}
	absolute := func(name, sc, m string, atLeast bool, bound float64) {
		t := Target{Name: name, Scenario: sc, Metric: m, Bound: bound, AtLeast: atLeast}
		t.Target = fmt.Sprintf("%s %g", cmpSign(atLeast), bound)
		if r, ok := find(sc, "redisync"); ok {
			t.Redisync = metric(r, m)
		}
		if t.Redisync != nil {
			t.Pass = judge(*t.Redisync, atLeast, bound)
		}
		out = append(out, t)
	}
	peerRow := func(sc, lib, m string) (*float64, string) {
		if r, ok := find(sc, lib); ok {
			return metric(r, m), lib
		}
		return nil, lib
	}

	v, of := peerRow(scUncontended, "redislock", "ops_per_sec")
	ratio("uncontended ops/s vs redislock", scUncontended, "ops_per_sec", v, of, true, 0.9)
	v, of = peerRow(scUncontended, "redislock", "p50_ms")
	ratio("uncontended p50 vs redislock", scUncontended, "p50_ms", v, of, false, 1.3)
	absolute("uncontended commands per lock+unlock", scUncontended, "commands_per_op", false, 8)
	v, _ = peerRow(scRTT, "go-redis", "p50_ms")
	ratio("handoff p50 vs PING p50", scHandoff, "p50_ms", v, "rtt p50", false, 6)
	for _, sc := range contendedScenarios {
		v, of = best(sc, "ops_per_sec", false, true)
		ratio(sc+" ops/s vs the best peer", sc, "ops_per_sec", v, bestOf("best peer", of), true, 1.0)
		v, of = best(sc, "p99_ms", true, false)
		ratio(sc+" p99 vs the best polling peer", sc, "p99_ms", v, bestOf("best polling peer", of), false, 0.5)
		absolute(sc+" round trips per acquisition", sc, "round_trips_per_op", false, 3)
	}
	v, of = best(scManyLocks, "ops_per_sec", false, true)
	ratio("many-locks ops/s vs the best peer", scManyLocks, "ops_per_sec", v, bestOf("best peer", of), true, 0.9)
	return out
}

func bestOf(kind, lib string) string {
	if lib == "" {
		return "no " + kind + " run"
	}
	return kind + ": " + lib
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
	met, judged := 0, 0
	for _, t := range targets {
		if t.Pass != nil {
			judged++
			if *t.Pass {
				met++
			}
		}
	}
	fmt.Fprintf(w, "\nTargets (issue 16; redisync = the plain lock's row; ratios within this run): %d of %d met", met, judged)
	if n := len(targets) - judged; n > 0 {
		fmt.Fprintf(w, ", %d not judged (rows not run)", n)
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | redisync | reference | ratio | must be | result |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
	for _, t := range targets {
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
	fmt.Fprintln(w)
	fmt.Fprintln(w, "- Peers: redsync, redislock-*, rueidislock; polling peers: redsync and redislock-* (rueidislock's waiters")
	fmt.Fprintln(w, "  wait for the server's invalidation messages instead). Best peer: highest ops/s; best polling peer: lowest p99.")
	for _, r := range results {
		if r.Scenario == scHandoff && r.Library == "pubsub-floor" && r.P50RTT != nil {
			fmt.Fprintf(w, "- Handoff floor: the pubsub-floor row (bare go-redis: release script, message, SET NX) hands over in %.1f× the\n", *r.P50RTT)
			fmt.Fprintln(w, "  PING p50 on this machine; no lock woken by pub/sub can do less here.")
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
	}
	if math.Abs(*v) >= 100 {
		return num(v, 0)
	}
	return num(v, 2)
}
