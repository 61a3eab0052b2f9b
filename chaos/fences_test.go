package chaos

import (
	"testing"
	"time"
)

// TestFenceReadAcrossAWipe: a read sent just before a restart without data
// and answered by the empty server after it finds the fence's value gone;
// that is the wipe's doing, counted apart, not a stale token. A read that
// returned before the wipe began is judged as any other.
func TestFenceReadAcrossAWipe(t *testing.T) {
	ms := int64(time.Millisecond)
	r := &run{}
	r.state.losses = []stateLoss{{kind: FaultWipe, start: 1000 * ms, dead: 1010 * ms, end: 1030 * ms}}
	set := Op{Worker: 1, Object: "f", Kind: FenceSet, Token: 7, Outcome: OK, Call: 900 * ms, Return: 901 * ms}
	across := Op{Worker: 1, Object: "f", Kind: FenceGet, Token: 0, Outcome: OK, Call: 999 * ms, Return: 1040 * ms}
	before := Op{Worker: 2, Object: "f", Kind: FenceGet, Token: 0, Outcome: OK, Call: 950 * ms, Return: 960 * ms}
	if bad := r.fenceOrder("f", []Op{set}, []Op{set, across, before}); bad != 2 {
		t.Fatalf("%d stale tokens found, want 2 (each read found 0)", bad)
	}
	if len(r.violations) != 2 {
		t.Fatalf("violations %v", r.violations)
	}
	for _, v := range r.violations {
		switch v.At {
		case across.Call:
			if v.Apart == "" {
				t.Errorf("the read across the wipe is not counted apart: %v", v)
			}
		case before.Call:
			if v.Apart != "" {
				t.Errorf("the read before the wipe is counted apart: %v", v)
			}
		}
	}
}
