package chaos

import (
	"testing"
	"time"
)

// TestUnsurvivableClockAhead: a failover to a server whose clock was ahead
// of the old primary's beyond the library's margin (1% of the lease plus
// 2 ms) is counted with the faults no lock survives, and the violations in
// its window are set apart; one within the margin, or outside the window,
// is not.
func TestUnsurvivableClockAhead(t *testing.T) {
	s := int64(time.Second)
	r := &run{cfg: Config{Lease: 2 * time.Second}} // margin 22 ms
	r.faults = []Fault{
		{Kind: FaultSplitBrain, Start: 10 * s, End: 20 * s, ClockAhead: 2 * time.Second},
		{Kind: FaultSplitBrain, Start: 100 * s, End: 110 * s, ClockAhead: 20 * time.Millisecond},
	}
	vs := []Violation{
		{At: 15 * s, Check: "mutual exclusion"},  // within the first fault's window
		{At: 45 * s, Check: "linearizability"},   // within 30 s and a lease after its end
		{At: 60 * s, Check: "mutual exclusion"},  // after it
		{At: 105 * s, Check: "mutual exclusion"}, // during the second, within the margin
		{At: 15 * s, Check: "fencing"},           // fencing is never set apart
	}
	violations, within := r.unsurvivable(vs)
	if len(within) != 2 || len(violations) != 3 {
		t.Fatalf("set apart %v, kept %v; want the first two set apart", within, violations)
	}
}
