package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Fences at the resource (package fence): each holder of a lock of
// lockNames writes the lock's fenced value (fence.Value.Set) with its
// fencing token when it has acquired the lock and again after its hold
// time (when its hold may have been lost meanwhile), then reads it back
// (Get). The check: a stale token never overwrites a newer one. A write
// that succeeded, returned before another successful write was called,
// has a token no higher than that one; a read returns a token at least as
// high as every successful write that returned before it was called. A
// refused write is what fencing stopped (counted). Across a restart
// without data the fence's own value vanishes with the server, so what a
// write after it overwrote is counted apart.

// fenceTimeout bounds each fence call: a fault delays the worker's hold
// by at most that.
const fenceTimeout = time.Second

// fenceName is the fenced value written by the holders of lock name.
func fenceName(lock string) string { return "chaos:fence:" + lock }

// writeFence writes lock i's fenced value with token (once the lock is
// acquired, and after the hold time), then reads it back; not in the
// liveness round.
func (w *worker) writeFence(i int, token int64, live bool) {
	if live || token <= 0 {
		return
	}
	v, name := w.fences[i], fenceName(lockNames[i])
	ctx, cancel := context.WithTimeout(w.ctx, fenceTimeout)
	defer cancel()
	call := w.run.h.Now()
	ok, err := v.Set(ctx, token, fmt.Sprintf("w%d:%d", w.id, token))
	w.run.h.Add(Op{Worker: w.id, Object: name, Kind: FenceSet, Token: token, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: w.run.h.Now()})
	call = w.run.h.Now()
	_, got, err := v.Get(ctx)
	w.run.h.Add(Op{Worker: w.id, Object: name, Kind: FenceGet, Token: got, Outcome: outcome(true, err), Err: errText(err), Call: call, Return: w.run.h.Now()})
}

// checkFences checks every lock's fenced value and returns the summary
// line.
func (r *run) checkFences(ops []Op) string {
	var written, refused, unknown, reads, bad int
	for _, lock := range lockNames {
		name := fenceName(lock)
		var sets, gets []Op
		for _, op := range ops {
			switch {
			case op.Object != name:
			case op.Kind == FenceSet && op.Outcome == OK:
				written++
				sets = append(sets, op)
			case op.Kind == FenceSet && op.Outcome == Refused:
				refused++
			case op.Kind == FenceSet:
				unknown++
			case op.Kind == FenceGet && op.Outcome == OK:
				reads++
				gets = append(gets, op)
			}
		}
		bad += r.fenceOrder(name, sets, append(append([]Op(nil), sets...), gets...))
	}
	return fmt.Sprintf("fences: %d writes taken, %d stale writes refused (fencing stopped them), %d indeterminate; %d reads; a stale token over a newer one: %d",
		written, refused, unknown, reads, bad)
}

// fenceOrder checks, on fence name, that every op of later (successful
// writes and reads, any order) has a token at least the highest of the
// successful writes (sets) that returned before it was called. It returns
// how many violations it found.
func (r *run) fenceOrder(name string, sets, later []Op) int {
	sort.Slice(sets, func(i, j int) bool { return sets[i].Return < sets[j].Return })
	sort.Slice(later, func(i, j int) bool { return later[i].Call < later[j].Call })
	bad := 0
	var maxTok int64
	var maxOp Op
	j := 0
	for _, op := range later {
		for j < len(sets) && sets[j].Return < op.Call {
			if sets[j].Token > maxTok {
				maxTok, maxOp = sets[j].Token, sets[j]
			}
			j++
		}
		if op.Token >= maxTok {
			continue
		}
		bad++
		what := "a write with token %d succeeded after token %d was written"
		if op.Kind == FenceGet {
			what = "a read found token %d after token %d was written"
		}
		r.violate(Violation{At: op.Call, Check: "fence", Detail: fmt.Sprintf("%s: "+what, name, op.Token, maxTok),
			Excerpt: []string{maxOp.String(), op.String()},
			Apart:   r.wipeBetween(maxOp.Return, op.Return)})
	}
	return bad
}

// wipeBetween names a restart without data between from and to, which
// took the fences' values with it ("" if none). to is when the later op
// returned, not when it was called: Redis may serve it after a restart
// that began once it was sent (a read sent as the server was killed, and
// answered by the empty server that came back).
func (r *run) wipeBetween(from, to int64) string {
	for _, s := range r.state.lossesList() {
		if s.kind == FaultWipe && s.start <= to && s.end >= from {
			return fmt.Sprintf("the fence's value vanished with the server's data at %.3fs", sec(s.start))
		}
	}
	return ""
}
