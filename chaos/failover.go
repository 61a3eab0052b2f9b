package chaos

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// The failover check.
//
// A failover keeps what the replica has when the primary dies, and the
// replica gets every write the primary acknowledged to a client (replica
// acknowledgement, on by default) but not necessarily the others. So
// while the primary is dead and before the sentinel promotes the replica
// (Sentinel.KillMaster's whileDown), checkReplica reads the replica and
// checks that everything the workers were told they acquired is there:
//
//   - each lock's fencing counter is at least the highest token any
//     acquisition returned before the kill;
//   - every lock, rwlock and expirable-permit hold that a worker believes
//     it has (and is not releasing) is on the replica, unless its lease
//     may have run out by then (acquisition call + lease: renewals are not
//     acknowledged);
//   - the counted semaphore's available permits on the replica, with the
//     permits the workers believe they hold, are no more than the total.
//
// Calls that returned an error may or may not be there (indeterminate),
// and the models allow either. After the promotion, the models and the
// sampler check the rest: a hold lost by the failover would let a second
// worker in while the first still holds (mutual exclusion), a permit
// lost would be refused at its release, a fencing counter that went back
// would give a token twice.

// leaseSlack covers the millisecond rounding of expiry times.
const leaseSlack = 50 * time.Millisecond

// checkReplica runs the failover check on the replica with the primary
// dead since killedAt, and says what it checked.
func (r *run) checkReplica(killedAt int64) string {
	return r.checkReplicaOf(r.sent.Replicas[0].Addr(), allNames(), killedAt)
}

// checkReplicaOf runs the failover check on the replica at addr, for the
// primitives named served (those its master served: all of them but in
// Cluster), with the master dead since killedAt, and says what it
// checked.
func (r *run) checkReplicaOf(addr string, served []string, killedAt int64) string {
	snaps := make([]workerSnap, len(r.workers))
	for i, w := range r.workers {
		snaps[i] = w.state.snap()
	}
	rr, err := readReplica(addr, served, r.cl != nil)
	rc := replicaCheck{r: r, killedAt: killedAt, readEnd: r.h.Now()}
	if err != nil && err != redis.Nil {
		rc.fail(addr, fmt.Sprintf("could not read the replica: %v", err))
		return "replica unreadable"
	}
	tokens := rc.fences(rr.fences)
	holds, permits, believedPermits := r.checkBelieved(snaps, rr, rc.readEnd, rc.fail)
	if rr.sem == nil {
		return fmt.Sprintf("the replica had %d believed holds and %d expirable permits; tokens returned ≤ its fencing counters: %s",
			holds, permits, strings.Join(tokens, " "))
	}
	if v, err := strconv.ParseInt(rr.sem.Val(), 10, 64); err == nil && v+believedPermits > r.cfg.Permits {
		rc.fail(semName, fmt.Sprintf("semaphore %s: %d available and %d held by workers, total %d", semName, v, believedPermits, r.cfg.Permits))
	}
	return fmt.Sprintf("the replica had %d believed holds, %d expirable and %d counted permits; tokens returned ≤ its fencing counters: %s",
		holds, permits, believedPermits, strings.Join(tokens, " "))
}

// replicaRead is what checkReplica reads on the replica, in one pipeline:
// only the primitives its master served (the others' keys are nil).
type replicaRead struct {
	hashes  map[string]*redis.MapStringStringCmd // the locks' and the read-write lock's
	fences  map[string]*redis.StringCmd          // the locks' fencing counters
	sem     *redis.StringCmd
	xsemZ   *redis.ZSliceCmd
	srvTime *redis.TimeCmd
}

// readReplica reads the primitives named served on the replica at addr,
// after READONLY on a cluster node (which otherwise redirects reads to
// its master).
func readReplica(addr string, served []string, cluster bool) (replicaRead, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, PoolSize: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rr := replicaRead{hashes: map[string]*redis.MapStringStringCmd{}, fences: map[string]*redis.StringCmd{}}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if cluster {
			p.ReadOnly(ctx)
		}
		for _, n := range append(append([]string(nil), lockNames...), rwName) {
			if slices.Contains(served, n) {
				rr.hashes[n] = p.HGetAll(ctx, n)
			}
		}
		for _, n := range lockNames {
			if slices.Contains(served, n) {
				rr.fences[n] = p.Get(ctx, keys.FenceCounter(n))
			}
		}
		if slices.Contains(served, semName) {
			rr.sem = p.Get(ctx, semName)
		}
		if slices.Contains(served, xsemName) {
			rr.xsemZ = p.ZRangeWithScores(ctx, keys.SemaphoreTimeouts(xsemName), 0, -1)
		}
		rr.srvTime = p.Time(ctx)
		return nil
	})
	return rr, err
}

// read tells whether the primitive object was read.
func (rr replicaRead) read(object string) bool {
	switch object {
	case semName:
		return rr.sem != nil
	case xsemName:
		return rr.xsemZ != nil
	}
	return rr.hashes[object] != nil
}

// replicaCheck is checkReplica's check of the replica read at readEnd,
// the primary dead since killedAt.
type replicaCheck struct {
	r                 *run
	killedAt, readEnd int64
}

// fail records a failover violation on object, with the calls on it since
// 10s before the kill and the faults of that time.
func (rc replicaCheck) fail(object, detail string) {
	r, killedAt, readEnd := rc.r, rc.killedAt, rc.readEnd
	v := Violation{Check: "failover", Detail: fmt.Sprintf("at %.3fs, primary dead since %.3fs, on the replica about to be promoted: %s",
		sec(readEnd), sec(killedAt), detail)}
	from := killedAt - int64(10*time.Second)
	for _, op := range r.h.Ops() {
		if op.Object == object && op.Return >= from && op.Call <= readEnd && op.Outcome != Refused {
			v.Excerpt = append(v.Excerpt, op.String())
		}
	}
	if n := len(v.Excerpt); n > 40 {
		v.Excerpt = append([]string{fmt.Sprintf("… %d earlier calls", n-40)}, v.Excerpt[n-40:]...)
	}
	v.Excerpt = append(v.Excerpt, "faults in the 10s before:")
	v.Excerpt = append(v.Excerpt, r.faultsAround(from, readEnd)...)
	r.violate(v)
}

// fences checks the replica's fencing counters: each at least the
// highest token returned before the kill. It returns "returned≤counter"
// per lock.
func (rc replicaCheck) fences(fences map[string]*redis.StringCmd) []string {
	r, killedAt, fail := rc.r, rc.killedAt, rc.fail
	highest := map[string]int64{}
	for _, op := range r.h.Ops() {
		if op.Kind == LockAcquire && op.Outcome == OK && op.Return < killedAt {
			highest[op.Object] = max(highest[op.Object], op.Token)
		}
	}
	var tokens []string
	for _, n := range lockNames {
		if fences[n] == nil {
			continue // not served by the replica's master
		}
		v, _ := strconv.ParseInt(fences[n].Val(), 10, 64)
		tokens = append(tokens, fmt.Sprintf("%d≤%d", highest[n], v))
		if v < highest[n] {
			fail(n, fmt.Sprintf("lock %s: fencing counter %d, but token %d was returned before the kill", n, v, highest[n]))
		}
	}
	return tokens
}

// checkBelieved is checkReplica's check of the holds and permits the
// workers believe they have (snaps), against the replica's lock hashes and
// expirable permits (rr) read at readEnd. It returns the holds and
// expirable permits checked and the counted permits believed held. The
// primitives rr did not read (their master was another) are not checked.
func (r *run) checkBelieved(snaps []workerSnap, rr replicaRead, readEnd int64,
	fail func(object, detail string)) (holds, permits int, believedPermits int64) {
	hashes, now := rr.hashes, rr.srvTime.Val()
	var xsemZ []redis.Z
	if rr.xsemZ != nil {
		xsemZ = rr.xsemZ.Val()
	}
	for i, w := range r.workers {
		s := snaps[i]
		prefix := w.c.ID() + ":"
		for object, h := range s.holds {
			if h.n == 0 || s.inflight == object || !rr.read(object) {
				continue
			}
			switch object {
			case semName:
				believedPermits += h.n
			case xsemName:
				if !h.noLease && h.since+int64(r.cfg.PermitLease-leaseSlack) <= readEnd {
					continue // may have expired
				}
				permits += len(h.ids)
				checkPermits(w.id, h, xsemZ, now, fail)
			default:
				if h.since+int64(r.cfg.Lease-leaseSlack) <= readEnd {
					continue // may have expired: renewals are not acknowledged
				}
				holds++
				found := false
				for f := range hashes[object].Val() {
					found = found || strings.HasPrefix(f, prefix)
				}
				if !found {
					fail(object, fmt.Sprintf("w%d's hold of %s (acquired at %.3fs) is missing: the replica has %v", w.id, object, sec(h.since), hashes[object].Val()))
				}
			}
		}
	}
	return holds, permits, believedPermits
}

// checkPermits checks that every expirable permit of h, worker w's, is
// in zs (the replica's) with an expiry after now.
func checkPermits(w int, h held, zs []redis.Z, now time.Time, fail func(object, detail string)) {
	for _, id := range h.ids {
		raw, _ := hex.DecodeString(id)
		if !hasMember(zs, string(raw), now) {
			fail(xsemName, fmt.Sprintf("w%d's permit %s of %s (acquired at %.3fs, no lease: %v) is missing", w, id[:8], xsemName, sec(h.since), h.noLease))
		}
	}
}

// hasMember tells whether member is in zs with a score (its expiry, in
// epoch milliseconds) after now.
func hasMember(zs []redis.Z, member string, now time.Time) bool {
	for _, z := range zs {
		if z.Member == member {
			return z.Score > float64(now.UnixMilli())
		}
	}
	return false
}
