package chaos

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The netcluster topology: a Redis Cluster of three masters with one
// replica each, every node in a network namespace of its own, and each
// client in its own (the lab of netlab.go, as netns). The nodes announce
// their namespace addresses; the cluster is formed from the admin
// namespace with CLUSTER MEET, ADDSLOTSRANGE and REPLICATE. Faults are
// those of netns, on a random master and its replica (partitions of any
// two nodes, the cluster bus included, both ways or one way; loss and
// duplication; signals; clocks), and three of the Cluster's own:
// bus-oneway, minority and master-sigstop. Nothing forces a failover:
// the Cluster's failure detection (cluster-node-timeout) promotes a
// replica whose master the majority of the masters cannot reach, so a
// master isolated with clients on its side goes on taking their writes
// until it sees that it cannot reach the majority of the masters
// (cluster_state:fail, after about the node timeout) or learns of its
// replica's promotion; healed, it rejoins as its former replica's
// replica, its writes discarded. The suite measures that window for each
// such fault, per slot range.

// The netcluster topology's timing.
const (
	nclNodeTimeout = netDownAfter // cluster-node-timeout: the sentinels' down-after in netns
	nclSlots       = 16384
)

// netClusterState is what the netcluster topology last saw of the
// Cluster's roles (netClusterSteady).
type netClusterState struct {
	masters   []string          // the masters' addresses, in the order of their slots
	replicaOf map[string]string // a master's address → its replica's
	slots     map[string]string // a master's address → its slot ranges ("0-5460")
}

// startNetCluster starts the netcluster topology: the lab, the six nodes
// in it, the Cluster formed from the admin namespace, the clients'
// ClusterClients (each dialling from its namespace) and the admin client
// (from the admin namespace, which no fault touches).
func (r *run) startNetCluster(t testing.TB) {
	t.Helper()
	n := r.startNetLab(t, 2*clusterMasters, 0)
	n.cluster = &netClusterState{}
	adm := nsDialer(n.adm.ns)
	r.startNetData(t, adm, func(i int) []string {
		node := n.dataNodes[i]
		return []string{"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(n.lab.dir, node.name, "nodes.conf"),
			"--cluster-node-timeout", strconv.FormatInt(nclNodeTimeout.Milliseconds(), 10),
			"--cluster-replica-validity-factor", "0", // a replica cut off for long may still be promoted
			"--cluster-require-full-coverage", "no", // the other masters serve on while one range has none
			"--cluster-announce-ip", node.ip}
	})
	if err := n.formCluster(); err != nil {
		t.Fatalf("chaos: netcluster: %v", err)
	}
	var seeds []string
	for _, p := range n.data {
		seeds = append(seeds, p.addr)
	}
	var dialers []func(ctx context.Context, network, addr string) (net.Conn, error)
	for _, c := range n.clients {
		dialers = append(dialers, nsDialer(c.ns))
	}
	r.clusterClients(t, seeds, adm, dialers)
	r.netSteady(t)
}

// formCluster makes the Cluster: every node meets the first, the first
// clusterMasters nodes take equal contiguous shares of the slots, and
// node clusterMasters+i becomes master i's replica.
func (n *netTopo) formCluster() error {
	do := func(addr string, args ...any) error {
		_, err := n.serverDo(addr, args...)
		return err
	}
	first := n.data[0].addr
	for _, node := range n.dataNodes[1:] {
		if err := do(first, "CLUSTER", "MEET", node.ip, netDataPort); err != nil {
			return err
		}
	}
	share := nclSlots / clusterMasters
	for i := range clusterMasters {
		hi := (i+1)*share - 1
		if i == clusterMasters-1 {
			hi = nclSlots - 1
		}
		if err := do(n.data[i].addr, "CLUSTER", "ADDSLOTSRANGE", i*share, hi); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := clusterMasters; i < len(n.data); i++ {
		id, err := n.serverDo(n.data[i-clusterMasters].addr, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		// The replica must know its master before it can follow it.
		for {
			err = do(n.data[i].addr, "CLUSTER", "REPLICATE", id)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CLUSTER REPLICATE on %s: %w", n.data[i].addr, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// nclNode is one line of CLUSTER NODES.
type nclNode struct {
	id, addr, flags, masterID string
	slots                     []string
}

// clusterNodes reads CLUSTER NODES on the node at addr.
func (n *netTopo) clusterNodes(addr string) ([]nclNode, error) {
	v, err := n.serverDo(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	text, _ := v.(string)
	var nodes []nclNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, nclNode{id: f[0], addr: a, flags: f[2], masterID: f[3], slots: f[8:]})
	}
	return nodes, nil
}

// role returns the ROLE of the server at addr ("master", "slave"), or ""
// if it does not answer.
func (n *netTopo) role(addr string) string {
	v, err := n.serverDo(addr, "ROLE")
	if xs, ok := v.([]any); err == nil && ok && len(xs) > 0 {
		s, _ := xs[0].(string)
		return s
	}
	return ""
}

// isPrimary says whether the server at addr is the primary (netns) or a
// master (netcluster), as last seen.
func (n *netTopo) isPrimary(addr string) bool {
	if n.cluster != nil {
		return slices.Contains(n.cluster.masters, addr)
	}
	return addr == n.master
}

// clusterSteady reads every node and returns the Cluster's roles if it is
// steady: every node answers, says cluster_state:ok with every slot
// served, sees the six nodes with none failing, and all agree on three
// masters each followed by one replica whose link is up; otherwise why
// not.
func (n *netTopo) clusterSteady() (*netClusterState, string) {
	var st *netClusterState
	var ref string
	for _, p := range n.data {
		view, why := n.nodeSteady(p)
		if why != "" {
			return nil, why
		}
		if st == nil {
			st, ref = view, strings.Join(view.sortedMasters(), " ")
		} else if got := strings.Join(view.sortedMasters(), " "); got != ref {
			return nil, fmt.Sprintf("%s sees the masters %s, another node %s", p.addr, got, ref)
		}
	}
	if len(st.masters) != clusterMasters || len(st.replicaOf) != clusterMasters {
		return nil, fmt.Sprintf("%d masters, %d of them with a replica", len(st.masters), len(st.replicaOf))
	}
	for _, m := range st.masters {
		if st.replicaOf[m] == "" {
			return nil, "master " + m + " has no replica"
		}
	}
	slices.SortFunc(st.masters, func(a, b string) int { return strings.Compare(st.slots[a], st.slots[b]) })
	return st, ""
}

// nodeSteady reads node p: the Cluster's roles as p sees them if p is
// steady (cluster_state:ok, every slot served, every node known and none
// failing, its replication up), otherwise why not.
func (n *netTopo) nodeSteady(p *netProc) (*netClusterState, string) {
	info, err := n.serverDo(p.addr, "CLUSTER", "INFO")
	s, _ := info.(string)
	if err != nil || !strings.Contains(s, "cluster_state:ok") || !strings.Contains(s, "cluster_slots_ok:"+strconv.Itoa(nclSlots)) {
		return nil, fmt.Sprintf("%s: CLUSTER INFO: %v %q", p.addr, err, s)
	}
	nodes, err := n.clusterNodes(p.addr)
	if err != nil || len(nodes) != len(n.data) {
		return nil, fmt.Sprintf("%s: CLUSTER NODES: %v, %d nodes", p.addr, err, len(nodes))
	}
	st, why := rolesOf(nodes)
	if why != "" {
		return nil, p.addr + " sees " + why
	}
	repl, err := n.serverDo(p.addr, "INFO", "replication")
	rs, _ := repl.(string)
	up := strings.Contains(rs, "master_link_status:up")
	if strings.Contains(rs, "role:master") {
		up = strings.Contains(rs, "connected_slaves:1") && strings.Contains(rs, "state=online")
	}
	if err != nil || !up {
		return nil, fmt.Sprintf("%s: INFO replication: %v %q", p.addr, err, rs)
	}
	return st, ""
}

// rolesOf returns the roles CLUSTER NODES's nodes say, or which node is
// failing (or not yet known).
func rolesOf(nodes []nclNode) (*netClusterState, string) {
	st := &netClusterState{replicaOf: map[string]string{}, slots: map[string]string{}}
	byID := map[string]string{}
	for _, x := range nodes {
		if strings.Contains(x.flags, "fail") || strings.Contains(x.flags, "handshake") || strings.Contains(x.flags, "noaddr") {
			return nil, x.addr + " as " + x.flags
		}
		byID[x.id] = x.addr
	}
	for _, x := range nodes {
		if strings.Contains(x.flags, "master") && len(x.slots) > 0 {
			st.masters = append(st.masters, x.addr)
			st.slots[x.addr] = strings.Join(x.slots, " ")
		} else if strings.Contains(x.flags, "slave") {
			st.replicaOf[byID[x.masterID]] = x.addr
		}
	}
	return st, ""
}

// sortedMasters returns the masters' addresses, sorted.
func (st *netClusterState) sortedMasters() []string {
	ms := slices.Clone(st.masters)
	slices.Sort(ms)
	return ms
}

// netClusterSteady waits (up to 60s) until the Cluster is steady (see
// clusterSteady); it counts a failover for each master that was not one
// before, and has the admin client read the slots again.
func (r *run) netClusterSteady(t testing.TB) {
	t.Helper()
	n := r.net
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, why := n.clusterSteady()
		if st != nil {
			for _, m := range st.masters {
				if len(n.cluster.masters) > 0 && !slices.Contains(n.cluster.masters, m) {
					r.logf("netcluster: %s now serves slots %s", m, st.slots[m])
					r.failovers++
					for old, slots := range n.cluster.slots {
						if slots == st.slots[m] {
							r.noteFailoverClocks(old, m)
						}
					}
				}
			}
			*n.cluster = *st // n.cluster itself never changes: others read it unlocked
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if cc, ok := r.adminRDB.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
			cancel()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("chaos: netcluster: the Cluster did not settle within 60s: %s", why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The netcluster topology's own faults; the others are netns's, on a
// random master and its replica (see netClusterKinds).
const (
	FaultBusOneWay  FaultKind = "bus-oneway"     // a master's frames to every other node dropped (it still hears them): its replica is promoted while clients still write to it
	FaultMinority   FaultKind = "minority"       // a master, its replica and one or two clients cut from the other masters, their replicas and the other clients: no promotion; the master refuses writes once it sees no majority
	FaultMasterStop FaultKind = "master-sigstop" // SIGSTOP of a master until its replica is promoted, and 0.5–3s more
)

// netClusterKinds are the netcluster topology's fault kinds (the clock
// faults are added when the shim could be built, as in netns).
var netClusterKinds = []FaultKind{FaultNetPartition, FaultNetOneWay, FaultSplitBrain, FaultBusOneWay, FaultMinority,
	FaultReplCut, FaultReplOneWay, FaultNetLoss, FaultNetDup, FaultNetKill, FaultNetPause, FaultMasterStop, FaultNetReplicaPause}

// injectNetCluster injects the netcluster topology's faults on processes
// and partitions that netns has not, on master primary (node pNode) and
// its replica (rNode), describes them in f and reports whether k was one
// of them.
func (in *injector) injectNetCluster(k FaultKind, f *Fault, primary *netProc, pNode, rNode *netNode) bool {
	r, t, rng := in.r, in.t, in.rng
	n := r.net
	fail := func(err error) {
		if err != nil {
			t.Fatalf("chaos: netcluster fault %s: %v", k, err)
		}
	}
	slots := n.cluster.slots[primary.addr]
	switch k {
	case FaultMinority:
		side := rng.Perm(len(n.clients))[:1+rng.IntN(2)]
		fail(in.cutOff(string(k), []*netNode{pNode, rNode}, side))
		start := time.Now()
		watch := n.watchMaster(primary, start)
		time.Sleep(between(rng, nclNodeTimeout+time.Second, nclNodeTimeout+3*time.Second))
		cut := time.Since(start)
		refused, how := watch.stop()
		f.Detail = fmt.Sprintf("master %s (slots %s), its replica and clients %v cut from the rest for %v: %s",
			pNode.ip, slots, side, cut.Round(time.Millisecond), refusedText(refused, how))
	case FaultMasterStop:
		time.Sleep(replicaSteady) // as before a kill (see netKill)
		fail(primary.signal(syscall.SIGSTOP))
		start := time.Now()
		promoted := n.waitPromotion(primary, start)
		time.Sleep(between(rng, 500*time.Millisecond, 3*time.Second))
		fail(primary.signal(syscall.SIGCONT))
		cont := time.Since(start)
		// When it is a replica again (it may run what its clients sent
		// before it learns of the promotion).
		var refused time.Duration
		deadline := time.Now().Add(5 * time.Second)
		for refused == 0 && time.Now().Before(deadline) {
			if n.role(primary.addr) == "slave" {
				refused = time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
		until, how := time.Since(start), "a replica"
		f.Detail = fmt.Sprintf("master %s (slots %s) stopped for %v: ", primary.addr, slots, cont.Round(time.Millisecond))
		if promoted == 0 {
			f.Detail += "no promotion; continued, " + refusedText(refused, how)
		} else {
			f.Detail += fmt.Sprintf("promoted %s after %v; continued, %s%s", rNode.ip, promoted.Round(time.Millisecond),
				refusedText(refused, how), twoMasters(cont, until, refused, promoted))
		}
	default:
		return false
	}
	return true
}

// masterWatch polls a master from the admin namespace, which no fault
// touches, and notes when it first refused writes: cluster_state:fail
// (it cannot reach a majority of the masters), or the role of a replica.
type masterWatch struct {
	quit, done chan struct{}
	refused    time.Duration // since start; 0: not seen
	how        string
}

// watchMaster starts watching p (in netcluster; in netns it watches
// nothing), the times counted from start.
func (n *netTopo) watchMaster(p *netProc, start time.Time) *masterWatch {
	w := &masterWatch{quit: make(chan struct{}), done: make(chan struct{})}
	if n.cluster == nil {
		close(w.done)
		return w
	}
	c := redis.NewClient(&redis.Options{Addr: p.addr, Dialer: nsDialer(n.adm.ns), Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, PoolSize: 1})
	go func() {
		defer close(w.done)
		defer c.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := c.ClusterInfo(ctx).Result()
			role, rerr := c.Do(ctx, "ROLE").Slice()
			cancel()
			switch {
			case err == nil && strings.Contains(info, "cluster_state:fail"):
				w.how = "cluster_state:fail"
			case rerr == nil && len(role) > 0 && role[0] == "slave":
				w.how = "a replica"
			default:
				continue
			}
			w.refused = time.Since(start)
			return
		}
	}()
	return w
}

// stop ends the watch and returns when the master first refused writes
// (0: not seen) and how.
func (w *masterWatch) stop() (time.Duration, string) {
	close(w.quit)
	<-w.done
	return w.refused, w.how
}

// refusedText says when a watched master refused writes.
func refusedText(refused time.Duration, how string) string {
	if refused == 0 {
		return "the old master took writes until the heal"
	}
	return fmt.Sprintf("the old master refused writes (%s) after %v", how, refused.Round(time.Millisecond))
}

// twoMasters says for how long two masters of one slot range could take
// writes: the old one from from until it refused them (until until if it
// never did), its replica from promoted on.
func twoMasters(from, until, refused, promoted time.Duration) string {
	end := refused
	if end == 0 {
		end = until
	}
	if d := end - max(from, promoted); d > 0 {
		return fmt.Sprintf("; two masters for %v", d.Round(time.Millisecond))
	}
	return fmt.Sprintf("; never two masters (%v apart)", (max(from, promoted) - end).Round(time.Millisecond))
}
