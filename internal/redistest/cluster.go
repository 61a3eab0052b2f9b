package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds how long StartCluster waits for the nodes to agree.
const clusterTimeout = 60 * time.Second

// probeTimeout bounds how long the readiness check waits for a published
// message to reach a node; a message later than that counts as lost, and
// the check is repeated.
const probeTimeout = 2 * time.Second

// clusterSlots is the number of hash slots in a Redis Cluster.
const clusterSlots = 16384

// Cluster is a Redis Cluster started by StartCluster. Servers are its
// masters as started: master i serves the i-th contiguous share of the
// slots until a failover or a migration changes that. Replicas are the
// replicas as started: Replicas[i*r+j] is the j-th of the r replicas of
// Servers[i]. MasterOf tells who serves a slot now.
type Cluster struct {
	Servers  []*Server
	Replicas []*Server
}

// ClusterOption configures StartCluster.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	replicas    int
	nodeTimeout time.Duration
	args        []string // ClusterServerArgs
}

// ClusterReplicas gives every master n replicas (n >= 0), so that a master
// can fail over (Cluster.Failover, Cluster.KillMaster). The default is no
// replicas.
func ClusterReplicas(n int) ClusterOption {
	return func(c *clusterConfig) { c.replicas = n }
}

// ClusterNodeTimeout sets every node's cluster-node-timeout: how long a
// master may be unreachable before the cluster fails it over to a replica.
// Shorter makes failover tests faster and spurious failovers on a busy
// machine likelier. The default is 5s.
func ClusterNodeTimeout(d time.Duration) ClusterOption {
	return func(c *clusterConfig) { c.nodeTimeout = d }
}

// StartCluster starts n cluster-enabled redis-server masters (n >= 3) on
// free ports, and the replicas ClusterReplicas asks for, assigns the 16384
// slots evenly in contiguous ranges to the masters, joins the nodes, and
// returns when every node reports cluster_state:ok, knows all nodes and
// reports the same slot map (replicas included), every replica's link to
// its master is up, and a message published on any node reaches a
// subscriber on every node (the bus links carry PUBLISH). The nodes are
// killed when the test finishes. StartCluster fails the test if n < 3, if
// no local redis-server binary is installed (a Docker-backed cluster is not
// supported), or if the cluster does not form within 60 seconds.
func StartCluster(t testing.TB, n int, opts ...ClusterOption) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("redistest: StartCluster(%d): a Redis Cluster needs at least 3 masters", n)
	}
	var cfg clusterConfig
	for _, o := range opts {
		o(&cfg)
	}
	node := func(c *config) {
		c.cluster = true
		if cfg.nodeTimeout > 0 {
			c.args = append(c.args, "--cluster-node-timeout", strconv.FormatInt(cfg.nodeTimeout.Milliseconds(), 10))
		}
		c.args = append(c.args, cfg.args...)
	}
	c := &Cluster{}
	for range n {
		c.Servers = append(c.Servers, Start(t, node))
	}
	for range n * cfg.replicas {
		c.Replicas = append(c.Replicas, Start(t, node))
	}
	for i, s := range c.Servers {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		// Distinct config epochs up front spare the nodes a round of epoch
		// collision handling, as redis-cli --cluster create does.
		s.Do(t, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
		s.Do(t, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
	}
	first := c.Servers[0]
	for _, s := range c.Nodes()[1:] {
		// The bus port is not port+10000 (it may not exist); pass it.
		first.Do(t, "CLUSTER", "MEET", s.host, s.port, s.bus)
	}
	for i, r := range c.Replicas {
		master := c.Servers[i/cfg.replicas]
		id := master.id(t)
		// The replica must have learnt the master's id through the bus
		// before it can replicate it.
		deadline := time.Now().Add(clusterTimeout)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
			_, err := r.do(ctx, "CLUSTER", "REPLICATE", id)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: %s: CLUSTER REPLICATE %s: %v", r.Addr(), id, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.wait(t, "form", func() error { return c.check(true) })
	return c
}

// wait polls check until it returns nil, and fails the test if it does not
// within clusterTimeout.
func (c *Cluster) wait(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: cluster on %v did not %s within %v: %v", c.Addrs(), what, clusterTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Nodes returns every node: Servers, then Replicas.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server{}, c.Servers...), c.Replicas...)
}

// live returns the nodes whose process runs.
func (c *Cluster) live() []*Server {
	var live []*Server
	for _, s := range c.Nodes() {
		if s.running() {
			live = append(live, s)
		}
	}
	return live
}

// WaitStable returns when every running node reports cluster_state:ok and
// the same slot map, every running replica's link to its master is up,
// and a message published on any running node reaches a subscriber on
// every running node. It fails the test if that takes more than 60
// seconds. Failover, KillMaster and MigrateSlot end with it.
func (c *Cluster) WaitStable(t testing.TB) {
	t.Helper()
	c.wait(t, "settle", func() error { return c.check(false) })
}

// MasterOf returns the node that serves slot now, as the first running node
// reports it. It fails the test if no running node knows.
func (c *Cluster) MasterOf(t testing.TB, slot int) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	for _, s := range c.live() {
		cl := s.rawClient()
		slots, err := cl.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SLOTS: all the harness needs, on every Redis 7
		cl.Close()
		if err != nil {
			continue
		}
		for _, sl := range slots {
			if slot >= sl.Start && slot <= sl.End && len(sl.Nodes) > 0 {
				if m := c.byAddr(sl.Nodes[0].Addr); m != nil {
					return m
				}
			}
		}
	}
	t.Fatalf("redistest: no running node of %v knows who serves slot %d", c.Addrs(), slot)
	return nil
}

// ReplicaOf returns a running node that replicates master now. It fails
// the test if there is none.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	id := master.id(t)
	for _, s := range c.live() {
		if s == master {
			continue
		}
		info, _ := s.Do(t, "INFO", "replication").(string)
		if !strings.Contains(info, "role:slave\r\n") {
			continue
		}
		nodes, _ := s.Do(t, "CLUSTER", "NODES").(string)
		for line := range strings.Lines(nodes) {
			f := strings.Fields(line)
			if len(f) > 3 && strings.Contains(f[2], "myself") && f[3] == id {
				return s
			}
		}
	}
	t.Fatalf("redistest: master %s has no running replica", master.Addr())
	return nil
}

// Failover makes replica take over its master's slots with CLUSTER
// FAILOVER (the master agrees and stops writes first, so nothing
// acknowledged is lost), then waits until the cluster is stable
// (WaitStable) with replica serving them. The former master becomes a
// replica of it.
func (c *Cluster) Failover(t testing.TB, replica *Server) {
	t.Helper()
	replica.Do(t, "CLUSTER", "FAILOVER")
	c.wait(t, "fail over to "+replica.Addr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
		defer cancel()
		v, err := replica.do(ctx, "ROLE")
		if err != nil {
			return err
		}
		if r, _ := v.([]any); len(r) == 0 || r[0] != "master" {
			return fmt.Errorf("%s is still %v", replica.Addr(), v)
		}
		return c.check(false)
	})
}

// KillMaster stops master (SIGKILL) and waits until one of its replicas
// has been elected in its place (after the cluster node timeout) and the
// cluster is stable again (WaitStable). It returns the new master. Writes
// the killed master acknowledged but had not yet sent to that replica are
// lost, as in production.
func (c *Cluster) KillMaster(t testing.TB, master *Server) *Server {
	t.Helper()
	slot := c.firstSlotOf(t, master)
	master.Stop(t)
	var next *Server
	c.wait(t, "fail over from the killed "+master.Addr(), func() error {
		if err := c.check(false); err != nil {
			return err
		}
		next = c.MasterOf(t, slot)
		if next == master {
			return fmt.Errorf("slot %d is still served by the killed %s", slot, master.Addr())
		}
		return nil
	})
	return next
}

// firstSlotOf returns the first slot master serves.
func (c *Cluster) firstSlotOf(t testing.TB, master *Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	cl := master.rawClient()
	defer cl.Close()
	slots, err := cl.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SLOTS: all the harness needs, on every Redis 7
	if err != nil {
		t.Fatalf("redistest: CLUSTER SLOTS on %s: %v", master.Addr(), err)
	}
	for _, sl := range slots {
		if len(sl.Nodes) > 0 && sl.Nodes[0].Addr == master.Addr() {
			return int(sl.Start)
		}
	}
	t.Fatalf("redistest: %s serves no slot", master.Addr())
	return 0
}

// MigrateSlot moves slot, with its keys, from the master that serves it to
// the master to, as redis-cli --cluster reshard does: CLUSTER SETSLOT
// IMPORTING on to, MIGRATING on the source, MIGRATE of every key in the
// slot, then CLUSTER SETSLOT NODE on every master. It returns when the
// cluster is stable (WaitStable) with to serving slot. The source ends the
// slot's sharded subscriptions (sunsubscribe) when it gives the slot up.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	from := c.MasterOf(t, slot)
	if from == to {
		t.Fatalf("redistest: MigrateSlot: %s already serves slot %d", to.Addr(), slot)
	}
	fromID, toID := from.id(t), to.id(t)
	to.Do(t, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	from.Do(t, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	for {
		ks, _ := from.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, 100).([]any)
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", to.host, to.port, "", 0, 5000, "REPLACE", "KEYS"}
		args = append(args, ks...)
		from.Do(t, args...)
	}
	to.Do(t, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	from.Do(t, "CLUSTER", "SETSLOT", slot, "NODE", toID)
	for _, s := range c.live() {
		if s != from && s != to && s.isMaster(t) {
			s.Do(t, "CLUSTER", "SETSLOT", slot, "NODE", toID)
		}
	}
	c.wait(t, fmt.Sprintf("move slot %d to %s", slot, to.Addr()), func() error {
		if err := c.check(false); err != nil {
			return err
		}
		if m := c.MasterOf(t, slot); m != to {
			return fmt.Errorf("slot %d is served by %s", slot, m.Addr())
		}
		return nil
	})
}

// byAddr returns the node at addr, or nil.
func (c *Cluster) byAddr(addr string) *Server {
	for _, s := range c.Nodes() {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// id returns the node's cluster node id.
func (s *Server) id(t testing.TB) string {
	t.Helper()
	id, _ := s.Do(t, "CLUSTER", "MYID").(string)
	return id
}

// isMaster reports whether the node's role is master.
func (s *Server) isMaster(t testing.TB) bool {
	t.Helper()
	r, _ := s.Do(t, "ROLE").([]any)
	return len(r) > 0 && r[0] == "master"
}

// check returns nil when every running node is ok, all of them report the
// same slot map, every running replica's link to its master is up, and
// every running node's PUBLISH reaches every running node. With all, every
// node must be running and know every node.
func (c *Cluster) check(all bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want string
	live := c.live()
	if all && len(live) != len(c.Nodes()) {
		return fmt.Errorf("%d of %d nodes run", len(live), len(c.Nodes()))
	}
	for i, s := range live {
		v, err := s.do(ctx, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", s.Addr(), err)
		}
		info, _ := v.(string)
		fields := []string{"cluster_state:ok", "cluster_slots_assigned:" + strconv.Itoa(clusterSlots)}
		if all {
			fields = append(fields, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes())))
		}
		if v, err = s.do(ctx, "INFO", "replication"); err != nil {
			return fmt.Errorf("%s: INFO replication: %w", s.Addr(), err)
		}
		if repl, _ := v.(string); strings.Contains(repl, "role:slave\r\n") && !strings.Contains(repl, "master_link_status:up\r\n") {
			return fmt.Errorf("%s: replica's link to its master is not up", s.Addr())
		}
		for _, field := range fields {
			if !strings.Contains(info, field+"\r\n") {
				return fmt.Errorf("%s: CLUSTER INFO lacks %q", s.Addr(), field)
			}
		}
		got, err := s.slotMap(ctx)
		if err != nil {
			return fmt.Errorf("%s: CLUSTER SLOTS: %w", s.Addr(), err)
		}
		if i == 0 {
			want = got
		} else if got != want {
			return fmt.Errorf("%s sees slots %s, %s sees %s", s.Addr(), got, live[0].Addr(), want)
		}
	}
	return c.carriesPublish(ctx, live)
}

// carriesPublish checks that a message published on any node reaches a
// subscriber on every node. A node forwards PUBLISH to each other node
// over its bus link to that node, so a node it has no working link to yet
// misses the message; the slot map can agree before every link is up.
// Tests that wait for a message published on another node than the one
// they subscribed on need every link.
func (c *Cluster) carriesPublish(ctx context.Context, nodes []*Server) error {
	channel := fmt.Sprintf("redistest:cluster-probe:%d", time.Now().UnixNano())
	subs := make([]*redis.PubSub, len(nodes))
	for i, s := range nodes {
		cl := s.rawClient()
		defer cl.Close()
		subs[i] = cl.Subscribe(ctx, channel)
		defer subs[i].Close()
		if _, err := subs[i].Receive(ctx); err != nil {
			return fmt.Errorf("%s: SUBSCRIBE: %w", s.Addr(), err)
		}
	}
	for i, from := range nodes {
		payload := strconv.Itoa(i)
		if _, err := from.do(ctx, "PUBLISH", channel, payload); err != nil {
			return fmt.Errorf("%s: PUBLISH: %w", from.Addr(), err)
		}
		for j, sub := range subs {
			msg, err := sub.ReceiveTimeout(ctx, probeTimeout)
			if err != nil {
				return fmt.Errorf("a message published on %s did not reach a subscriber on %s within %v: %w",
					from.Addr(), nodes[j].Addr(), probeTimeout, err)
			}
			if m, ok := msg.(*redis.Message); !ok || m.Payload != payload {
				return fmt.Errorf("%s: subscriber got %v, want the message %q from %s", c.Servers[j].Addr(), msg, payload, from.Addr())
			}
		}
	}
	return nil
}

// slotMap returns the node's CLUSTER SLOTS as a canonical string.
func (s *Server) slotMap(ctx context.Context) (string, error) {
	cl := s.rawClient()
	defer cl.Close()
	slots, err := cl.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SLOTS: all the harness needs, on every Redis 7
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(slots))
	for _, sl := range slots {
		addrs := make([]string, 0, len(sl.Nodes))
		for _, n := range sl.Nodes {
			addrs = append(addrs, n.ID+"@"+n.Addr)
		}
		parts = append(parts, fmt.Sprintf("%d-%d=%s", sl.Start, sl.End, strings.Join(addrs, ",")))
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), nil
}

// Addrs returns the nodes' addresses in the order of Nodes.
func (c *Cluster) Addrs() []string {
	nodes := c.Nodes()
	addrs := make([]string, len(nodes))
	for i, s := range nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with all node
// addresses (replicas included) and go-redis's default options. It is
// closed when the test finishes.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
