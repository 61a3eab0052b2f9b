package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The checks of the state-loss faults (statefaults.go): holds reported
// lost, latch waits never opened by a lost latch, and the figures of each
// window.

// releaseKey identifies the release of one hold: its worker, object and
// acquisition call.
type releaseKey struct {
	worker  int
	object  string
	acqCall int64
}

// releasesByHold indexes the releases in ops by the hold they ended.
func releasesByHold(ops []Op) map[releaseKey]Op {
	m := map[releaseKey]Op{}
	for _, op := range ops {
		switch op.Kind {
		case LockRelease, ReadRelease, WriteRelease, ElectResign:
			m[releaseKey{op.Worker, op.Object, op.AcqCall}] = op
		}
	}
	return m
}

// lossReport is how a hold whose state vanished was reported to its
// holder.
type lossReport int

const (
	lossByDone     lossReport = iota // Done closed with a cause wrapping ErrLockLost (naming eviction, for an eviction)
	lossByRelease                    // its release answered ErrNotHeld
	lossUnjudged                     // its release failed (indeterminate)
	lossLapsed                       // eviction: Done closed as no renewal succeeded within the lease (renewals refused), not naming eviction
	lossUnreported                   // released with success, or Done closed with another cause
)

// judgeLoss tells how the hold b, whose state vanished, was reported;
// evicted asks for a cause naming eviction.
func judgeLoss(b belief, rel Op, released, evicted bool) lossReport {
	switch {
	case b.lost && b.lockLost && (!evicted || strings.Contains(b.cause, "evict")):
		return lossByDone
	case b.lost && evicted && b.lockLost && strings.Contains(b.cause, "no renewal"):
		return lossLapsed
	case b.lost:
		return lossUnreported
	case !released || rel.Outcome == Unknown:
		return lossUnjudged
	case rel.Outcome == NotHeld:
		return lossByRelease
	}
	return lossUnreported
}

// checkStateLosses runs the state-loss checks over ops and the beliefs
// bs, and returns the summary lines.
func (r *run) checkStateLosses(ops []Op, bs []belief) []string {
	losses := r.state.lossesList()
	if len(losses) == 0 {
		return nil
	}
	rels := releasesByHold(ops)
	var lines []string
	var counts [lossUnreported + 1]int
	for _, s := range losses {
		if s.kind != FaultWipe {
			continue
		}
		for _, b := range bs {
			if b.mode == beliefPermits || b.worker >= foreignWorker || !slices.Contains(heldObjects(), b.object) ||
				b.from >= s.start || b.to <= s.dead {
				continue
			}
			rel, ok := rels[releaseKey{b.worker, b.object, b.acqCall}]
			j := judgeLoss(b, rel, ok, false)
			counts[j]++
			if j == lossUnreported {
				r.violate(Violation{At: s.start, Check: "restart without data", Detail: fmt.Sprintf(
					"%s: %s, held when the server was restarted without its data at %.3fs, was not reported lost (Done cause %q; release %s)",
					b.object, b, sec(s.start), b.cause, rel), Excerpt: r.opsAround(b.object, b.from-int64(time.Second), b.to+int64(time.Second))})
			}
		}
	}
	wipes := 0
	for _, s := range losses {
		if s.kind == FaultWipe {
			wipes++
		}
	}
	if wipes > 0 {
		lines = append(lines, fmt.Sprintf("restarts without data: %d; holds they took: %d reported lost by Done (ErrLockLost), %d by their release (ErrNotHeld), %d not judged (release failed), %d not reported; latch waits that returned ErrStateLost: %d",
			wipes, counts[lossByDone], counts[lossByRelease], counts[lossUnjudged], counts[lossUnreported], r.state.waitsErr.Load()))
		lines = append(lines, r.checkLatchWipes(ops, losses))
	}
	if l := r.checkEvicted(bs, rels, losses); l != "" {
		lines = append(lines, l)
	}
	return append(lines, r.windowFigures(ops, losses)...)
}

// checkEvicted checks that every hold whose key Redis reported evicted was
// reported lost naming eviction, and returns the summary line.
func (r *run) checkEvicted(bs []belief, rels map[releaseKey]Op, losses []stateLoss) string {
	windows := 0
	for _, s := range losses {
		if s.kind == FaultEvict {
			windows++
		}
	}
	if windows == 0 {
		return ""
	}
	var counts [lossUnreported + 1]int
	keys, lockKeys := 0, 0
	for _, e := range r.state.evictedList() {
		keys++
		o := objectOfKey(e.key)
		if o == "" || e.key != o {
			continue // a request record, a reader's timeout key: not judged
		}
		lockKeys++
		for _, b := range bs {
			// believed since before the eviction was heard of (100ms:
			// one acquired just after it is not the one evicted), and
			// still then
			if b.object != o || b.mode == beliefPermits || b.from >= e.at-int64(100*time.Millisecond) || b.to < e.at {
				continue
			}
			rel, ok := rels[releaseKey{b.worker, b.object, b.acqCall}]
			if ok && rel.Outcome == OK {
				continue // its release found it: the key evicted was another's, or evicted after it
			}
			j := judgeLoss(b, rel, ok, true)
			counts[j]++
			if j == lossUnreported {
				r.violate(Violation{At: e.at, Check: "eviction", Detail: fmt.Sprintf(
					"%s: %s was evicted at %.3fs and not reported lost naming eviction (Done cause %q; release %s)",
					o, b, sec(e.at), b.cause, rel), Excerpt: r.opsAround(o, b.from-int64(time.Second), b.to+int64(time.Second))})
			}
		}
	}
	return fmt.Sprintf("memory pressure: %d windows, %d keys evicted, %d of them a lock's; evicted holds: %d reported lost by Done naming eviction, %d by their release (ErrNotHeld), %d by Done as no renewal succeeded within the lease (renewals refused: OOM), %d not judged (release failed), %d not reported",
		windows, keys, lockKeys, counts[lossByDone], counts[lossByRelease], counts[lossLapsed], counts[lossUnjudged], counts[lossUnreported])
}

// checkLatchWipes checks that no latch wait that saw its latch set
// returned nil because the latch vanished with the server: a wait called
// (100ms or more) before the kill that returned after it with success,
// though no count-down of its latch returned or was under way between its
// call and the kill, and no fault acted on its client then. It returns
// the summary line.
func (r *run) checkLatchWipes(ops []Op, losses []stateLoss) string {
	judged, unjudged := 0, 0
	for _, s := range losses {
		if s.kind != FaultWipe {
			continue
		}
		for _, w := range ops {
			if w.Kind != LatchWait || w.Worker < 0 || w.Worker >= len(r.workers) || w.Call >= s.start-int64(100*time.Millisecond) || w.Return <= s.dead {
				continue
			}
			if w.Outcome != OK {
				judged++ // an error (ErrStateLost) or false: not opened
				continue
			}
			if r.countedDownBetween(ops, w.Object, w.Call, s.start) || r.clientFaulted(w.Worker/r.cfg.Workers, w.Call, s.start) {
				unjudged++
				continue
			}
			judged++
			r.violate(Violation{At: s.start, Check: "restart without data", Detail: fmt.Sprintf(
				"latch %s: w%d's wait, called at %.3fs while the latch was set, returned success at %.3fs after the server restarted without the latch at %.3fs, with no count-down between",
				w.Object, w.Worker, sec(w.Call), sec(w.Return), sec(s.start)), Excerpt: r.opsAround(w.Object, w.Call-int64(2*time.Second), w.Return)})
		}
	}
	return fmt.Sprintf("latch waits across a restart without data: %d judged (none may open), %d not judged (a count-down or a fault of its client between its call and the kill)", judged, unjudged)
}

// countedDownBetween tells whether a count-down of latch returned, or was
// under way, between from and to.
func (r *run) countedDownBetween(ops []Op, latch string, from, to int64) bool {
	for _, op := range ops {
		if op.Object == latch && op.Kind == LatchDown && op.Outcome != Refused && op.Call <= to && op.Return >= from {
			return true
		}
	}
	return false
}

// clientFaulted tells whether a fault acted on client c between from and
// to.
func (r *run) clientFaulted(c int, from, to int64) bool {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	for _, f := range r.faults {
		if f.Client == c && f.End >= from && f.Start <= to {
			return true
		}
	}
	return false
}

// windowFigures returns, per state loss, what its window cost and what
// fencing stopped there: the overlaps of two holders' beliefs beyond the
// margin that began in it (counted apart), and the stale writes the
// registers and the fences refused.
func (r *run) windowFigures(ops []Op, losses []stateLoss) []string {
	var lines []string
	for _, s := range losses {
		from, to := s.start, s.end+int64(r.stateAfter())
		var regRefused, fenceRefused, n int
		var longest time.Duration
		for _, op := range ops {
			if op.Call < from || op.Call > to || op.Outcome != Refused {
				continue
			}
			switch op.Kind {
			case RegisterWrite:
				regRefused++
			case FenceSet:
				fenceRefused++
			}
		}
		for _, o := range r.overlaps {
			if o.at >= from-int64(rateInterval) && o.at <= to {
				n++
				longest = max(longest, o.d)
			}
		}
		lines = append(lines, fmt.Sprintf("%s at [%.3fs, %.3fs]: in its window (to %.3fs) two holders believed they held at once %d times (counted apart; the longest %v); the fenced registers refused %d stale writes, the fences %d",
			s.kind, sec(s.start), sec(s.end), sec(to), n, longest.Round(time.Millisecond), regRefused, fenceRefused))
	}
	return lines
}

// stateAfter is how long after a state loss its effects are its own: a
// lease (a hold lost in it is reported within its next renewal), the
// longest a request can arrive late (one re-sent after its record was
// evicted applies again), and a second.
func (r *run) stateAfter() time.Duration {
	return r.cfg.Lease + r.lateBound() + time.Second
}
