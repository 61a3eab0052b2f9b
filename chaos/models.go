package chaos

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/redisync/redisync/internal/core"
)

// Bounds are the time bounds the models need to turn holds, leases and
// indeterminate calls into operations with intervals.
type Bounds struct {
	// Lease is the lock lease: a hold cannot end before its acquisition
	// was called plus Lease, less the library's margin (core.LeaseMargin:
	// a hold whose renewals failed ends that much before its
	// acknowledged lease, and its holder's release then clears it).
	Lease time.Duration
	// PermitLease is the expirable semaphore's permit lease.
	PermitLease time.Duration
	// Late is how long after an indeterminate call returned its request can
	// still reach the server (the longest partition, stall or pause, and a
	// margin): its effect happens before then or never.
	Late time.Duration
}

// permitSlack covers the millisecond rounding of permit expiry scores.
const (
	permitSlackBefore = 5 * time.Millisecond
	permitSlackAfter  = 50 * time.Millisecond
)

// porcupineOp turns a recorded call into a porcupine operation on the
// interval [call, ret].
func porcupineOp(op Op, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: op.Worker, Input: op, Call: call, Return: max(ret, call)}
}

// lockOps returns the porcupine history of the rlock and rwlock calls: each
// partition is one lock. Indeterminate acquisitions are left out (see the
// package doc); an indeterminate release becomes a loss that may happen from
// when the release was called, or the hold's lease could have run out if
// that is earlier, until the release can no longer arrive and then a lease
// has run out.
func lockOps(ops []Op, b Bounds) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		switch op.Kind {
		case LockAcquire, ReadAcquire, WriteAcquire:
			if op.Outcome == OK {
				out = append(out, porcupineOp(op, op.Call, op.Return))
			}
		case LockRelease, ReadRelease, WriteRelease:
			if op.Outcome != Unknown {
				out = append(out, porcupineOp(op, op.Call, op.Return))
				continue
			}
			loss := op
			loss.Kind = map[Kind]Kind{LockRelease: LockLoss, ReadRelease: ReadLoss, WriteRelease: WriteLoss}[op.Kind]
			out = append(out, porcupineOp(loss, min(op.Call, op.AcqCall+int64(b.Lease-core.LeaseMargin(b.Lease))), op.Return+int64(b.Late+b.Lease)))
		case LockLoss, ReadLoss, WriteLoss:
			out = append(out, porcupineOp(op, op.Call, op.Return))
		}
	}
	return out
}

// lockState is a lock's state in the model: the writer or holder (-1: none)
// and the readers (a bit per worker).
type lockState struct {
	holder  int
	readers uint64
}

func partitionByObject(history []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		o := op.Input.(Op).Object
		i, ok := idx[o]
		if !ok {
			i = len(parts)
			idx[o] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

func describeOp(in, _ any) string {
	op := in.(Op)
	s := fmt.Sprintf("w%d %s", op.Worker, op.Kind)
	if op.N != 0 {
		s += fmt.Sprintf("(%d)", op.N)
	}
	if op.Token != 0 {
		s += fmt.Sprintf(" token %d", op.Token)
	}
	if len(op.IDs) > 0 {
		short := make([]string, len(op.IDs))
		for i, id := range op.IDs {
			short[i] = id[:6]
		}
		s += " " + strings.Join(short, ",")
	}
	return s + " → " + op.Outcome.String()
}

// LockModel is the model of an exclusive lock (rlock) and of a read-write
// lock: one writer or holder, or any number of readers. A hold may be lost
// (its lease ran out, see lockOps); a release that finds the owner's hold
// gone (ErrNotHeld) clears whatever Redis still had of it.
var LockModel = porcupine.Model{
	Partition: partitionByObject,
	Init:      func() any { return lockState{holder: -1} },
	Step: func(state, in, _ any) (bool, any) {
		s := state.(lockState)
		op := in.(Op)
		bit := uint64(1) << uint(op.Worker)
		switch op.Kind {
		case Wiped: // the lock vanished with its server: nobody holds it
			return true, lockState{holder: -1}
		case LockAcquire, WriteAcquire:
			if s.holder != -1 || s.readers != 0 {
				return false, s
			}
			s.holder = op.Worker
		case ReadAcquire:
			if s.holder != -1 {
				return false, s
			}
			s.readers |= bit
		case LockRelease, WriteRelease:
			switch {
			case op.Outcome == OK && s.holder != op.Worker:
				return false, s
			case s.holder == op.Worker:
				s.holder = -1
			}
		case ReadRelease:
			if op.Outcome == OK && s.readers&bit == 0 {
				return false, s
			}
			s.readers &^= bit
		case LockLoss, WriteLoss, ReadLoss:
			if op.Return < op.Call || op.Err == earlyLoss {
				return false, s // ended before its lease could have run out
			}
			if op.Kind == ReadLoss {
				s.readers &^= bit
			} else if s.holder == op.Worker {
				s.holder = -1
			}
		}
		return true, s
	},
	DescribeOperation: describeOp,
	DescribeState: func(state any) string {
		s := state.(lockState)
		var parts []string
		if s.holder >= 0 {
			parts = append(parts, fmt.Sprintf("held by w%d", s.holder))
		}
		if s.readers != 0 {
			var rs []string
			for r := s.readers; r != 0; r &= r - 1 {
				rs = append(rs, fmt.Sprintf("w%d", bits.TrailingZeros64(r)))
			}
			parts = append(parts, "read by "+strings.Join(rs, ","))
		}
		if len(parts) == 0 {
			return "free"
		}
		return strings.Join(parts, "; ")
	},
}

// earlyLoss marks a loss recorded before its lease could have run out.
const earlyLoss = "lost before its lease could have run out"

// semaphoreOps returns the porcupine history of the counted semaphore:
// acquisitions that acquired, releases (an indeterminate one may take effect
// until Late after it returned).
func semaphoreOps(ops []Op, b Bounds) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		switch {
		case op.Kind == SemAcquire && op.Outcome == OK:
			out = append(out, porcupineOp(op, op.Call, op.Return))
		case op.Kind == SemRelease && op.Outcome == OK:
			out = append(out, porcupineOp(op, op.Call, op.Return))
		case op.Kind == SemRelease && op.Outcome == Unknown:
			out = append(out, porcupineOp(op, op.Call, op.Return+int64(b.Late)))
		}
	}
	return out
}

// SemaphoreModel is the model of a counted semaphore with total permits:
// an acquisition needs the permits available, and no release may take the
// available count above the total.
func SemaphoreModel(total int64) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByObject,
		Init:      func() any { return total },
		Step: func(state, in, _ any) (bool, any) {
			avail := state.(int64)
			op := in.(Op)
			switch op.Kind {
			case SemAcquire:
				if avail < op.N {
					return false, avail
				}
				return true, avail - op.N
			case SemRelease:
				if avail+op.N > total {
					return op.Outcome == Unknown, avail // indeterminate: not applied
				}
				return true, avail + op.N
			}
			return true, avail
		},
		DescribeOperation: describeOp,
		DescribeState:     func(state any) string { return fmt.Sprintf("%d available", state.(int64)) },
	}
}

// expirableOps returns the porcupine history of the expirable semaphore:
// acquisitions that acquired, releases, and an expiry of every permit
// acquired with a lease in the interval its lease can end (a no-op for a
// permit released before, and what makes a release after it fail). A
// permit acquired without a lease (Op.NoLease) never expires: only its
// release gives it back.
func expirableOps(ops []Op, b Bounds) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		switch {
		case op.Kind == XAcquire && op.Outcome == OK:
			out = append(out, porcupineOp(op, op.Call, op.Return))
			if op.NoLease {
				continue
			}
			for _, id := range op.IDs {
				exp := op
				exp.Kind, exp.IDs, exp.N = XExpire, []string{id}, 1
				out = append(out, porcupineOp(exp,
					op.Call+int64(b.PermitLease-permitSlackBefore),
					op.Return+int64(b.PermitLease+permitSlackAfter)))
			}
		case op.Kind == XRelease && op.Outcome != Refused:
			ret := op.Return
			if op.Outcome == Unknown {
				ret += int64(b.Late)
			}
			out = append(out, porcupineOp(op, op.Call, ret))
		}
	}
	return out
}

// xState is the expirable semaphore's state in the model: the available
// count and the held permit ids, sorted and joined.
type xState struct {
	avail int64
	held  string
}

func (s xState) ids() []string {
	if s.held == "" {
		return nil
	}
	return strings.Split(s.held, " ")
}

func (s xState) has(id string) bool { return slices.Contains(s.ids(), id) }

func (s xState) with(add []string, remove []string) xState {
	ids := slices.DeleteFunc(s.ids(), func(id string) bool { return slices.Contains(remove, id) })
	ids = append(ids, add...)
	slices.Sort(ids)
	return xState{avail: s.avail + int64(len(remove)) - int64(len(add)), held: strings.Join(ids, " ")}
}

// ExpirableModel is the model of a permit-expirable semaphore with total
// permits: an acquisition needs the permits available; a release succeeds
// exactly when it holds every id (all or nothing); a permit may expire in
// the interval its lease ends (expirableOps).
func ExpirableModel(total int64) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByObject,
		Init:      func() any { return xState{avail: total} },
		Step: func(state, in, _ any) (bool, any) {
			s := state.(xState)
			op := in.(Op)
			all := true
			for _, id := range op.IDs {
				all = all && s.has(id)
			}
			switch op.Kind {
			case XAcquire:
				if s.avail < int64(len(op.IDs)) {
					return false, s
				}
				for _, id := range op.IDs {
					if s.has(id) {
						return false, s
					}
				}
				return true, s.with(op.IDs, nil)
			case XRelease:
				switch op.Outcome {
				case OK:
					if !all {
						return false, s
					}
					return true, s.with(nil, op.IDs)
				case NotHeld:
					return !all, s
				default: // indeterminate
					if all {
						return true, s.with(nil, op.IDs)
					}
					return true, s
				}
			case XExpire:
				if s.has(op.IDs[0]) {
					return true, s.with(nil, op.IDs)
				}
			}
			return true, s
		},
		DescribeOperation: describeOp,
		DescribeState: func(state any) string {
			s := state.(xState)
			ids := s.ids()
			for i := range ids {
				ids[i] = ids[i][:6]
			}
			return fmt.Sprintf("%d available; held %v", s.avail, ids)
		},
	}
}

// latchOps returns the porcupine history of the latches: every call that
// completed; an indeterminate TrySetCount or CountDown may take effect until
// Late after it returned, or never.
func latchOps(ops []Op, b Bounds) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		switch op.Kind {
		case LatchSet, LatchDown:
			ret := op.Return
			if op.Outcome == Unknown {
				ret += int64(b.Late)
			}
			out = append(out, porcupineOp(op, op.Call, ret))
		case LatchWait, LatchCount:
			if op.Outcome != Unknown {
				out = append(out, porcupineOp(op, op.Call, op.Return))
			}
		case Wiped:
			if slices.Contains(latchNames, op.Object) {
				out = append(out, porcupineOp(op, op.Call, op.Return))
			}
		}
	}
	return out
}

// LatchModel is the model of a count-down latch: TrySetCount sets a latch
// that is open (count 0, not set); CountDown never goes below zero; a wait
// returns true only when the count is zero (never early); Count reads the
// count. A wait's false constrains nothing: TryWait is bounded by its wait,
// requests included, so it returns false when Redis did not answer within
// it (stopped, partitioned), whatever the count. That an open latch wakes
// its waiters is checked by the liveness round, whose waits are not cut.
// A Wiped op (the latch vanished with its server's data) leaves it not
// set.
var LatchModel = porcupine.NondeterministicModel{
	Partition: partitionByObject,
	Init:      func() []any { return []any{int64(0)} },
	Step: func(state, in, _ any) []any {
		c := state.(int64)
		op := in.(Op)
		switch op.Kind {
		case Wiped: // the latch vanished with its server: not set
			return []any{int64(0)}
		case LatchSet:
			switch op.Outcome {
			case OK:
				if c == 0 {
					return []any{op.N}
				}
			case Refused:
				if c > 0 {
					return []any{c}
				}
			default:
				if c == 0 {
					return []any{c, op.N}
				}
				return []any{c}
			}
		case LatchDown:
			next := max(c-1, 0)
			if op.Outcome == Unknown {
				return []any{c, next}
			}
			return []any{next}
		case LatchWait:
			if op.Outcome != OK || c == 0 {
				return []any{c}
			}
		case LatchCount:
			if op.N == c {
				return []any{c}
			}
		}
		return nil
	},
	DescribeOperation: describeOp,
	DescribeState:     func(state any) string { return fmt.Sprintf("count %d", state.(int64)) },
}
