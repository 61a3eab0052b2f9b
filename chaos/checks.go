package chaos

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// sampleEvery is how often the sampler reads Redis.
const sampleEvery = 200 * time.Millisecond

// sampler reads the primitives' state in Redis directly while the workload
// runs and checks it against what the workers believe.
type sampler struct {
	r      *run
	owners map[string]int // owner name → worker
	// clients maps a client id to its workers, whose fresh holds have
	// owners of their own: "<client id>:<token>" with a new token each.
	clients map[string][]int
	since   map[string]int64 // object|member → when first seen unexplained
	judged  int              // samples taken
	found   map[string]bool  // phantoms reported
}

func newSampler(r *run) *sampler {
	s := &sampler{r: r, owners: map[string]int{}, clients: map[string][]int{}, since: map[string]int64{}, found: map[string]bool{}}
	for _, w := range r.workers {
		s.owners[w.owner()] = w.id
		s.clients[w.c.ID()] = append(s.clients[w.c.ID()], w.id)
	}
	return s
}

func (s *sampler) loop(stop <-chan struct{}) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

func (s *sampler) snapshot() []workerSnap {
	snaps := make([]workerSnap, len(s.r.workers))
	for i, w := range s.r.workers {
		snaps[i] = w.state.snap()
	}
	return snaps
}

// sampleReplies holds the replies of one sample's MULTI.
type sampleReplies struct {
	locks     []*redis.MapStringStringCmd // one per lockNames
	rw        *redis.MapStringStringCmd
	rwKeys    *redis.StringSliceCmd // the rwlock's reader timeout keys
	sem, xsem *redis.StringCmd
	xsemZ     *redis.ZSliceCmd // the expirable semaphore's timeouts
	time      *redis.TimeCmd
}

// readRedis reads every primitive in one MULTI. The error is the
// transaction's: the replies are usable unless it is neither nil nor
// redis.Nil.
func (s *sampler) readRedis(ctx context.Context) (*sampleReplies, error) {
	rep := &sampleReplies{}
	_, err := s.r.adminRDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, n := range lockNames {
			rep.locks = append(rep.locks, p.HGetAll(ctx, n))
		}
		rep.rw = p.HGetAll(ctx, rwName)
		rep.rwKeys = p.Keys(ctx, keys.Tag(rwName)+":*rwlock_timeout*")
		rep.sem = p.Get(ctx, semName)
		rep.xsem = p.Get(ctx, xsemName)
		rep.xsemZ = p.ZRangeWithScores(ctx, keys.SemaphoreTimeouts(xsemName), 0, -1)
		rep.time = p.Time(ctx)
		return nil
	})
	return rep, err
}

// sample reads every primitive in one MULTI and judges what it read. A
// worker whose state changed while Redis was read is not judged.
func (s *sampler) sample() {
	before := s.snapshot()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rep, err := s.readRedis(ctx)
	if err != nil && err != redis.Nil {
		return // the server is paused or restarting: no sample
	}
	j := s.newJudgment(before)
	s.judged++
	for i, cmd := range rep.locks {
		j.checkLock(lockNames[i], cmd.Val())
	}
	j.checkRWLock(rep.rw.Val(), rep.rwKeys.Val())
	j.checkSemaphore(rep.sem.Val())
	j.checkExpirable(rep.xsem.Val(), rep.xsemZ.Val(), rep.time.Val())
	j.forgetUnseen()
}

// judgment is the judging of one sample: what the workers believed before
// and after Redis was read, when, and which members were found in Redis.
type judgment struct {
	s             *sampler
	before, after []workerSnap
	now           int64
	seen          map[string]bool // object|member found in this sample
	lockLimit     time.Duration   // how long an unexplained lock hold may last
	permitLimit   time.Duration   // how long an unexplained permit may last
}

// newJudgment starts judging a sample read after the workers' states
// before: it takes their states after it, and the time.
func (s *sampler) newJudgment(before []workerSnap) *judgment {
	r := s.r
	j := &judgment{s: s, before: before, after: s.snapshot()}
	j.now = r.h.Now()
	j.seen = map[string]bool{}
	j.lockLimit = r.cfg.Lease + r.lateBound() + time.Second
	j.permitLimit = r.cfg.PermitLease + r.lateBound() + time.Second
	return j
}

// stable tells whether worker w's state did not change while Redis was
// read.
func (j *judgment) stable(w int) bool { return j.before[w].ver == j.after[w].ver }

// believes tells whether worker w believed it holds object or was calling
// on it.
func (j *judgment) believes(w int, object string) bool {
	return j.before[w].inflight == object || j.before[w].holds[object].n > 0
}

// judge tells whether worker w explains a member of object it owns: nil if
// w is not stable, so not judged.
func (j *judgment) judge(w int, object string) *bool {
	if !j.stable(w) {
		return nil
	}
	e := j.believes(w, object)
	return &e
}

// judgeAny tells whether any of the workers ws explains a member of object
// they share (a fresh hold of their client): nil if any of them is not
// stable, or ws is empty.
func (j *judgment) judgeAny(ws []int, object string) *bool {
	var explained *bool
	e := false
	for _, w := range ws {
		jw := j.judge(w, object)
		if jw == nil {
			return nil
		}
		e = e || *jw
		explained = &e
	}
	return explained
}

// phantom tracks a member of object found in Redis: explained, not, or
// not judged (nil). One left unexplained for longer than limit is reported
// once, as a phantom; what names it in the report.
func (j *judgment) phantom(object, member string, explained *bool, limit time.Duration, what string) {
	s := j.s
	key := object + "|" + member
	j.seen[key] = true
	if explained == nil {
		return
	}
	if *explained {
		delete(s.since, key)
		return
	}
	first, ok := s.since[key]
	if !ok {
		s.since[key] = j.now
		return
	}
	if d := time.Duration(j.now - first); d > limit && !s.found[key] {
		s.found[key] = true
		s.report("phantom "+key, object, first, Violation{Check: "phantom", Detail: fmt.Sprintf(
			"%s %s in Redis for %v (limit %v) while its owner believes it holds nothing and calls nothing on it",
			what, member, d.Round(time.Millisecond), limit)})
	}
}

// checkLock judges lock name's hash, fields: at most one owner, and each
// owner explained by its worker or, for a fresh hold, by one of its
// client's workers.
func (j *judgment) checkLock(name string, fields map[string]string) {
	s := j.s
	if len(fields) > 1 {
		s.report("two owners "+name, name, j.now, Violation{Check: "mutual exclusion (Redis)", Detail: fmt.Sprintf(
			"lock %s has %d owners at once: %v", name, len(fields), fields)})
	}
	for f := range fields {
		j.holder(name, "lock", f)
	}
}

// holder judges a holder, owner, of object (a primitive of kind what) found
// in Redis: explained by its worker or, for a fresh hold (an owner of its
// own, "<client id>:<token>"), by one of its client's workers believing it
// holds object or calling on it; reported at once if the owner is no
// worker's nor any client's.
func (j *judgment) holder(object, what, owner string) {
	s := j.s
	if w, ok := s.owners[owner]; ok {
		j.phantom(object, owner, j.judge(w, object), j.lockLimit, "hold of "+what+" "+object+" by")
		return
	}
	c, _, _ := strings.Cut(owner, ":")
	ws, ok := s.clients[c]
	if !ok {
		s.report("unknown "+owner, object, j.now, Violation{Check: "phantom", Detail: fmt.Sprintf("%s %s held by an unknown owner %q", what, object, owner)})
		return
	}
	j.phantom(object, owner, j.judgeAny(ws, object), j.lockLimit, "fresh hold of "+what+" "+object+" by")
}

// liveReaders returns the owners of the rwlock's reader timeout keys
// timeoutKeys: the readers whose hold has not run out.
func liveReaders(timeoutKeys []string) map[string]bool {
	live := map[string]bool{}
	for _, k := range timeoutKeys {
		rest := strings.TrimPrefix(k, keys.Tag(rwName)+":")
		if i := strings.Index(rest, ":rwlock_timeout"); i > 0 {
			live[rest[:i]] = true
		}
	}
	return live
}

// rwHolders returns the writers and the live readers among the rwlock's
// hash fields.
func rwHolders(fields map[string]string, live map[string]bool) (writers, readers []string) {
	for f := range fields {
		switch {
		case f == "mode":
		case strings.HasSuffix(f, ":write"):
			writers = append(writers, strings.TrimSuffix(f, ":write"))
		case live[f]:
			readers = append(readers, f)
		}
	}
	return writers, readers
}

// rwConflict tells whether writers and readers may not hold the rwlock
// together: more than one writer, or a writer and a reader other than
// itself.
func rwConflict(writers, readers []string) bool {
	return len(writers) > 1 || len(writers) == 1 && len(readers) > 0 && !(len(readers) == 1 && readers[0] == writers[0])
}

// checkRWLock judges the rwlock's hash, fields, with its reader timeout
// keys timeoutKeys: writers exclude each other and other readers, and each
// holder is explained by its worker (a fresh writer by one of its
// client's).
func (j *judgment) checkRWLock(fields map[string]string, timeoutKeys []string) {
	s := j.s
	writers, readers := rwHolders(fields, liveReaders(timeoutKeys))
	if rwConflict(writers, readers) {
		s.report("rw exclusion", rwName, j.now, Violation{Check: "mutual exclusion (Redis)", Detail: fmt.Sprintf(
			"rwlock %s has writers %v and readers %v at once", rwName, writers, readers)})
	}
	for _, o := range append(writers, readers...) {
		j.holder(rwName, "rwlock", o)
	}
}

// checkSemaphore judges the counted semaphore's available permits, val
// (unread if not a number): with those the stable workers believe they
// hold, no more than the total.
func (j *judgment) checkSemaphore(val string) {
	total := j.s.r.cfg.Permits
	avail, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		return
	}
	var believed int64
	for w := range j.s.r.workers {
		if j.stable(w) {
			believed += j.before[w].holds[semName].n
		}
	}
	if avail > total || avail+believed > total {
		j.s.report("above "+semName, semName, j.now, Violation{Check: "permits above total", Detail: fmt.Sprintf(
			"semaphore %s: %d available in Redis and %d held by workers, total %d", semName, avail, believed, total)})
	}
}

// xsemBelief returns what the workers believe of the expirable semaphore:
// whether all were stable, whether any was calling on it before or after
// Redis was read, and the permit ids they hold.
func (j *judgment) xsemBelief() (allStable, inflight bool, holders map[string]bool) {
	allStable = true
	holders = map[string]bool{}
	for w := range j.s.r.workers {
		allStable = allStable && j.stable(w)
		inflight = inflight || j.before[w].inflight == xsemName || j.after[w].inflight == xsemName
		for _, id := range j.before[w].holds[xsemName].ids {
			holders[id] = true
		}
	}
	return allStable, inflight, holders
}

// checkExpirable judges the expirable semaphore: its available permits,
// val (unread if not a number), and its acquired ones, members, no more
// than the total, and each permit not expired at serverTime explained by
// the workers (judged only when all are stable).
func (j *judgment) checkExpirable(val string, members []redis.Z, serverTime time.Time) {
	total := j.s.r.cfg.Permits
	avail, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		return
	}
	if avail+int64(len(members)) > total {
		j.s.report("above "+xsemName, xsemName, j.now, Violation{Check: "permits above total", Detail: fmt.Sprintf(
			"expirable semaphore %s: %d available and %d acquired in Redis, total %d", xsemName, avail, len(members), total)})
	}
	serverMs := float64(serverTime.UnixMilli())
	allStable, inflight, holders := j.xsemBelief()
	for _, m := range members {
		if m.Score <= serverMs {
			continue // expired: given back by the next operation
		}
		id := hex.EncodeToString([]byte(m.Member.(string)))
		var explained *bool
		if allStable {
			e := inflight || holders[id]
			explained = &e
		}
		j.phantom(xsemName, id, explained, j.permitLimit, "permit of "+xsemName)
	}
}

// forgetUnseen forgets when the members not found in this sample were
// first seen unexplained.
func (j *judgment) forgetUnseen() {
	for key := range j.s.since {
		if !j.seen[key] {
			delete(j.s.since, key)
		}
	}
}

// report records a sampler finding once per key, stamped with the time it
// was found, with the faults and the calls on object in the 10s before.
func (s *sampler) report(key, object string, at int64, v Violation) {
	v.Detail = fmt.Sprintf("at %.3fs: %s", sec(at), v.Detail)
	from := at - int64(10*time.Second)
	for _, op := range s.r.h.Ops() {
		if op.Object == object && op.Return >= from && op.Call <= at && op.Outcome != Refused {
			v.Excerpt = append(v.Excerpt, op.String())
		}
	}
	if n := len(v.Excerpt); n > 50 {
		v.Excerpt = append([]string{fmt.Sprintf("… %d earlier calls", n-50)}, v.Excerpt[n-50:]...)
	}
	v.Excerpt = append(v.Excerpt, "faults in the 10s before:")
	v.Excerpt = append(v.Excerpt, s.r.faultsAround(from, at)...)
	s.r.violateOnce(key, v)
}

// checkFinalState checks Redis once the workload is over and every client
// closed: every hold released, every permit back, every latch open, and no
// key beyond the documented ones.
func (r *run) checkFinalState(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := r.adminRDB.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("chaos: KEYS at the end: %v", err)
	}
	allowed := map[string]bool{semName: true, xsemName: true}
	for _, n := range lockNames {
		allowed[keys.FenceCounter(n)] = true
	}
	fairQueue, fairTimeouts := keys.FairQueue(fairName), keys.FairTimeouts(fairName)
	fairChecked := false
	total := r.cfg.Permits
	for _, k := range all {
		switch {
		case allowed[k]:
		case strings.HasPrefix(k, "redisync_request:"):
			ttl, err := r.adminRDB.PTTL(ctx, k).Result()
			if err == nil && (ttl == -1 || ttl > r.recordTTL+time.Second) { // -2: expired meanwhile
				r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("request record %s with TTL %v (record TTL %v)", k, ttl, r.recordTTL)})
			}
		case strings.HasPrefix(k, "redisync:client:"):
			// A client id's registration (WithID), left only when a
			// client's Close could not delete it: it must expire.
			ttl, err := r.adminRDB.PTTL(ctx, k).Result()
			if err == nil && ttl == -1 {
				r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("client id registration %s without a TTL", k)})
			}
		case k == fairQueue || k == fairTimeouts:
			if !fairChecked {
				fairChecked = true
				r.checkFairQueue(ctx, fairQueue, fairTimeouts)
			}
		case k == keys.SemaphoreTimeouts(xsemName):
			// checked with the expirable semaphore below
		default:
			typ, _ := r.adminRDB.Type(ctx, k).Result()
			ttl, _ := r.adminRDB.PTTL(ctx, k).Result()
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("%s (%s, TTL %v) left after every hold was released", k, typ, ttl)})
		}
	}
	// A counted permit whose release (or whose failed acquisition's undo)
	// never reached Redis is lost for good: see lostPermits.
	r.lostPermits(t, "at the end")
	avail, err := r.adminRDB.Get(ctx, xsemName).Int64()
	members, zerr := r.adminRDB.ZRangeWithScores(ctx, keys.SemaphoreTimeouts(xsemName), 0, -1).Result()
	now, terr := r.adminRDB.Time(ctx).Result()
	if err != nil || zerr != nil || terr != nil {
		r.violate(Violation{Check: "permits at the end", Detail: fmt.Sprintf("expirable semaphore %s unreadable: %v %v %v", xsemName, err, zerr, terr)})
		return
	}
	live := 0
	for _, m := range members {
		if m.Score > float64(now.UnixMilli()) {
			live++
		}
	}
	if live > 0 || avail+int64(len(members)) != total {
		r.violate(Violation{Check: "permits at the end", Detail: fmt.Sprintf(
			"expirable semaphore %s: %d available, %d acquired (%d not expired) with nothing held, total %d; its indeterminate calls:",
			xsemName, avail, len(members), live, total), Excerpt: r.indeterminate(xsemName)})
	}
}

// checkFairQueue judges the fair lock's queue left at the end: the entries
// of waiters whose leave was lost to a fault, which stay until an
// acquisition drops them as dead. Each must be scored in the timeouts zset
// with a deadline no later than the waiter timeout from now (a waiter that
// gave up no longer pushes it), and the list and the zset must agree.
func (r *run) checkFairQueue(ctx context.Context, queue, timeouts string) {
	q, qerr := r.adminRDB.LRange(ctx, queue, 0, -1).Result()
	z, zerr := r.adminRDB.ZRangeWithScores(ctx, timeouts, 0, -1).Result()
	now, terr := r.adminRDB.Time(ctx).Result()
	if qerr != nil || zerr != nil || terr != nil {
		r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s queue unreadable: %v %v %v", fairName, qerr, zerr, terr)})
		return
	}
	bound := float64(now.Add(fairWaiterTimeout).UnixMilli())
	scored := map[string]bool{}
	for _, m := range z {
		scored[fmt.Sprint(m.Member)] = true
		if m.Score > bound {
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: waiter %v still scored %d ms ahead with nobody waiting",
				fairName, m.Member, int64(m.Score)-now.UnixMilli())})
		}
	}
	if len(q) != len(z) {
		r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: queue %v and timeouts %v disagree", fairName, q, z)})
		return
	}
	for _, e := range q {
		if !scored[e] {
			r.violate(Violation{Check: "leftover keys", Detail: fmt.Sprintf("fair lock %s: queued %s has no deadline", fairName, e)})
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
	for _, m := range models {
		for _, part := range partitionByObject(m.ops) {
			object := part[0].Input.(Op).Object
			start := time.Now()
			res, info := porcupine.CheckOperationsVerbose(m.model, part, checkTimeout)
			took := time.Since(start).Round(time.Millisecond)
			rep.Checks = append(rep.Checks, fmt.Sprintf("porcupine %s model on %s: %s (%d operations, %v)", m.name, object, res, len(part), took))
			switch res {
			case porcupine.Illegal:
				v := Violation{Check: "linearizability", Detail: fmt.Sprintf("%s: no linearization of %d operations fits the %s model", object, len(part), m.name)}
				var stuck porcupine.Operation
				v.Excerpt, stuck = excerpt(m.model, part, info)
				v.Excerpt = append(v.Excerpt, "faults in the 30s before it:")
				v.Excerpt = append(v.Excerpt, r.faultsAround(stuck.Call-int64(30*time.Second), stuck.Return)...)
				v.HTML = r.writeHTML(m.model, info, object)
				r.violate(v)
			case porcupine.Unknown:
				r.violate(Violation{Check: "linearizability", Detail: fmt.Sprintf("%s: porcupine could not decide within %v", object, checkTimeout)})
			}
		}
	}

	// Fencing: tokens unique, positive, and increasing in real-time order.
	for _, name := range lockNames {
		var acq []Op
		for _, op := range ops {
			if op.Object == name && op.Kind == LockAcquire && op.Outcome == OK {
				acq = append(acq, op)
			}
		}
		bad := 0
		seen := map[int64]Op{}
		byReturn := append([]Op(nil), acq...)
		sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		for _, op := range acq {
			if prev, dup := seen[op.Token]; dup || op.Token <= 0 {
				bad++
				r.violate(Violation{Check: "fencing", Detail: fmt.Sprintf("%s: token %d given twice or not positive", name, op.Token),
					Excerpt: []string{prev.String(), op.String()}})
			}
			seen[op.Token] = op
		}
		// Every acquisition that returned before another was called has a
		// lower token.
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
				r.violate(Violation{Check: "fencing", Detail: fmt.Sprintf("%s: token %d after token %d was returned", name, op.Token, maxTok),
					Excerpt: []string{maxOp.String(), op.String()}})
			}
		}
		rep.Checks = append(rep.Checks, fmt.Sprintf("fencing on %s: %d acquisitions, tokens unique and increasing in real-time order: %v", name, len(acq), bad == 0))
	}
	for _, op := range ops {
		if op.Err == earlyLoss {
			r.violate(Violation{Check: "lease", Detail: fmt.Sprintf("w%d's hold of %s ended before its lease could have run out", op.Worker, op.Object),
				Excerpt: around(ops, op, 2*time.Second)})
		}
	}
}

// excerpt returns the history around the first operation porcupine could
// not linearize, and that operation: the operations of the partition called
// from 3s before it to its return, and the model's state after the longest
// linearizable prefix.
func excerpt(model porcupine.Model, part []porcupine.Operation, info porcupine.LinearizationInfo) ([]string, porcupine.Operation) {
	var longest []int
	for _, p := range info.PartialLinearizations() {
		for _, l := range p {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	in := map[int]bool{}
	for _, i := range longest {
		in[i] = true
	}
	order := make([]int, len(part))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return part[order[a]].Call < part[order[b]].Call })
	stuck := -1
	for _, i := range order {
		if !in[i] {
			stuck = i
			break
		}
	}
	if stuck < 0 {
		return nil, porcupine.Operation{}
	}
	state := model.Init()
	for _, i := range longest {
		_, state = model.Step(state, part[i].Input, part[i].Output)
	}
	describe := model.DescribeState
	if describe == nil {
		describe = func(s any) string { return fmt.Sprint(s) }
	}
	lines := []string{
		fmt.Sprintf("longest linearizable prefix: %d of %d operations; model state after it: %s", len(longest), len(part), describe(state)),
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
