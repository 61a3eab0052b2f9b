package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// FaultKind names a kind of fault.
type FaultKind string

// The kinds of faults the schedule injects.
const (
	FaultDrop        FaultKind = "drop-reply"    // the primary runs a command, its reply is lost (one client)
	FaultLatency     FaultKind = "latency"       // every chunk delayed (one client)
	FaultPartition   FaultKind = "partition"     // no bytes either way for longer than the lease (one client); sometimes ends with reset connections
	FaultCut         FaultKind = "cut"           // every connection reset (one client)
	FaultStall       FaultKind = "stall"         // requests of open connections held, then delivered late, within the request record TTL (one client)
	FaultLate        FaultKind = "late-delivery" // as stall, held beyond the request record TTL (Config.LateDelivery)
	FaultPause       FaultKind = "sigstop"       // SIGSTOP, then SIGCONT of the primary (too short for the sentinel to fail over)
	FaultRestart     FaultKind = "sigkill"       // SIGKILL and restart of the primary (the AOF keeps the data; no failover)
	FaultScriptFlush FaultKind = "script-flush"  // SCRIPT FLUSH on the primary
	FaultKillPubSub  FaultKind = "kill-pubsub"   // CLIENT KILL TYPE pubsub on the primary

	// Replicated only.
	FaultFailover       FaultKind = "failover"        // SIGKILL of the primary (half the time while the replica is paused), the sentinel promotes the replica, the former primary comes back as its replica
	FaultReplicaStall   FaultKind = "replica-stall"   // SIGSTOP of the replica longer than the acknowledgement timeout, then SIGCONT
	FaultReplicaRestart FaultKind = "replica-restart" // SIGKILL of the replica, restarted empty: it copies the primary's data again

	// Cluster only (besides FaultFailover and FaultReplicaStall, on a
	// random master or replica).
	FaultPlannedFailover FaultKind = "cluster-failover" // CLUSTER FAILOVER on a replica: it takes its master's slots, the master becomes its replica
	FaultMigrate         FaultKind = "migrate"          // the slot of a primitive (held, if one is) moved to another master: SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE
)

// allKinds lists every kind of both topologies but FaultLate, which
// Config.LateDelivery adds; replicatedKinds are added in Replicated.
var (
	allKinds = []FaultKind{FaultDrop, FaultLatency, FaultPartition, FaultCut, FaultStall,
		FaultPause, FaultRestart, FaultScriptFlush, FaultKillPubSub}
	replicatedKinds = []FaultKind{FaultFailover, FaultReplicaStall, FaultReplicaRestart}
	clusterKinds    = []FaultKind{FaultFailover, FaultPlannedFailover, FaultMigrate, FaultReplicaStall}
)

// Fault is one injected fault.
type Fault struct {
	Kind   FaultKind
	Client int    // the client whose proxies it acted on; -1 for a server
	Target string // what a server fault acted on, when not the primary (Cluster: "master", "replica", "node", "slot")
	Start  int64
	End    int64
	Detail string
	// ClockAhead (netns, netcluster) is how far ahead of the old
	// primary's the clock of a server promoted during the fault was, at
	// most: beyond the library's margin the fault is one no lock survives
	// (clock.go).
	ClockAhead time.Duration
}

func (f Fault) String() string {
	target := "server"
	if f.Kind == FaultReplicaStall || f.Kind == FaultReplicaRestart {
		target = "replica"
	} else if f.Kind != FaultFailover && f.Client < 0 {
		target = "primary"
	}
	if f.Target != "" {
		target = f.Target
	}
	if f.Client >= 0 {
		target = fmt.Sprintf("client %d", f.Client)
	}
	return fmt.Sprintf("[%9.3fs %9.3fs] %-13s %-8s %s", sec(f.Start), sec(f.End), f.Kind, target, f.Detail)
}

// Fault durations. Partitions last longer than the lease; stalls stay
// within the request record TTL unless they are late deliveries.
func (r *run) partitionRange() (time.Duration, time.Duration) {
	return r.cfg.Lease + 500*time.Millisecond, r.cfg.Lease + 2*time.Second
}

const (
	stallMin   = 500 * time.Millisecond
	stallMax   = 3 * time.Second
	pauseMin   = 500 * time.Millisecond
	pauseMax   = 2500 * time.Millisecond
	latencyMax = 300 * time.Millisecond

	// A stalled replica stays paused longer than the clients' replica
	// acknowledgement timeout (1s) most of the time, and shorter than the
	// sentinel's down-after (5s).
	replicaStallMin = 700 * time.Millisecond
	replicaStallMax = 3 * time.Second

	// How long the replica is paused before the primary is killed, in
	// half the failovers.
	lagMin = 50 * time.Millisecond
	lagMax = 800 * time.Millisecond
)

// lateRange is the range of late-delivery stalls: beyond the request record
// TTL, up to Config.LateMax.
func (r *run) lateRange() (time.Duration, time.Duration) {
	lo := r.recordTTL + time.Second
	return lo, max(r.cfg.LateMax, lo+time.Second)
}

// lateBound is Bounds.Late: the longest a request can take to reach the
// server after its call returned.
func (r *run) lateBound() time.Duration {
	_, part := r.partitionRange()
	longest := max(part, stallMax)
	if r.net != nil {
		// A split brain lasts until the replica was promoted (at most
		// promotionLimit) and up to 3s more; TCP delivers what it
		// retransmitted once it heals.
		longest = max(longest, r.net.promotionLimit()+3*time.Second)
	}
	if r.cfg.LateDelivery {
		_, late := r.lateRange()
		longest = max(longest, late)
	}
	return longest + pauseMax + 2*time.Second
}

// schedule injects faults from the test goroutine (the server's Pause,
// Resume and Restart fail the test from there) until the fault phase ends,
// cycling through the kinds in a seeded random order so a short run sees
// every kind; in Replicated the first cycle has its failover among its
// first three faults, so that even a short run fails over. It returns
// when every fault it started has ended.
func (r *run) schedule(t testing.TB, rng *rand.Rand, until time.Time) {
	kinds := r.faultKinds()
	in := &injector{r: r, t: t, rng: rng}
	var order []FaultKind
	var asyncEnd time.Time // when the last stall started without waiting ends
	first := true
	for time.Now().Before(until) {
		if len(order) == 0 {
			order = r.cycle(rng, kinds, first)
			first = false
		}
		k := order[0]
		order = order[1:]
		f := in.inject(k)
		if f.End > r.h.At(asyncEnd) {
			asyncEnd = time.Now().Add(time.Duration(f.End - r.h.Now()))
		}
		r.faultsMu.Lock()
		r.faults = append(r.faults, f)
		r.faultsMu.Unlock()
		r.logf("fault %s", f)
		time.Sleep(between(rng, 200*time.Millisecond, time.Second))
	}
	time.Sleep(time.Until(asyncEnd))
}

// faultKinds returns the kinds of faults of the run's topology.
func (r *run) faultKinds() []FaultKind {
	kinds := append([]FaultKind(nil), allKinds...)
	if r.cfg.LateDelivery {
		kinds = append(kinds, FaultLate)
	}
	switch {
	case r.net != nil:
		base := netKinds
		if r.net.cluster != nil {
			base = netClusterKinds
		}
		kinds = slices.DeleteFunc(append([]FaultKind(nil), base...), func(k FaultKind) bool {
			return r.cfg.NoSplitBrain && slices.Contains(splitBrainKinds, k)
		})
		if r.net.clocks != nil {
			kinds = append(kinds, clockKinds...)
			if r.cfg.ClockForward {
				kinds = append(kinds, unsurvivableKinds...)
			}
		}
	case r.sent != nil:
		kinds = append(kinds, replicatedKinds...)
	case r.cl != nil:
		kinds = append(kinds, clusterKinds...)
	case r.cfg.Topology == Single:
		kinds = append(kinds, stateKinds...)
	}
	if r.rl != nil {
		kinds = append(kinds, redlockKinds...)
	}
	return kinds
}

// cycle returns one cycle of the schedule: kinds in a seeded random
// order. The first cycle has a failover among its first three faults (in
// netns a split brain, or a kill without split brains), and on a Cluster
// a migration fourth; on a single server a restart without data among
// its first three and memory pressure fourth or fifth.
func (r *run) cycle(rng *rand.Rand, kinds []FaultKind, first bool) []FaultKind {
	order := append([]FaultKind(nil), kinds...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if !first {
		return order
	}
	lead := FaultFailover
	if r.net != nil {
		lead = FaultSplitBrain
		if r.cfg.NoSplitBrain {
			lead = FaultNetKill
		}
	}
	if r.sent != nil || r.cl != nil || r.net != nil {
		i, j := slices.Index(order, lead), rng.IntN(3)
		order[i], order[j] = order[j], order[i]
	}
	if r.cl != nil {
		// A migration among the first four faults too.
		i, j := slices.Index(order, FaultMigrate), 3
		order[i], order[j] = order[j], order[i]
	}
	if r.cfg.Topology == Single {
		// A restart without data among the first three faults, memory
		// pressure fourth or fifth, so that a short run has both.
		i, j := slices.Index(order, FaultWipe), rng.IntN(3)
		order[i], order[j] = order[j], order[i]
		i, j = slices.Index(order, FaultEvict), 3+rng.IntN(2)
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// injector injects the faults of one schedule: it holds the run, the
// test the servers' Pause, Resume and Restart fail, and the schedule's
// seeded random source.
type injector struct {
	r   *run
	t   testing.TB
	rng *rand.Rand
}

// inject injects one fault of kind k and returns it once it is over, except
// for late deliveries, which go on in the proxy (Fault.End says when they
// end).
func (in *injector) inject(k FaultKind) Fault {
	r := in.r
	if r.net != nil {
		f := in.injectNet(k, Fault{Kind: k, Client: in.rng.IntN(len(r.net.clients)), Start: r.h.Now()})
		if r.net.cluster != nil && f.Target == "" {
			f.Target = "master" // or a client's: Fault.String names f.Client first
		}
		return f
	}
	f := Fault{Kind: k, Client: in.rng.IntN(len(r.proxies)), Start: r.h.Now()}
	if r.rl != nil && in.injectRedlock(k, &f) {
		f.End = r.h.Now()
		return f
	}
	if r.cl != nil && in.injectCluster(k, &f) {
		f.End = r.h.Now()
		return f
	}
	switch k {
	case FaultWipe:
		return in.restartEmpty(f)
	case FaultEvict:
		return in.memoryPressure(f)
	}
	return in.injectFault(k, f)
}

// injectFault is inject's fault f of kind k, on f.Client's proxies or on
// the primary (in Cluster: on the proxies, as injectCluster leaves them).
func (in *injector) injectFault(k FaultKind, f Fault) Fault {
	r, t, rng := in.r, in.t, in.rng
	c := f.Client
	ps := r.proxies[c]
	switch k {
	case FaultDrop:
		f.Detail = in.dropReply(r.primaryProxy(c))
	case FaultLatency:
		f.Detail = addLatency(rng, ps)
	case FaultPartition:
		f.Detail = in.partition(ps)
	case FaultCut:
		for _, p := range ps {
			p.CutAll()
		}
	case FaultStall:
		d := between(rng, stallMin, stallMax)
		n := stall(ps, d)
		time.Sleep(d)
		f.Detail = fmt.Sprintf("%v on %d connections", d.Round(time.Millisecond), n)
	case FaultLate:
		return in.lateDelivery(ps, f)
	case FaultPause:
		f.Client = -1
		f.Detail = in.pause(r.primary(), pauseMin, pauseMax)
	case FaultRestart:
		f.Client = -1
		p := r.primary()
		p.Restart(t)
		f.Detail = p.Addr()
	case FaultFailover:
		// Only once every client counts the replica (see replicaSteady).
		f.Client = -1
		r.waitReplicaOnline(t)
		f.Start = r.h.Now()
		f.Detail = in.failover()
	case FaultReplicaStall:
		f.Client = -1
		f.Detail = in.pause(r.sent.Replicas[0], replicaStallMin, replicaStallMax)
	case FaultReplicaRestart:
		f.Client = -1
		rs := r.sent.Replicas[0]
		r.sent.RestartReplica(t, 0, true)
		f.Detail = rs.Addr() + " restarted empty, synchronised again"
	case FaultScriptFlush:
		f.Client = -1
		f.Detail = r.admin(t, "SCRIPT", "FLUSH")
	case FaultKillPubSub:
		f.Client = -1
		f.Detail = "killed " + r.admin(t, "CLIENT", "KILL", "TYPE", "pubsub")
	}
	f.End = r.h.Now()
	return f
}

// dropReply drops the next reply through p, a client's proxy in front of
// a primary (only those carry commands), and waits (up to 2s) until it is
// dropped.
func (in *injector) dropReply(p *redistest.Proxy) string {
	before := p.Dropped()
	p.DropNextReply()
	deadline := time.Now().Add(2 * time.Second)
	for p.Dropped() == before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Sprintf("dropped %d", p.Dropped()-before)
}

// addLatency delays every chunk through the proxies ps for a random
// while.
func addLatency(rng *rand.Rand, ps []*redistest.Proxy) string {
	lat := between(rng, 20*time.Millisecond, latencyMax)
	d := between(rng, time.Second, 3*time.Second)
	for _, p := range ps {
		p.SetLatency(lat)
	}
	time.Sleep(d)
	for _, p := range ps {
		p.SetLatency(0)
	}
	return fmt.Sprintf("%v per chunk for %v", lat.Round(time.Millisecond), d.Round(time.Millisecond))
}

// partition blocks the proxies ps for a random while, and half the time
// resets their connections before unblocking them.
func (in *injector) partition(ps []*redistest.Proxy) string {
	r, rng := in.r, in.rng
	lo, hi := r.partitionRange()
	d := between(rng, lo, hi)
	reset := rng.IntN(2) == 0
	for _, p := range ps {
		p.Block()
	}
	time.Sleep(d)
	for _, p := range ps {
		if reset {
			p.CutAll()
		}
		p.Unblock()
	}
	return fmt.Sprintf("%v, connections reset: %v", d.Round(time.Millisecond), reset)
}

// lateDelivery stalls the connections of the proxies ps for longer than
// the request records live, and returns f once the first 2s have passed:
// the stalled commands are delivered late, in the proxy, until f.End.
func (in *injector) lateDelivery(ps []*redistest.Proxy, f Fault) Fault {
	r, rng := in.r, in.rng
	lo, hi := r.lateRange()
	d := between(rng, lo, hi)
	n := stall(ps, d)
	f.Detail = fmt.Sprintf("%v on %d connections (record TTL %v)", d.Round(time.Millisecond), n, r.recordTTL)
	f.End = r.h.Now() + int64(d)
	time.Sleep(min(d, 2*time.Second))
	return f
}

// pause stops s with SIGSTOP for a random while between lo and hi.
func (in *injector) pause(s *redistest.Server, lo, hi time.Duration) string {
	d := between(in.rng, lo, hi)
	s.Pause(in.t)
	time.Sleep(d)
	s.Resume(in.t)
	return d.Round(time.Millisecond).String() + " " + s.Addr()
}

// failover kills the primary and has the sentinel promote the replica.
// Half the time the replica is paused for a moment
// when the primary dies: the acquisitions then waiting for its
// acknowledgement fail at the kill, while what they wrote, already sent
// to the replica (the kernel holds it for the paused process), reaches
// the promoted replica; their undos must clean it up there. (A pause on
// loopback does not lose the stream: a replica really behind, whose
// primary still buffers what it did not send, is what integration's
// TestFailoverLosesNothingAcknowledged measures under a heavier load.)
func (in *injector) failover() string {
	r, t, rng := in.r, in.t, in.rng
	old, rs := r.primary(), r.sent.Replicas[0]
	var lag time.Duration
	if rng.IntN(2) == 0 {
		lag = between(rng, lagMin, lagMax)
		rs.Pause(t)
		time.Sleep(lag)
	}
	var checked string
	next := r.sent.KillMaster(t, func() {
		if lag > 0 {
			rs.Resume(t)
		}
		checked = r.checkReplica(r.h.Now())
	})
	r.failovers++
	detail := fmt.Sprintf("%s killed, %s promoted; %s is its replica", old.Addr(), next.Addr(), old.Addr())
	if lag > 0 {
		detail += fmt.Sprintf("; the replica paused for %v when the primary died", lag.Round(time.Millisecond))
	}
	return detail + "; " + checked
}

// stall stalls the connections of every proxy of ps for d and returns how
// many it stalled.
func stall(ps []*redistest.Proxy, d time.Duration) int {
	n := 0
	for _, p := range ps {
		n += p.Stall(d)
	}
	return n
}

// admin runs one command on the primary directly and returns its reply as
// text, or the error's.
func (r *run) admin(t testing.TB, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := r.adminRDB.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprint(v)
}
