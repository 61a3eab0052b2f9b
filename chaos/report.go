package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what one run did and found.
type Report struct {
	Seed       int64
	Topology   Topology
	Failovers  int // promotions of a replica (Replicated; Cluster: kills and CLUSTER FAILOVERs)
	Migrations int // slots moved to another master (Cluster)

	UndosFailed    uint64   // the clients' Stats.UndosFailed, before Close
	ReleasesFailed uint64   // the clients' Stats.ReleasesFailed, after Close
	Warnings       []string // the library's warnings, with the time
	Ops            []Op
	Faults         []Fault
	FaultPhase     time.Duration // how long the fault phase lasted
	RecordTTL      time.Duration // the clients' request record TTL
	Lease          time.Duration // the lock lease (Config.Lease)
	LiveBound      time.Duration
	Liveness       []time.Duration // each liveness-round acquisition's wait
	Samples        int             // sampler reads judged
	// BeliefOverlap is the longest time two holders of one lock (or a
	// writer and a reader) both believed they held it (the belief check).
	BeliefOverlap time.Duration

	Dropped, Held, LateDelivered       int // proxy counters, over all proxies
	RegisterAccepted, RegisterRejected int // fenced register writes

	Checks     []string // the checks run and their results
	Violations []Violation
	// Unsurvivable are what the checks found within the window of a fault
	// that no Redis lock survives (a server clock stepped forward, or
	// running much too fast: see unsurvivableKinds), counted apart from
	// the violations: the window each shows is what the fault cost.
	// Fencing violations are never moved here.
	Unsurvivable []Violation
	Findings     []string // noted without being violations (permits lost to indeterminate calls)
	HistoryFile  string   // the whole history, written when there are violations
}

// Summary returns the per-seed figures: operations by kind and outcome,
// faults by kind, and the checks run.
func (rep *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %s: %d operations, %d faults (%d failovers, %d migrations) in a %v fault phase; lease %v, request record TTL %v\n",
		rep.Seed, rep.Topology, len(rep.Ops), len(rep.Faults), rep.Failovers, rep.Migrations, rep.FaultPhase.Round(time.Second), rep.Lease, rep.RecordTTL)
	rep.writeOps(&b)
	rep.writeFaults(&b)
	fmt.Fprintf(&b, "  fenced registers: %d writes accepted, %d stale writes rejected\n", rep.RegisterAccepted, rep.RegisterRejected)
	var longest time.Duration
	for _, d := range rep.Liveness {
		longest = max(longest, d)
	}
	fmt.Fprintf(&b, "  liveness: %d blocking acquisitions after the faults, longest %v (bound %v)\n",
		len(rep.Liveness), longest.Round(time.Millisecond), rep.LiveBound)
	fmt.Fprintf(&b, "  sampler: %d reads of Redis checked (mutual exclusion, permits ≤ total, phantoms)\n", rep.Samples)
	for _, c := range rep.Checks {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	rep.writeLibrary(&b)
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  finding: %s\n", f)
	}
	for _, v := range rep.Unsurvivable {
		fmt.Fprintf(&b, "  within a fault no lock survives: %s: %s\n", v.Check, v.Detail)
	}
	fmt.Fprintf(&b, "  violations: %d", len(rep.Violations))
	if rep.HistoryFile != "" {
		fmt.Fprintf(&b, "; whole history: %s", rep.HistoryFile)
	}
	return b.String()
}

// writeOps writes the operations line of Summary: by kind, the total and
// the count of each outcome.
func (rep *Report) writeOps(b *strings.Builder) {
	counts := map[Kind]map[Outcome]int{}
	var kinds []Kind
	for _, op := range rep.Ops {
		if counts[op.Kind] == nil {
			counts[op.Kind] = map[Outcome]int{}
			kinds = append(kinds, op.Kind)
		}
		counts[op.Kind][op.Outcome]++
	}
	slices.Sort(kinds)
	b.WriteString("  operations:")
	for _, k := range kinds {
		c := counts[k]
		fmt.Fprintf(b, " %s=%d", k, c[OK]+c[Refused]+c[NotHeld]+c[Unknown])
		var parts []string
		for _, o := range []Outcome{OK, Refused, NotHeld, Unknown} {
			if c[o] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", o, c[o]))
			}
		}
		fmt.Fprintf(b, "(%s)", strings.Join(parts, ", "))
	}
}

// writeFaults writes the faults line of Summary, by kind, with the
// proxies' figures, then each failover.
func (rep *Report) writeFaults(b *strings.Builder) {
	fk := map[FaultKind]int{}
	for _, f := range rep.Faults {
		fk[f.Kind]++
	}
	var fks []string
	for k, n := range fk {
		fks = append(fks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(fks)
	fmt.Fprintf(b, "\n  faults: %s; proxies dropped %d replies, stalls held %d times, %d delivered after the client gave up\n",
		strings.Join(fks, " "), rep.Dropped, rep.Held, rep.LateDelivered)
	for _, f := range rep.Faults {
		if slices.Contains([]FaultKind{FaultFailover, FaultPlannedFailover, FaultMigrate, FaultSplitBrain, FaultBusOneWay, FaultMinority, FaultMasterStop}, f.Kind) {
			fmt.Fprintf(b, "  %s\n", f)
		}
	}
}

// writeLibrary writes the library line of Summary. Warnings about
// cleanups (undos, settles, leaves) in full; the others (a pub/sub
// connection lost, a registration renewal that failed during a fault)
// counted.
func (rep *Report) writeLibrary(b *strings.Builder) {
	var cleanup []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, "undo") || strings.Contains(w, "settle") || strings.Contains(w, "leave") ||
			strings.Contains(w, "complete a release") {
			cleanup = append(cleanup, w)
		}
	}
	fmt.Fprintf(b, "  library: %d undos failed (Stats.UndosFailed), %d releases not completed (Stats.ReleasesFailed); %d warnings, %d of them about cleanups\n",
		rep.UndosFailed, rep.ReleasesFailed, len(rep.Warnings), len(cleanup))
	for i, w := range cleanup {
		if i == 20 {
			fmt.Fprintf(b, "    … %d more\n", len(cleanup)-20)
			break
		}
		fmt.Fprintf(b, "    %s\n", w)
	}
}
