package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// The netns topology: a primary, a replica and three sentinels (quorum
// 2), each in a network namespace of its own, and each client in its own
// (see netlab.go). Faults are made on the network between the nodes by
// nftables in the hub's bridge (partitions of any two nodes, servers
// included, both ways or one way; a share of the packets lost or
// duplicated) and on the processes (SIGSTOP, SIGKILL). Nothing forces a
// failover: the sentinels promote the replica when the primary has not
// answered them for down-after-milliseconds, so an isolated primary goes
// on taking writes from the clients on its side (a split brain) until
// the partition heals and the sentinels turn it into the new primary's
// replica, its writes discarded.

// The netns topology's timing.
const (
	netDownAfter  = 2000 * time.Millisecond // sentinel down-after-milliseconds
	netFailoverTO = 6000 * time.Millisecond // sentinel failover-timeout
	netReplTO     = 5                       // the servers' repl-timeout, seconds
	netDataPort   = "6379"
	netSentPort   = "26379"
)

// netTopo is the netns topology's lab and nodes.
type netTopo struct {
	lab       *netLab
	data      []*netProc // s0, s1: the data servers
	dataNodes []*netNode
	sents     []*netProc
	sentNodes []*netNode
	clients   []*netNode
	adm       *netNode
	clocks    []*serverClock   // per data server; nil when the shim could not be built
	noClocks  string           // why there are no clock faults
	master    string           // the primary's address as the sentinels last named it
	cluster   *netClusterState // netcluster: the Cluster's roles; nil in netns
}

// startNetns starts the netns topology: the lab, the servers and
// sentinels in it, the clients' failover clients (each dialling from its
// namespace) and the admin client (from the admin namespace, which no
// fault touches).
func (r *run) startNetns(t testing.TB) {
	t.Helper()
	n := r.startNetLab(t, 2, 3)
	adm := nsDialer(n.adm.ns)
	r.startNetData(t, adm, func(i int) []string {
		if i == 0 {
			return nil
		}
		return []string{"--replicaof", n.dataNodes[0].ip, netDataPort}
	})
	n.master = n.dataNodes[0].ip + ":" + netDataPort
	sentAddrs := r.startNetSentinels(t, adm)
	r.adminRDB = redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: redistest.SentinelMasterName, SentinelAddrs: sentAddrs, Dialer: adm,
		Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
	})
	t.Cleanup(func() { _ = r.adminRDB.Close() })
	for _, c := range n.clients {
		r.rdbs = append(r.rdbs, redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    redistest.SentinelMasterName,
			SentinelAddrs: sentAddrs,
			Dialer:        nsDialer(c.ns),
			ReadTimeout:   time.Second,
			WriteTimeout:  time.Second,
			MaxRetries:    1,
		}))
	}
	r.netSteady(t)
}

// startNetLab creates the lab of the netns and netcluster topologies and
// its namespaces: the admin's, servers data servers' (s0, s1, …),
// sentinels sentinels' (t0, …) and one per client (c0, …).
func (r *run) startNetLab(t testing.TB, servers, sentinels int) *netTopo {
	t.Helper()
	lab, err := newNetLab()
	if err != nil {
		t.Fatalf("chaos: %s: %v", r.cfg.Topology, err)
	}
	t.Cleanup(lab.close)
	n := &netTopo{lab: lab}
	r.net = n
	must := func(node *netNode, err error) *netNode {
		t.Helper()
		if err != nil {
			t.Fatalf("chaos: %s: %v", r.cfg.Topology, err)
		}
		return node
	}
	n.adm = must(lab.addNode("adm", 2))
	for i := range servers {
		n.dataNodes = append(n.dataNodes, must(lab.addNode(fmt.Sprintf("s%d", i), 10+i)))
	}
	for i := range sentinels {
		n.sentNodes = append(n.sentNodes, must(lab.addNode(fmt.Sprintf("t%d", i), 20+i)))
	}
	for i := range r.cfg.Clients {
		n.clients = append(n.clients, must(lab.addNode(fmt.Sprintf("c%d", i), 30+i)))
	}
	return n
}

// startNetData starts the data servers, each in its namespace, with the
// clock shim preloaded when it could be built and extra(i)'s arguments
// added to server i's; adm dials from the admin namespace.
func (r *run) startNetData(t testing.TB, adm func(ctx context.Context, network, addr string) (net.Conn, error), extra func(i int) []string) {
	t.Helper()
	n := r.net
	lab := n.lab
	redisBin, err := execPath("redis-server")
	if err != nil {
		t.Fatalf("chaos: %s: %v", r.cfg.Topology, err)
	}
	shim, err := buildClockShim(lab.dir)
	if err != nil {
		n.noClocks = "no clock faults: " + err.Error()
		r.findings = append(r.findings, n.noClocks)
	}
	for i, node := range n.dataNodes {
		dir := filepath.Join(lab.dir, node.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("chaos: %v", err)
		}
		var env []string
		if shim != "" {
			c, err := newServerClock(filepath.Join(lab.dir, node.name+".clock"))
			if err != nil {
				t.Fatalf("chaos: %v", err)
			}
			n.clocks = append(n.clocks, c)
			env = []string{"LD_PRELOAD=" + shim, "REDISYNC_CLOCK_FILE=" + c.path}
		}
		args := append([]string{"--bind", node.ip, "--port", netDataPort, "--protected-mode", "no", "--dir", dir,
			"--daemonize", "no", "--save", "", "--repl-timeout", fmt.Sprint(netReplTO), "--repl-ping-replica-period", "1",
			// jemalloc's background thread sleeps until a deadline on the
			// wall clock it reads (the shim's): with the server's clock
			// behind, the kernel finds that deadline past and the thread
			// spins, a core per server (0 % idle in the first hour-long
			// runs, taken then for the AOF's fsyncs).
			"--jemalloc-bg-thread", "no"}, serverArgs...)
		args = append(args, extra(i)...)
		p := &netProc{name: node.name, ns: node.ns, bin: redisBin, args: args, env: env, addr: node.ip + ":" + netDataPort, adm: adm}
		if err := lab.start(p); err != nil {
			t.Fatalf("chaos: netns: %v", err)
		}
		n.data = append(n.data, p)
	}
}

// startNetSentinels starts the three sentinels, each in its namespace,
// and returns their addresses.
func (r *run) startNetSentinels(t testing.TB, adm func(ctx context.Context, network, addr string) (net.Conn, error)) []string {
	t.Helper()
	n := r.net
	lab := n.lab
	sentBin, err := execPath("redis-sentinel")
	if err != nil {
		sentBin, err = execPath("redis-server")
		if err != nil {
			t.Fatalf("chaos: netns: %v", err)
		}
	}
	var sentAddrs []string
	for _, node := range n.sentNodes {
		dir := filepath.Join(lab.dir, node.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("chaos: %v", err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %s\nbind %s\nprotected-mode no\ndir %s\n"+
			"sentinel monitor %s %s %s 2\n"+
			"sentinel down-after-milliseconds %[4]s %[7]d\n"+
			"sentinel failover-timeout %[4]s %[8]d\n"+
			"sentinel parallel-syncs %[4]s 1\n",
			netSentPort, node.ip, dir, redistest.SentinelMasterName, n.dataNodes[0].ip, netDataPort,
			netDownAfter.Milliseconds(), netFailoverTO.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatalf("chaos: %v", err)
		}
		args := []string{conf}
		if filepath.Base(sentBin) != "redis-sentinel" {
			args = append(args, "--sentinel")
		}
		p := &netProc{name: node.name, ns: node.ns, bin: sentBin, args: args, addr: node.ip + ":" + netSentPort, adm: adm}
		if err := lab.start(p); err != nil {
			t.Fatalf("chaos: netns: %v", err)
		}
		n.sents = append(n.sents, p)
		sentAddrs = append(sentAddrs, p.addr)
	}
	return sentAddrs
}

// execPath finds bin on the PATH or where Debian installs it.
func execPath(bin string) (string, error) {
	for _, d := range append(filepath.SplitList(os.Getenv("PATH")), "/usr/bin", "/usr/sbin", "/usr/local/bin") {
		p := filepath.Join(d, bin)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", bin)
}

// sentinelMaster asks each sentinel (from the admin namespace) which
// server is the primary and returns the address most of them name ("" if
// no majority answers).
func (n *netTopo) sentinelMaster() string {
	votes := map[string]int{}
	for _, s := range n.sents {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.addr, Dialer: s.adm, Protocol: 2, DisableIdentity: true,
			MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, PoolSize: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addr, err := c.GetMasterAddrByName(ctx, redistest.SentinelMasterName).Result()
		cancel()
		_ = c.Close()
		if err == nil && len(addr) == 2 {
			votes[addr[0]+":"+addr[1]]++
		}
	}
	for a, v := range votes {
		if v >= 2 {
			return a
		}
	}
	return ""
}

// serverDo runs one command on the server at addr from the admin
// namespace.
func (n *netTopo) serverDo(addr string, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Dialer: nsDialer(n.adm.ns), Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, PoolSize: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// netSteady waits (up to 60s) until the sentinels agree on a primary, it
// answers as a master with its replica online, and the replica answers
// as its replica; it counts a failover when the primary changed.
func (r *run) netSteady(t testing.TB) {
	t.Helper()
	n := r.net
	if n.cluster != nil {
		r.netClusterSteady(t)
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	var why string
	for time.Now().Before(deadline) {
		m := n.sentinelMaster()
		if m == "" {
			why = "the sentinels name no primary by majority"
			time.Sleep(200 * time.Millisecond)
			continue
		}
		info, err := n.serverDo(m, "INFO", "replication")
		s, _ := info.(string)
		if err != nil || !strings.Contains(s, "role:master") || !strings.Contains(s, "state=online") {
			why = fmt.Sprintf("the primary %s: %v %q", m, err, s)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		ok := true
		for _, p := range n.data {
			if p.addr == m {
				continue
			}
			info, err := n.serverDo(p.addr, "INFO", "replication")
			s, _ := info.(string)
			if err != nil || !strings.Contains(s, "role:slave") || !strings.Contains(s, "master_link_status:up") {
				ok = false
				why = fmt.Sprintf("the replica %s: %v %q", p.addr, err, s)
			}
		}
		if !ok {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if m != n.master {
			r.logf("netns: the primary is now %s (was %s)", m, n.master)
			r.noteFailoverClocks(n.master, m)
			n.master = m
			r.failovers++
		}
		return
	}
	t.Fatalf("chaos: netns: the topology did not settle within 60s: %s", why)
}

// The netns topology's faults.
const (
	FaultNetPartition    FaultKind = "net-partition"   // a client cut from every server and sentinel, both ways, for longer than the lease
	FaultNetOneWay       FaultKind = "net-oneway"      // a client's frames to the primary dropped, or the primary's to it
	FaultSplitBrain      FaultKind = "split-brain"     // the primary and some clients cut from the replica, the sentinels and the other clients: the sentinels promote the replica
	FaultSentinelOneWay  FaultKind = "sentinel-oneway" // the primary's frames to the sentinels dropped (it still hears everyone): they promote the replica while clients still write to it
	FaultReplCut         FaultKind = "repl-cut"        // the replication link cut both ways, at times longer than repl-timeout
	FaultReplOneWay      FaultKind = "repl-oneway"     // one direction of the replication link dropped (the stream, or the acknowledgements)
	FaultGossipCut       FaultKind = "gossip-cut"      // a sentinel cut from the other sentinels
	FaultNetLoss         FaultKind = "loss"            // a share of the frames between a client and the primary lost, both ways
	FaultNetDup          FaultKind = "duplicate"       // a share of the frames between a client and the primary sent twice
	FaultNetKill         FaultKind = "kill-primary"    // SIGKILL of the primary: the sentinels promote the replica after down-after; it comes back (its AOF) as the replica
	FaultNetPause        FaultKind = "net-sigstop"     // SIGSTOP of the primary, shorter than down-after
	FaultNetReplicaPause FaultKind = "replica-sigstop" // SIGSTOP of the replica, past the acknowledgement timeout
	FaultClockBack       FaultKind = "clock-back"      // a server's wall clock stepped back 1–5s (it stays behind)
	FaultClockSlow       FaultKind = "clock-slow"      // a server's wall clock 10–50% slow for 2–5s (it stays behind)
	FaultClockFast       FaultKind = "clock-fast"      // a server's wall clock 0.5% fast for 3–6s (within the belief margin on a 2s lease)
	FaultClockForward    FaultKind = "clock-forward"   // a server's wall clock stepped forward past a lease (Config.ClockForward; no lease survives it)
	FaultClockRace       FaultKind = "clock-fast-50"   // a server's wall clock 50% fast for 2–4s (Config.ClockForward; no lease survives it)
)

// clockKinds are the netns topology's clock faults that a lease
// survives.
var clockKinds = []FaultKind{FaultClockBack, FaultClockSlow, FaultClockFast}

// netKinds are the netns topology's fault kinds.
var netKinds = []FaultKind{FaultNetPartition, FaultNetOneWay, FaultSplitBrain, FaultSentinelOneWay, FaultReplCut,
	FaultReplOneWay, FaultGossipCut, FaultNetLoss, FaultNetDup, FaultNetKill, FaultNetPause, FaultNetReplicaPause}

// splitBrainKinds are the kinds that can leave two primaries (masters of
// one slot range) taking writes; Config.NoSplitBrain leaves them out.
var splitBrainKinds = []FaultKind{FaultSplitBrain, FaultSentinelOneWay, FaultBusOneWay, FaultMasterStop}

// netPair returns the primary a fault acts on and its replica, with
// their nodes: netns's primary, or a random master of netcluster.
func (in *injector) netPair() (primary, replica *netProc, pNode, rNode *netNode) {
	n := in.r.net
	master := n.master
	if n.cluster != nil {
		master = pick(in.rng, n.cluster.masters)
	}
	primary = n.proc(master)
	replica = n.replicaOf(primary)
	return primary, replica, n.nodeOf(primary), n.nodeOf(replica)
}

// proc returns the data server at addr.
func (n *netTopo) proc(addr string) *netProc {
	for _, p := range n.data {
		if p.addr == addr {
			return p
		}
	}
	panic("chaos: " + addr + " is none of the lab's servers")
}

// nodeOf returns data server p's node.
func (n *netTopo) nodeOf(p *netProc) *netNode {
	return n.dataNodes[slices.Index(n.data, p)]
}

// replicaOf returns primary's replica.
func (n *netTopo) replicaOf(primary *netProc) *netProc {
	if n.cluster != nil {
		return n.proc(n.cluster.replicaOf[primary.addr])
	}
	for _, p := range n.data {
		if p != primary {
			return p
		}
	}
	return nil
}

// injectNet injects fault f of kind k in the netns topology and returns
// it once it is over and the topology has settled again.
func (in *injector) injectNet(k FaultKind, f Fault) Fault {
	r, t, rng := in.r, in.t, in.rng
	n := r.net
	lab := n.lab
	in.syncClocks()
	primary, _, pNode, rNode := in.netPair()
	client := n.clients[f.Client]
	everyServer := append(append([]*netNode{}, n.dataNodes...), n.sentNodes...)
	fail := func(err error) {
		if err != nil {
			t.Fatalf("chaos: netns fault %s: %v", k, err)
		}
	}
	hold := func(lo, hi time.Duration) time.Duration {
		d := between(rng, lo, hi)
		time.Sleep(d)
		return d
	}
	both := func(name string, a, b []*netNode, percent int) {
		fail(lab.drop(name+"/ab", a, b, percent))
		fail(lab.drop(name+"/ba", b, a, percent))
	}
	name := string(k)
	switch k {
	case FaultNetPartition:
		lo, hi := r.partitionRange()
		both(name, []*netNode{client}, everyServer, 100)
		f.Detail = fmt.Sprintf("%v", hold(lo, hi).Round(time.Millisecond))
	case FaultNetOneWay:
		from, to, dir := []*netNode{client}, []*netNode{pNode}, "client → primary"
		if rng.IntN(2) == 0 {
			from, to, dir = to, from, "primary → client"
		}
		fail(lab.drop(name, from, to, 100))
		f.Detail = fmt.Sprintf("%s dropped for %v", dir, hold(time.Second, 3*time.Second).Round(time.Millisecond))
	case FaultSplitBrain, FaultSentinelOneWay, FaultBusOneWay:
		f.Client = -1
		f.Detail = in.splitBrain(k, primary, pNode)
	case FaultReplCut:
		f.Client = -1
		both(name, []*netNode{pNode}, []*netNode{rNode}, 100)
		d := hold(time.Second, time.Duration(netReplTO+2)*time.Second)
		f.Detail = fmt.Sprintf("%s ↔ %s for %v (repl-timeout %ds)", pNode.ip, rNode.ip, d.Round(time.Millisecond), netReplTO)
	case FaultReplOneWay:
		f.Client = -1
		from, to, dir := pNode, rNode, "the stream (primary → replica)"
		if rng.IntN(2) == 0 {
			from, to, dir = rNode, pNode, "the acknowledgements (replica → primary)"
		}
		fail(lab.drop(name, []*netNode{from}, []*netNode{to}, 100))
		f.Detail = fmt.Sprintf("%s dropped for %v", dir, hold(time.Second, 4*time.Second).Round(time.Millisecond))
	case FaultGossipCut:
		f.Client, f.Target = -1, "sentinel"
		i := rng.IntN(len(n.sentNodes))
		var others []*netNode
		for j, s := range n.sentNodes {
			if j != i {
				others = append(others, s)
			}
		}
		both(name, []*netNode{n.sentNodes[i]}, others, 100)
		f.Detail = fmt.Sprintf("%s cut from the other sentinels for %v", n.sentNodes[i].ip, hold(2*time.Second, 5*time.Second).Round(time.Millisecond))
	case FaultNetLoss:
		pct := 10 + rng.IntN(31)
		both(name, []*netNode{client}, []*netNode{pNode}, pct)
		f.Detail = fmt.Sprintf("%d%% lost for %v", pct, hold(2*time.Second, 5*time.Second).Round(time.Millisecond))
	case FaultNetDup:
		pct := 10 + rng.IntN(41)
		fail(lab.dup(name+"/ab", client, pNode, pct))
		fail(lab.dup(name+"/ba", pNode, client, pct))
		f.Detail = fmt.Sprintf("%d%% duplicated for %v", pct, hold(2*time.Second, 5*time.Second).Round(time.Millisecond))
		fail(lab.undo(name + "/ab"))
		fail(lab.undo(name + "/ba"))
	default:
		in.netServerFault(k, &f, primary, pNode, rNode)
	}
	fail(lab.heal())
	r.netSteady(t)
	f.End = r.h.Now()
	if f.ClockAhead = r.takeClockAhead(); f.ClockAhead > r.serverMargin() {
		f.Detail += fmt.Sprintf("; the promoted server's clock was %v ahead of the old primary's: leases granted there ended that much early (no Redis lock survives it)",
			f.ClockAhead.Round(time.Millisecond))
	}
	return f
}

// netServerFault injects the faults on servers of kind k that
// injectNet's own switch leaves: netcluster's (injectNetCluster), then
// those on processes and clocks (netProcFault).
func (in *injector) netServerFault(k FaultKind, f *Fault, primary *netProc, pNode, rNode *netNode) {
	f.Client = -1
	if in.r.net.cluster == nil {
		f.Detail = in.netProcFault(k, f, primary)
		return
	}
	if !in.injectNetCluster(k, f, primary, pNode, rNode) {
		f.Detail = in.netProcFault(k, f, primary)
	}
}

// netProcFault injects the netns topology's faults on processes and
// clocks, of kind k, and describes them.
func (in *injector) netProcFault(k FaultKind, f *Fault, primary *netProc) string {
	r, t, rng := in.r, in.t, in.rng
	replica := r.net.replicaOf(primary)
	fail := func(err error) {
		if err != nil {
			t.Fatalf("chaos: netns fault %s: %v", k, err)
		}
	}
	hold := func(lo, hi time.Duration) time.Duration {
		d := between(rng, lo, hi)
		time.Sleep(d)
		return d
	}
	switch k {
	case FaultNetKill:
		return in.netKill(primary)
	case FaultNetPause:
		fail(primary.signal(syscall.SIGSTOP))
		d := hold(500*time.Millisecond, netDownAfter-500*time.Millisecond) // netcluster's node timeout is the same
		fail(primary.signal(syscall.SIGCONT))
		return fmt.Sprintf("%v %s", d.Round(time.Millisecond), primary.addr)
	case FaultClockBack, FaultClockSlow, FaultClockFast, FaultClockForward, FaultClockRace:
		f.Target = "server"
		return in.clockFault(k)
	case FaultNetReplicaPause:
		f.Target = "replica"
		fail(replica.signal(syscall.SIGSTOP))
		d := hold(replicaStallMin, replicaStallMax)
		fail(replica.signal(syscall.SIGCONT))
		return fmt.Sprintf("%v %s", d.Round(time.Millisecond), replica.addr)
	}
	return ""
}

// splitBrain isolates the primary (netcluster: a master), with one or
// two clients on its side, from every other server, the sentinels and the
// other clients (both ways; for FaultSentinelOneWay only the primary's
// frames to the sentinels are dropped, for FaultBusOneWay only the
// master's frames to the other nodes, and nobody else is cut), until its
// replica has been promoted or promotionLimit has passed, and a random
// while more; then it heals the network: the sentinels (the Cluster)
// turn the old primary into the new one's replica.
func (in *injector) splitBrain(k FaultKind, primary *netProc, pNode *netNode) string {
	r, t, rng := in.r, in.t, in.rng
	n := r.net
	lab := n.lab
	var others []*netNode
	for _, d := range n.dataNodes {
		if d != pNode {
			others = append(others, d)
		}
	}
	var side []int
	var err error
	if n.cluster != nil {
		time.Sleep(replicaSteady) // as before a kill (see netKill)
	}
	switch k {
	case FaultSplitBrain:
		nc := 1 + rng.IntN(2)
		side = rng.Perm(len(n.clients))[:nc]
		err = in.cutOff(string(k), []*netNode{pNode}, side)
	case FaultSentinelOneWay:
		err = lab.drop(string(k), []*netNode{pNode}, n.sentNodes, 100)
	default:
		err = lab.drop(string(k), []*netNode{pNode}, others, 100)
	}
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	start := time.Now()
	watch := n.watchMaster(primary, start)
	promoted := n.waitPromotion(primary, start)
	extra := between(rng, 500*time.Millisecond, 3*time.Second)
	time.Sleep(extra)
	cut := time.Since(start)
	refused, how := watch.stop()
	what := fmt.Sprintf("primary %s with clients %v cut from the rest", pNode.ip, side)
	switch k {
	case FaultSentinelOneWay:
		what = fmt.Sprintf("primary %s → sentinels dropped", pNode.ip)
	case FaultBusOneWay:
		what = fmt.Sprintf("master %s → the other nodes dropped", pNode.ip)
	}
	if n.cluster == nil {
		if promoted == 0 {
			return fmt.Sprintf("%s for %v: no promotion", what, cut.Round(time.Millisecond))
		}
		return fmt.Sprintf("%s for %v: the sentinels promoted %s after %v (two primaries for %v at least)",
			what, cut.Round(time.Millisecond), n.replicaOf(primary).addr, promoted.Round(time.Millisecond), extra.Round(time.Millisecond))
	}
	what = strings.Replace(what, "primary", "master", 1) + fmt.Sprintf(" (slots %s) for %v: %s",
		n.cluster.slots[primary.addr], cut.Round(time.Millisecond), refusedText(refused, how))
	if promoted == 0 {
		return what + "; no promotion"
	}
	return fmt.Sprintf("%s; promoted %s after %v%s", what, n.replicaOf(primary).addr, promoted.Round(time.Millisecond),
		twoMasters(0, cut, refused, promoted))
}

// cutOff cuts the nodes of side, and the clients whose indexes are in
// clients, from every other node of the lab, both ways, under the rule
// name.
func (in *injector) cutOff(name string, side []*netNode, clients []int) error {
	n := in.r.net
	a := append([]*netNode{}, side...)
	for _, c := range clients {
		a = append(a, n.clients[c])
	}
	var b []*netNode
	for _, x := range append(append(append([]*netNode{}, n.dataNodes...), n.sentNodes...), n.clients...) {
		if !slices.Contains(a, x) {
			b = append(b, x)
		}
	}
	if err := n.lab.drop(name+"/ab", a, b, 100); err != nil {
		return err
	}
	return n.lab.drop(name+"/ba", b, a, 100)
}

// waitPromotion waits until primary's replica has been promoted (the
// sentinels name another primary; in netcluster, the replica is a
// master) or promotionLimit has passed since start, and returns how long
// after start it saw it (0: not promoted).
func (n *netTopo) waitPromotion(primary *netProc, start time.Time) time.Duration {
	for time.Since(start) < n.promotionLimit() {
		if n.promoted(primary) {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0
}

// promoted says whether primary's replica has been promoted.
func (n *netTopo) promoted(primary *netProc) bool {
	if n.cluster != nil {
		return n.role(n.replicaOf(primary).addr) == "master"
	}
	m := n.sentinelMaster()
	return m != "" && m != primary.addr
}

// promotionLimit is how long a fault waits for a promotion.
func (n *netTopo) promotionLimit() time.Duration {
	if n.cluster != nil {
		return 5*nclNodeTimeout + 5*time.Second
	}
	return 3*netDownAfter + netFailoverTO
}

// netKill kills the primary with SIGKILL and waits until its replica is
// promoted (failure detection: down-after, or the Cluster's node
// timeout), then restarts the old primary (its AOF; in netcluster its
// nodes.conf too), which the sentinels (the Cluster) turn into the new
// primary's replica.
func (in *injector) netKill(primary *netProc) string {
	r, t := in.r, in.t
	n := r.net
	// Only once every client counts the replica, as in the other
	// topologies (see replicaSteady).
	time.Sleep(replicaSteady)
	primary.stop()
	start := time.Now()
	promoted := n.waitPromotion(primary, start)
	if promoted != 0 && n.cluster == nil {
		// Back as the new primary's replica, as the sentinels would make it.
		var args []string
		for i := 0; i < len(primary.args); i++ {
			if primary.args[i] == "--replicaof" {
				i += 2
				continue
			}
			args = append(args, primary.args[i])
		}
		m := n.sentinelMaster()
		host, port, _ := strings.Cut(m, ":")
		primary.args = append(args, "--replicaof", host, port)
	}
	if err := primary.launch(); err != nil {
		t.Fatalf("chaos: %s: restart %s: %v", r.cfg.Topology, primary.addr, err)
	}
	if promoted == 0 {
		return fmt.Sprintf("%s killed; not promoted within %v, restarted", primary.addr, time.Since(start).Round(time.Millisecond))
	}
	return fmt.Sprintf("%s killed; its replica was promoted after %v; restarted as its replica", primary.addr, promoted.Round(time.Millisecond))
}

// clockFault changes a data server's wall clock (see clock.go): a random
// one's, the primary's for the faults no lease survives (a replica's
// clock decides no expiry until it is promoted).
func (in *injector) clockFault(k FaultKind) string {
	r, t, rng := in.r, in.t, in.rng
	n := r.net
	i := rng.IntN(len(n.data))
	if slices.Contains(unsurvivableKinds, k) {
		for j, p := range n.data {
			if n.isPrimary(p.addr) {
				i = j
			}
		}
	}
	c, p := n.clocks[i], n.data[i]
	role := "replica"
	if n.isPrimary(p.addr) {
		role = "primary"
	}
	fail := func(err error) {
		if err != nil {
			t.Fatalf("chaos: clock fault on %s: %v", p.addr, err)
		}
	}
	var what string
	switch k {
	case FaultClockBack:
		d := between(rng, time.Second, 5*time.Second)
		fail(c.jump(-d))
		what = fmt.Sprintf("stepped back %v", d.Round(time.Millisecond))
	case FaultClockForward:
		d := between(rng, r.cfg.Lease+500*time.Millisecond, r.cfg.Lease+3*time.Second)
		fail(c.jump(d))
		what = fmt.Sprintf("stepped forward %v", d.Round(time.Millisecond))
	default:
		ppm, lo, hi := int64(5000), 3*time.Second, 6*time.Second // clock-fast: 0.5%
		switch k {
		case FaultClockSlow:
			ppm, lo, hi = -int64(100_000+rng.IntN(400_001)), 2*time.Second, 5*time.Second
		case FaultClockRace:
			ppm, lo, hi = 500_000, 2*time.Second, 4*time.Second
		}
		fail(c.rate(ppm))
		d := between(rng, lo, hi)
		time.Sleep(d)
		fail(c.rate(0))
		what = fmt.Sprintf("%+.1f%% for %v", float64(ppm)/1e4, d.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %s: %s; now %v off the real clock", role, p.addr, what, c.skew().Round(time.Millisecond))
}
