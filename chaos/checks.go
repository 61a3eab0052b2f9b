package chaos

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	if cc, ok := s.r.adminRDB.(*redis.ClusterClient); ok {
		return readCluster(ctx, cc)
	}
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
	if !ok && s.r.cfg.Foreign && !strings.HasPrefix(owner, "chaos-c") {
		// The foreign client's (node-redisson: "<uuid>:<uuid>"): its holds
		// are judged by the lock model and the belief check, and two
		// owners at once by checkLock.
		return
	}
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
	v.At = at
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
