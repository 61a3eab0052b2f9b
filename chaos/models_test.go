package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The models must reject the histories the suite exists to catch and accept
// the legal ones that faults produce. Times are in seconds.

func s(x float64) int64 { return int64(x * float64(time.Second)) }

var testBounds = Bounds{Lease: 2 * time.Second, PermitLease: 3 * time.Second, Late: 5 * time.Second}

func check(t *testing.T, model porcupine.Model, ops []porcupine.Operation, want porcupine.CheckResult) {
	t.Helper()
	if got := porcupine.CheckOperationsTimeout(model, ops, 10*time.Second); got != want {
		t.Fatalf("check = %s, want %s", got, want)
	}
}

func TestLockModel(t *testing.T) {
	acq := func(w int, c, r float64) Op {
		return Op{Worker: w, Object: "l", Kind: LockAcquire, Outcome: OK, Call: s(c), Return: s(r)}
	}
	rel := func(w int, c, r float64, o Outcome) Op {
		return Op{Worker: w, Object: "l", Kind: LockRelease, Outcome: o, Call: s(c), Return: s(r)}
	}
	loss := func(w int, acqCall, ret float64) Op {
		return Op{Worker: w, Object: "l", Kind: LockLoss, Outcome: OK, Call: s(acqCall) + int64(testBounds.Lease), Return: s(ret)}
	}
	t.Run("exclusive", func(t *testing.T) {
		check(t, LockModel, lockOps([]Op{acq(0, 0, 1), rel(0, 2, 3, OK), acq(1, 3.5, 4), rel(1, 4, 5, OK)}, testBounds), porcupine.Ok)
	})
	t.Run("two holders", func(t *testing.T) {
		check(t, LockModel, lockOps([]Op{acq(0, 0, 1), acq(1, 1.5, 2), rel(0, 3, 4, OK)}, testBounds), porcupine.Illegal)
	})
	t.Run("lease ran out", func(t *testing.T) {
		// w0 was partitioned; w1 got the lock after w0's lease could end.
		check(t, LockModel, lockOps([]Op{acq(0, 0, 0.1), acq(1, 2.5, 2.6), rel(0, 5, 5.1, NotHeld), loss(0, 0, 5.1)}, testBounds), porcupine.Ok)
	})
	t.Run("taken before the lease could end", func(t *testing.T) {
		check(t, LockModel, lockOps([]Op{acq(0, 0, 0.1), acq(1, 1, 1.1), rel(0, 5, 5.1, NotHeld), loss(0, 0, 5.1)}, testBounds), porcupine.Illegal)
	})
	t.Run("indeterminate release", func(t *testing.T) {
		check(t, LockModel, lockOps([]Op{acq(0, 0, 0.1), rel(0, 1, 2, Unknown), acq(1, 2.5, 2.6)}, testBounds), porcupine.Ok)
	})
	t.Run("lease ran out before an indeterminate release", func(t *testing.T) {
		// Regression: the loss may come before the release is called.
		r := rel(0, 3, 4, Unknown)
		r.AcqCall = s(0)
		check(t, LockModel, lockOps([]Op{acq(0, 0, 0.1), acq(1, 2.5, 2.6), rel(1, 2.7, 2.8, OK), r}, testBounds), porcupine.Ok)
		r.AcqCall = s(1) // the lease could not have run out by 2.6
		check(t, LockModel, lockOps([]Op{acq(0, 1, 1.1), acq(1, 2.5, 2.6), rel(1, 2.7, 2.8, OK), r}, testBounds), porcupine.Illegal)
	})
	t.Run("readers and a writer", func(t *testing.T) {
		ops := []Op{
			{Worker: 0, Object: "rw", Kind: ReadAcquire, Outcome: OK, Call: s(0), Return: s(1)},
			{Worker: 1, Object: "rw", Kind: ReadAcquire, Outcome: OK, Call: s(0), Return: s(1)},
			{Worker: 2, Object: "rw", Kind: WriteAcquire, Outcome: OK, Call: s(1.5), Return: s(1.6)},
			{Worker: 0, Object: "rw", Kind: ReadRelease, Outcome: OK, Call: s(2), Return: s(2.1)},
		}
		check(t, LockModel, lockOps(ops, testBounds), porcupine.Illegal)
		ops[2].Call, ops[2].Return = s(3), s(3.1)
		ops = append(ops, Op{Worker: 1, Object: "rw", Kind: ReadRelease, Outcome: OK, Call: s(2), Return: s(2.1)})
		check(t, LockModel, lockOps(ops, testBounds), porcupine.Ok)
	})
}

func TestSemaphoreModel(t *testing.T) {
	op := func(w int, k Kind, n int64, c, r float64, o Outcome) Op {
		return Op{Worker: w, Object: "s", Kind: k, N: n, Outcome: o, Call: s(c), Return: s(r)}
	}
	m := SemaphoreModel(2)
	check(t, m, semaphoreOps([]Op{op(0, SemAcquire, 2, 0, 1, OK), op(1, SemAcquire, 1, 1.5, 2, OK)}, testBounds), porcupine.Illegal)
	check(t, m, semaphoreOps([]Op{
		op(0, SemAcquire, 2, 0, 1, OK), op(0, SemRelease, 2, 1, 2, Unknown), op(1, SemAcquire, 1, 6, 7, OK),
	}, testBounds), porcupine.Ok)
	// A release applied twice gives a third permit.
	check(t, m, semaphoreOps([]Op{
		op(0, SemAcquire, 1, 0, 1, OK), op(1, SemAcquire, 1, 0, 1, OK), op(0, SemRelease, 1, 1, 2, OK),
		op(2, SemAcquire, 1, 3, 4, OK), op(3, SemAcquire, 1, 3, 4, OK),
	}, testBounds), porcupine.Illegal)
}

func TestExpirableModel(t *testing.T) {
	a := Op{Worker: 0, Object: "x", Kind: XAcquire, N: 1, IDs: []string{"aaaaaaaa"}, Outcome: OK, Call: s(0), Return: s(0.1)}
	b := Op{Worker: 1, Object: "x", Kind: XAcquire, N: 1, IDs: []string{"bbbbbbbb"}, Outcome: OK, Call: s(1), Return: s(1.1)}
	m := ExpirableModel(1)
	check(t, m, expirableOps([]Op{a, b}, testBounds), porcupine.Illegal)
	b.Call, b.Return = s(3.5), s(3.6) // after a's lease
	check(t, m, expirableOps([]Op{a, b}, testBounds), porcupine.Ok)
	late := Op{Worker: 0, Object: "x", Kind: XRelease, N: 1, IDs: a.IDs, Outcome: OK, Call: s(4), Return: s(4.1)}
	check(t, m, expirableOps([]Op{a, late}, testBounds), porcupine.Illegal) // released after it expired
	// A permit without a lease never expires: b must wait for a's release.
	a.NoLease = true
	check(t, m, expirableOps([]Op{a, b}, testBounds), porcupine.Illegal)
	check(t, m, expirableOps([]Op{a, late}, testBounds), porcupine.Ok)
	b.Call, b.Return = s(4.2), s(4.3)
	check(t, m, expirableOps([]Op{a, late, b}, testBounds), porcupine.Ok)
}

func TestLatchModel(t *testing.T) {
	op := func(w int, k Kind, n int64, c, r float64, o Outcome) Op {
		return Op{Worker: w, Object: "c", Kind: k, N: n, Outcome: o, Call: s(c), Return: s(r)}
	}
	m := LatchModel.ToModel()
	set := op(0, LatchSet, 2, 0, 1, OK)
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, OK), op(2, LatchWait, 0, 3.5, 4, OK)}, testBounds), porcupine.Illegal)
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, OK), op(1, LatchDown, 0, 3, 3.2, OK), op(2, LatchWait, 0, 3.5, 4, OK)}, testBounds), porcupine.Ok)
	// An indeterminate count-down may or may not have counted.
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, Unknown), op(3, LatchCount, 2, 3.5, 3.6, OK), op(1, LatchDown, 0, 4, 4.5, OK), op(3, LatchCount, 1, 5, 5.1, OK)}, testBounds), porcupine.Ok)
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, Unknown), op(3, LatchCount, 2, 3.5, 3.6, OK), op(3, LatchCount, 1, 4, 4.1, OK)}, testBounds), porcupine.Ok)
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, Unknown), op(3, LatchCount, 2, 3.5, 3.6, OK), op(3, LatchCount, 0, 4, 4.1, OK)}, testBounds), porcupine.Illegal)
	check(t, m, latchOps([]Op{set, op(1, LatchDown, 0, 2, 3, OK), op(3, LatchCount, 2, 3.5, 3.6, OK)}, testBounds), porcupine.Illegal)
	// A wait's false constrains nothing (TryWait bounded by its wait: Redis
	// may not have answered within it, as under SIGSTOP); its true does.
	check(t, m, latchOps([]Op{op(2, LatchWait, 0, 1, 2, Refused)}, testBounds), porcupine.Ok)
	check(t, m, latchOps([]Op{set, op(2, LatchWait, 0, 1.5, 2, OK)}, testBounds), porcupine.Illegal)
}
