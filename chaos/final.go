package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/redisync/redisync/internal/keys"
)

// The checks after the run: the final state of Redis, and the history
// (linearizability with porcupine, fencing tokens, early losses).

// checkFinalState checks Redis once the workload is over and every client
// closed: every hold released, every permit back, every latch open, and no
// key beyond the documented ones.
func (r *run) checkFinalState(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := r.keys(ctx, "*")
	if err != nil {
		t.Fatalf("chaos: KEYS at the end: %v", err)
	}
	r.checkLeftoverKeys(ctx, all)
	// A counted permit whose release (or whose failed acquisition's undo)
	// never reached Redis is lost for good: see lostPermits.
	r.lostPermits(t, "at the end")
	r.checkExpirableAtEnd(ctx)
}

// checkLeftoverKeys checks every key left at the end (all): only the
// documented ones, request records, the clients' ledgers on the counted
// semaphore and client id registrations that expire, and a fair lock queue
// of dead waiters (checkFairQueue).
func (r *run) checkLeftoverKeys(ctx context.Context, all []string) {
	allowed := map[string]bool{semName: true, xsemName: true, rateName: true,
		keys.RateValue(rateName): true, keys.RatePermits(rateName): true, gcraName: true,
		// the election's records (no expiry: the next leader overwrites
		// them) and term counter, the job lock's fencing counter
		keys.ElectionLeader(electionName): true, keys.ElectionLog(electionName): true,
		keys.FenceCounter(electionName): true, keys.FenceCounter(jobPrefix + jobName): true}
	for _, n := range lockNames {
		allowed[keys.FenceCounter(n)] = true
		allowed[fenceName(n)] = true // the fenced values: no expiry
	}
	fairQueue, fairTimeouts := keys.FairQueue(fairName), keys.FairTimeouts(fairName)
	fairChecked, electionChecked := false, false
	for _, k := range all {
		switch {
		case allowed[k]:
		case strings.HasPrefix(k, keys.RequestPrefix(semName)+"ledger:"):
			// A client's ledger on the counted semaphore
			// (lua/prelude_ledger.lua): it expires two hours after the
			// client's last request.
			r.checkExpires(ctx, k, "ledger", 2*time.Hour)
		case strings.HasPrefix(k, "redisync_request:"):
			r.checkExpires(ctx, k, "request record", r.recordTTL+time.Second+r.clockSlack())
		case strings.HasPrefix(k, "redisync_lock_waiters:"), strings.HasPrefix(k, "redisync_lock_wait_state:"),
			strings.HasPrefix(k, "redisync_semaphore_waiters:"), strings.HasPrefix(k, "redisync_semaphore_wait_state:"):
			// A lock's (a read-write lock's, a semaphore's) queue of
			// waiting Clients (docs/wake.md), left by a
			// Client whose leave did not reach Redis: its entries run
			// out three re-check intervals after their last attempt,
			// and the keys with them.
			r.checkExpires(ctx, k, "lock queue", 3*r.cfg.Recheck+time.Second+r.clockSlack())
		case strings.HasPrefix(k, "redisync:client:"):
			// A client id's registration (WithID), left only when a
			// client's Close could not delete it: it must expire.
			r.checkExpires(ctx, k, "client id registration", 0)
		case k == fairQueue || k == fairTimeouts:
			if !fairChecked {
				fairChecked = true
				r.checkFairQueue(ctx, fairName, fairQueue, fairTimeouts, fairWaiterTimeout)
			}
		case k == keys.FairQueue(electionName) || k == keys.FairTimeouts(electionName):
			if !electionChecked {
				electionChecked = true
				r.checkFairQueue(ctx, electionName, keys.FairQueue(electionName), keys.FairTimeouts(electionName), electionWaiterTimeout)
			}
		case k == keys.SemaphoreTimeouts(xsemName):
			// checked with the expirable semaphore (checkExpirableAtEnd)
		default:
			typ, _ := r.adminRDB.Type(ctx, k).Result()
			ttl, _ := r.adminRDB.PTTL(ctx, k).Result()
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("%s (%s, TTL %v) left after every hold was released", k, typ, ttl)})
		}
	}
}

// checkExpires checks that key k, a what, expires, within bound when it is
// not zero.
func (r *run) checkExpires(ctx context.Context, k, what string, bound time.Duration) {
	ttl, err := r.adminRDB.PTTL(ctx, k).Result()
	if err != nil || ttl == -2 { // -2: expired meanwhile
		return
	}
	if ttl == -1 || (bound > 0 && ttl > bound) {
		r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("%s %s with TTL %v (want an expiry within %v)", what, k, ttl, bound)})
	}
}

// checkExpirableAtEnd checks the expirable semaphore with nothing held:
// no permit unexpired, and the available and acquired permits add up to
// the total.
func (r *run) checkExpirableAtEnd(ctx context.Context) {
	total := r.cfg.Permits
	avail, err := r.adminRDB.Get(ctx, xsemName).Int64()
	members, zerr := r.adminRDB.ZRangeWithScores(ctx, keys.SemaphoreTimeouts(xsemName), 0, -1).Result()
	now, terr := r.adminRDB.Time(ctx).Result()
	if err != nil || zerr != nil || terr != nil {
		r.violate(Violation{Check: "permits at the end", Detail: fmt.Sprintf("expirable semaphore %s unreadable: %v %v %v", xsemName, err, zerr, terr)})
		return
	}
	live := 0
	var ids []string // as the history shows them: the first 8 hex digits
	for _, m := range members {
		if m.Score > float64(now.UnixMilli()) {
			live++
		}
		ids = append(ids, fmt.Sprintf("%x", fmt.Sprint(m.Member))[:8])
	}
	if live > 0 || avail+int64(len(members)) != total {
		r.violate(Violation{Check: "permits at the end", Detail: fmt.Sprintf(
			"expirable semaphore %s: %d available, %d acquired (%d not expired; ids %v) with nothing held, total %d; its indeterminate calls:",
			xsemName, avail, len(members), live, ids, total), Excerpt: r.indeterminate(xsemName)})
	}
}

// checkFairQueue judges the queue of fair lock lock (the workload's fair
// lock, or the election's, with their waiterTimeout) left at the end: the entries
// of waiters whose leave was lost to a fault, which stay until an
// acquisition drops them as dead. Each must be scored in the timeouts zset
// with a deadline no later than the waiter timeout from now (a waiter that
// gave up no longer pushes it), and the list and the zset must agree.
func (r *run) checkFairQueue(ctx context.Context, lock, queue, timeouts string, waiterTimeout time.Duration) {
	q, qerr := r.adminRDB.LRange(ctx, queue, 0, -1).Result()
	z, zerr := r.adminRDB.ZRangeWithScores(ctx, timeouts, 0, -1).Result()
	now, terr := r.adminRDB.Time(ctx).Result()
	if qerr != nil || zerr != nil || terr != nil {
		r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s queue unreadable: %v %v %v", lock, qerr, zerr, terr)})
		return
	}
	bound := float64(now.Add(waiterTimeout).UnixMilli())
	scored := map[string]bool{}
	for _, m := range z {
		scored[fmt.Sprint(m.Member)] = true
		if m.Score > bound {
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: waiter %v still scored %d ms ahead with nobody waiting",
				lock, m.Member, int64(m.Score)-now.UnixMilli())})
		}
	}
	if len(q) != len(z) {
		r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: queue %v and timeouts %v disagree", lock, q, z)})
		return
	}
	for _, e := range q {
		if !scored[e] {
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: queued %s has no deadline", lock, e)})
		}
	}
}

// checkTimeout bounds each porcupine check.
const checkTimeout = 60 * time.Second

// checkHistory runs the history checks: porcupine's models per object and
// the fencing tokens.
func (r *run) checkHistory(ops []Op, rep *Report) {
	b := Bounds{Lease: r.cfg.Lease, PermitLease: r.cfg.PermitLease, Late: r.lateBound()}
	lm, sm, xm, cm := LockModel, SemaphoreModel(r.cfg.Permits), ExpirableModel(r.cfg.Permits), LatchModel.ToModel()
	models := []struct {
		name  string
		model porcupine.Model
		ops   []porcupine.Operation
	}{
		{"lock and rwlock", lm, lockOps(ops, b)},
		{"semaphore", sm, semaphoreOps(ops, b)},
		{"expirable semaphore", xm, expirableOps(ops, b)},
		{"latch", cm, latchOps(ops, b)},
	}
	hc := historyCheck{r: r, rep: rep}
	for _, m := range models {
		for _, part := range partitionByObject(m.ops) {
			hc.linearizable(m.name, m.model, part)
		}
	}

	rep.Checks = append(rep.Checks, r.checkBeliefs(r.beliefs.list()))
	rep.Checks = append(rep.Checks, r.checkRate(ops))
	rep.BeliefOverlap = r.beliefOverlap

	// Fencing: tokens unique, positive, and increasing in real-time order.
	for _, name := range lockNames {
		hc.fencing(name, ops)
	}
	// The election, the schedulers, the fences, the state losses and the
	// foreign client.
	rep.Checks = append(rep.Checks, hc.checkElection(ops), r.checkFences(ops))
	if l := hc.checkSchedulers(ops); l != "" {
		rep.Checks = append(rep.Checks, l)
	}
	rep.Checks = append(rep.Checks, r.checkStateLosses(ops, r.beliefs.list())...)
	if l := r.checkForeign(ops); l != "" {
		rep.Checks = append(rep.Checks, l)
	}
	for _, op := range ops {
		if op.Err == earlyLoss {
			r.violate(Violation{At: op.Call, Check: "lease", Detail: fmt.Sprintf("w%d's hold of %s ended before its lease could have run out", op.Worker, op.Object),
				Excerpt: around(ops, op, 2*time.Second)})
		}
	}
}

// historyCheck runs checkHistory's checks of the run r, noting each in
// rep.Checks.
type historyCheck struct {
	r   *run
	rep *Report
}

// linearizable checks one object's operations (part) against the model
// called name with porcupine.
func (hc historyCheck) linearizable(name string, model porcupine.Model, part []porcupine.Operation) {
	r, rep := hc.r, hc.rep
	object := part[0].Input.(Op).Object
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, part, checkTimeout)
	took := time.Since(start).Round(time.Millisecond)
	rep.Checks = append(rep.Checks, fmt.Sprintf("porcupine %s model on %s: %s (%d operations, %v)", name, object, res, len(part), took))
	switch res {
	case porcupine.Illegal:
		v := Violation{Check: "linearizability", Detail: fmt.Sprintf("%s: no linearization of %d operations fits the %s model", object, len(part), name)}
		var stuck porcupine.Operation
		v.Excerpt, stuck = excerpt(model, part, info)
		v.Excerpt = append(v.Excerpt, "faults in the 30s before it:")
		v.Excerpt = append(v.Excerpt, r.faultsAround(stuck.Call-int64(30*time.Second), stuck.Return)...)
		v.HTML = r.writeHTML(model, info, object)
		v.At = stuck.Call
		r.violate(v)
	case porcupine.Unknown:
		r.violate(Violation{Check: "linearizability", Detail: fmt.Sprintf("%s: porcupine could not decide within %v", object, checkTimeout)})
	}
}

// fencing checks the fencing tokens of lock name's acquisitions in ops:
// unique, positive, and increasing in real-time order.
func (hc historyCheck) fencing(name string, ops []Op) {
	var acq []Op
	for _, op := range ops {
		if op.Object == name && op.Kind == LockAcquire && op.Outcome == OK && !isForeign(op) {
			acq = append(acq, op)
		}
	}
	bad := hc.tokens(name, "fencing", acq)
	hc.rep.Checks = append(hc.rep.Checks, fmt.Sprintf("fencing on %s: %d acquisitions, tokens unique and increasing in real-time order: %v", name, len(acq), bad == 0))
}

// tokens checks the tokens of the acquisitions acq (in call order) of
// object name: unique, positive, and increasing in real-time order; check
// names the violations. It returns how many it found.
func (hc historyCheck) tokens(name, check string, acq []Op) int {
	r := hc.r
	bad := 0
	seen := map[int64]Op{}
	for _, op := range acq {
		if prev, dup := seen[op.Token]; dup || op.Token <= 0 {
			bad++
			r.violate(Violation{At: op.Call, Check: check, Detail: fmt.Sprintf("%s: token %d given twice or not positive", name, op.Token),
				Excerpt: []string{prev.String(), op.String()}})
		}
		seen[op.Token] = op
	}
	return bad + hc.tokenOrder(name, check, acq)
}

// tokenOrder checks that every acquisition of object name that returned
// before another was called has a lower token; acq is in call order. It
// returns how many violations (of check) it found.
func (hc historyCheck) tokenOrder(name, check string, acq []Op) int {
	r := hc.r
	bad := 0
	byReturn := append([]Op(nil), acq...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	var maxTok int64
	var maxOp Op
	j := 0
	for _, op := range acq { // by call time
		for j < len(byReturn) && byReturn[j].Return < op.Call {
			if byReturn[j].Token > maxTok {
				maxTok, maxOp = byReturn[j].Token, byReturn[j]
			}
			j++
		}
		if op.Token <= maxTok {
			bad++
			r.violate(Violation{At: op.Call, Check: check, Detail: fmt.Sprintf("%s: token %d after token %d was returned", name, op.Token, maxTok),
				Excerpt: []string{maxOp.String(), op.String()}})
		}
	}
	return bad
}

// excerpt returns the history around the first operation porcupine could
// not linearize, and that operation: the operations of the partition called
// from 3s before it to its return, and the model's state after the longest
// linearizable prefix.
func excerpt(model porcupine.Model, part []porcupine.Operation, info porcupine.LinearizationInfo) ([]string, porcupine.Operation) {
	longest := longestPrefix(info)
	order, stuck := firstUnlinearized(part, longest)
	if stuck < 0 {
		return nil, porcupine.Operation{}
	}
	lines := []string{
		fmt.Sprintf("longest linearizable prefix: %d of %d operations; model state after it: %s", len(longest), len(part), stateAfter(model, part, longest)),
		fmt.Sprintf("first operation that fits nowhere: %s", part[stuck].Input.(Op)),
		"operations called from 3s before it until it returned (times are the checked intervals):",
	}
	s := part[stuck]
	for _, i := range order {
		o := part[i]
		if o.Call >= s.Call-int64(3*time.Second) && o.Call <= s.Return {
			op := o.Input.(Op)
			op.Call, op.Return = o.Call, o.Return
			mark := "  "
			if i == stuck {
				mark = "=>"
			}
			lines = append(lines, mark+" "+op.String())
		}
	}
	if n := len(lines); n > 63 {
		lines = append(append(lines[:3:3], fmt.Sprintf("… %d earlier operations", n-63)), lines[n-60:]...)
	}
	return lines, s
}

// longestPrefix returns the longest of porcupine's partial
// linearizations: indexes into the partition.
func longestPrefix(info porcupine.LinearizationInfo) []int {
	var longest []int
	for _, p := range info.PartialLinearizations() {
		for _, l := range p {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	return longest
}

// firstUnlinearized returns the indexes of part in call order, and the
// first of them not in the prefix longest (-1: none).
func firstUnlinearized(part []porcupine.Operation, longest []int) (order []int, stuck int) {
	in := map[int]bool{}
	for _, i := range longest {
		in[i] = true
	}
	order = make([]int, len(part))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return part[order[a]].Call < part[order[b]].Call })
	for _, i := range order {
		if !in[i] {
			return order, i
		}
	}
	return order, -1
}

// stateAfter describes the model's state after the operations of part
// that prefix lists, in order.
func stateAfter(model porcupine.Model, part []porcupine.Operation, prefix []int) string {
	state := model.Init()
	for _, i := range prefix {
		_, state = model.Step(state, part[i].Input, part[i].Output)
	}
	if model.DescribeState == nil {
		return fmt.Sprint(state)
	}
	return model.DescribeState(state)
}

// around returns the operations on op's object called within d of it.
func around(ops []Op, op Op, d time.Duration) []string {
	var lines []string
	for _, o := range ops {
		if o.Object == op.Object && o.Call >= op.Call-int64(d) && o.Call <= op.Return+int64(d) {
			lines = append(lines, o.String())
		}
	}
	return lines
}

// writeHTML writes porcupine's visualization of a failed check, with the
// faults as annotations, and returns its path ("" if it could not).
func (r *run) writeHTML(model porcupine.Model, info porcupine.LinearizationInfo, object string) string {
	dir := r.outDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	var anns []porcupine.Annotation
	for _, f := range r.faults {
		anns = append(anns, porcupine.Annotation{
			Tag: "faults", Start: f.Start, End: max(f.End, f.Start+int64(time.Millisecond)),
			Description: string(f.Kind), Details: f.String(), BackgroundColor: "#f5c6cb",
		})
	}
	info.AddAnnotations(anns)
	name := strings.NewReplacer(":", "_", "/", "_").Replace(object)
	path := filepath.Join(dir, fmt.Sprintf("seed-%d-%s-%s.html", r.cfg.Seed, r.cfg.Topology, name))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return ""
	}
	return path
}

// indeterminate lists the calls on object that ended with an error.
func (r *run) indeterminate(object string) []string {
	var lines []string
	for _, op := range r.h.Ops() {
		if op.Object == object && op.Outcome == Unknown {
			lines = append(lines, op.String())
		}
	}
	return lines
}
