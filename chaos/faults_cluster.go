package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// The faults of the Cluster topology: the server faults of Single on a
// random master (a restart on a random node, master or replica), and the
// cluster ones (clusterKinds). Faults aimed at a client's proxies act on
// all six of its proxies, as in the other topologies.

// allNames lists every primitive of the workload.
func allNames() []string {
	names := append([]string(nil), lockNames...)
	names = append(names, rwName, semName, xsemName)
	return append(names, latchNames...)
}

// injectCluster injects the faults whose target differs in Cluster, and
// reports whether k was one of them; the others (those on a client's
// proxies) are injected as in every topology.
func (in *injector) injectCluster(k FaultKind, f *Fault) bool {
	r, t, rng := in.r, in.t, in.rng
	switch k {
	case FaultDrop:
		m := pick(rng, r.masters(t))
		f.Detail = "master " + m.Addr() + ": " + in.dropReply(r.proxyOf(f.Client, m))
		return true
	case FaultPause:
		f.Client, f.Target = -1, "master"
		f.Detail = in.pause(pick(rng, r.masters(t)), pauseMin, pauseMax)
	case FaultRestart:
		f.Client, f.Target = -1, "node"
		s := pick(rng, r.servers)
		role := r.role(t, s)
		s.Restart(t)
		r.cl.WaitStable(t)
		f.Detail = role + " " + s.Addr() + " restarted (AOF kept)"
	case FaultScriptFlush:
		f.Client, f.Target = -1, "master"
		m := pick(rng, r.masters(t))
		f.Detail = m.Addr() + ": " + nodeDo(m.Addr(), "SCRIPT", "FLUSH")
	case FaultKillPubSub:
		f.Client, f.Target = -1, "master"
		m := pick(rng, r.masters(t))
		f.Detail = m.Addr() + ": killed " + nodeDo(m.Addr(), "CLIENT", "KILL", "TYPE", "pubsub")
	case FaultFailover:
		f.Client, f.Target = -1, "master"
		r.waitClusterSteady(t)
		f.Start = r.h.Now()
		f.Detail = in.clusterKill()
	case FaultPlannedFailover:
		f.Client, f.Target = -1, "replica"
		r.cl.WaitStable(t)
		f.Start = r.h.Now()
		rs := pick(rng, r.replicas(t))
		r.cl.Failover(t, rs)
		r.failovers++
		f.Detail = "CLUSTER FAILOVER on " + rs.Addr() + ": it serves its former master's slots"
	case FaultMigrate:
		f.Client, f.Target = -1, "slot"
		f.Detail = in.migrate()
	case FaultReplicaStall:
		f.Client, f.Target = -1, "replica"
		f.Detail = in.pause(pick(rng, r.replicas(t)), replicaStallMin, replicaStallMax)
	default:
		return false
	}
	return true
}

// clusterKill kills a random master; its replica is promoted at once
// (redistest.Cluster.KillMasterNow), the failover check reads the replica
// first, then the killed master comes back (its AOF) as the new master's
// replica. Half the time the replica is paused for a moment when the
// master dies, as in Replicated (see injector.failover).
func (in *injector) clusterKill() string {
	r, t, rng := in.r, in.t, in.rng
	m := pick(rng, r.masters(t))
	rs := r.cl.ReplicaOf(t, m)
	var served []string
	for _, n := range allNames() {
		if r.masterOfName(t, n) == m {
			served = append(served, n)
		}
	}
	var lag time.Duration
	if rng.IntN(2) == 0 {
		lag = between(rng, lagMin, lagMax)
		rs.Pause(t)
		time.Sleep(lag)
	}
	var checked string
	r.cl.KillMasterNow(t, m, rs, func() {
		if lag > 0 {
			rs.Resume(t)
		}
		checked = r.checkReplicaOf(rs.Addr(), served, r.h.Now())
	})
	r.failovers++
	m.Restart(t)
	r.cl.WaitStable(t)
	detail := fmt.Sprintf("%s killed, %s promoted; %s is its replica; it served %v", m.Addr(), rs.Addr(), m.Addr(), served)
	if lag > 0 {
		detail += fmt.Sprintf("; the replica paused for %v when the master died", lag.Round(time.Millisecond))
	}
	return detail + "; " + checked
}

// migrate moves the slot of a primitive to another master while the
// workload runs: one that a worker holds and another is calling (waiting
// for it, mostly) if there is one, else one that a worker holds, else
// any. The move is redistest.Cluster.MigrateSlot's: CLUSTER SETSLOT
// IMPORTING and MIGRATING, MIGRATE of its keys (the ASK and TRYAGAIN
// window), CLUSTER SETSLOT NODE.
func (in *injector) migrate() string {
	r, t, rng := in.r, in.t, in.rng
	holders, callers := map[string]int{}, map[string]int{}
	for _, w := range r.workers {
		s := w.state.snap()
		for object, h := range s.holds {
			if h.n > 0 {
				holders[object]++
			}
		}
		if s.inflight != "" {
			callers[s.inflight]++
		}
	}
	var held, waited []string
	for _, n := range allNames() {
		if holders[n] > 0 {
			held = append(held, n)
			if callers[n] > 0 {
				waited = append(waited, n)
			}
		}
	}
	name := pick(rng, allNames())
	if len(waited) > 0 {
		name = pick(rng, waited)
	} else if len(held) > 0 {
		name = pick(rng, held)
	}
	slot := keys.Slot(name)
	from := r.cl.MasterOf(t, slot)
	var others []*redistest.Server
	for _, m := range r.masters(t) {
		if m != from {
			others = append(others, m)
		}
	}
	to := pick(rng, others)
	r.cl.MigrateSlot(t, slot, to)
	r.migrations++
	return fmt.Sprintf("slot %d of %s (held by %d workers, %d calling it) from %s to %s",
		slot, name, holders[name], callers[name], from.Addr(), to.Addr())
}

// waitClusterSteady waits until every node runs and the cluster is
// stable, then for replicaSteady: every client then counts each master's
// replica (see replicaSteady).
func (r *run) waitClusterSteady(t testing.TB) {
	t.Helper()
	r.cl.WaitStable(t)
	time.Sleep(replicaSteady)
}

// replicas returns the nodes that are replicas now.
func (r *run) replicas(t testing.TB) []*redistest.Server {
	t.Helper()
	ms := r.masters(t)
	var rs []*redistest.Server
	for _, s := range r.servers {
		if !slices.Contains(ms, s) {
			rs = append(rs, s)
		}
	}
	return rs
}

// role says whether s serves slots now: "master" or "replica".
func (r *run) role(t testing.TB, s *redistest.Server) string {
	t.Helper()
	if slices.Contains(r.masters(t), s) {
		return "master"
	}
	return "replica"
}

// pick returns a random element of xs, which must not be empty.
func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }
