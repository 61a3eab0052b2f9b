package chaos

import (
	"slices"
	"time"
)

// unsurvivableKinds are the faults no Redis lock survives: a server's
// wall clock stepped forward ends every lease on it early, and one
// running much faster than the clients' ends them early by its rate
// (beyond the belief check's margin). Config.ClockForward adds them to
// the netns topology's faults.
var unsurvivableKinds = []FaultKind{FaultClockForward, FaultClockRace}

// unsurvivableAfter is how long after such a fault its effects are
// counted as its own: a lease granted before it ends early on the server
// until a lease has passed, and the clients' request deadlines, computed
// with the server clock's offset the client measured, are off until the
// client measures it again (every 30s).
const unsurvivableAfter = 30 * time.Second

// neverApart are the checks whose findings are violations whatever the
// fault: what the library promises across every fault (fencing tokens,
// the fences' refusals) and across a state loss in particular.
var neverApart = []string{"fencing", "fence", "restart without data", "eviction", "election terms", "election observe"}

// unsurvivable splits vs into the violations and what happened within
// the window of a fault of unsurvivableKinds, or of one during which a
// server whose clock was ahead of the old primary's by more than the
// library's margin was promoted (Fault.ClockAhead, clock.go): from a
// rate limiter's interval before its start, since the rate check dates a
// violation by the start of its window, to unsurvivableAfter plus a lease
// after its end; fencing violations excepted. A restart without data and
// an eviction (statefaults.go) count the same way from a rate interval
// before them to stateAfter after them, neverApart excepted; and a
// violation with Apart set is counted apart whatever its time.
func (r *run) unsurvivable(vs []Violation) (violations, within []Violation) {
	losses := r.state.lossesList()
	for _, v := range vs {
		in := v.Apart != ""
		for _, s := range losses {
			// a restart without data or an eviction: its window
			if v.At != 0 && !slices.Contains(neverApart, v.Check) &&
				v.At >= s.start-int64(rateInterval) && v.At <= s.end+int64(r.stateAfter()) {
				in = true
			}
		}
		for _, f := range r.faults {
			if (slices.Contains(unsurvivableKinds, f.Kind) || f.ClockAhead > r.serverMargin()) && v.At != 0 && v.Check != "fencing" &&
				v.At >= f.Start-int64(rateInterval) && v.At <= f.End+int64(unsurvivableAfter+r.cfg.Lease) {
				in = true
			}
		}
		if in {
			within = append(within, v)
		} else {
			violations = append(violations, v)
		}
	}
	return violations, within
}
