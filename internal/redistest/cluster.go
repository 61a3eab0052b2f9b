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

// Cluster is a Redis Cluster of masters without replicas, started by
// StartCluster. Servers are its nodes; node i serves the i-th contiguous
// share of the slots.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts n cluster-enabled redis-server masters (n >= 3) on
// free ports, assigns the 16384 slots evenly in contiguous ranges, joins
// the nodes, and returns when every node reports cluster_state:ok, knows
// all n nodes and reports the same slot map, and a message published on any
// node reaches a subscriber on every node (the bus links carry PUBLISH).
// The nodes are killed when the test finishes. StartCluster fails the test
// if n < 3, if no local redis-server binary is installed (a Docker-backed
// cluster is not supported), or if the cluster does not form within 60
// seconds.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("redistest: StartCluster(%d): a Redis Cluster needs at least 3 masters", n)
	}
	c := &Cluster{}
	for range n {
		c.Servers = append(c.Servers, Start(t, func(cfg *config) { cfg.cluster = true }))
	}
	for i, s := range c.Servers {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		// Distinct config epochs up front spare the nodes a round of epoch
		// collision handling, as redis-cli --cluster create does.
		s.Do(t, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
		s.Do(t, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
	}
	first := c.Servers[0]
	for _, s := range c.Servers[1:] {
		// The bus port is not port+10000 (it may not exist); pass it.
		first.Do(t, "CLUSTER", "MEET", s.host, s.port, s.bus)
	}

	deadline := time.Now().Add(clusterTimeout)
	for {
		err := c.check()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: cluster on %v did not form within %v: %v", c.Addrs(), clusterTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check returns nil when every node is ok, knows every node, all nodes
// report the same slot map, and every node's PUBLISH reaches every node.
func (c *Cluster) check() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want string
	for i, s := range c.Servers {
		v, err := s.do(ctx, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", s.Addr(), err)
		}
		info, _ := v.(string)
		for _, field := range []string{
			"cluster_state:ok",
			"cluster_slots_assigned:" + strconv.Itoa(clusterSlots),
			"cluster_known_nodes:" + strconv.Itoa(len(c.Servers)),
		} {
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
			return fmt.Errorf("%s sees slots %s, %s sees %s", s.Addr(), got, c.Servers[0].Addr(), want)
		}
	}
	return c.carriesPublish(ctx)
}

// carriesPublish checks that a message published on any node reaches a
// subscriber on every node. A node forwards PUBLISH to each other node
// over its bus link to that node, so a node it has no working link to yet
// misses the message; the slot map can agree before every link is up.
// Tests that wait for a message published on another node than the one
// they subscribed on need every link.
func (c *Cluster) carriesPublish(ctx context.Context) error {
	channel := fmt.Sprintf("redistest:cluster-probe:%d", time.Now().UnixNano())
	subs := make([]*redis.PubSub, len(c.Servers))
	for i, s := range c.Servers {
		cl := s.rawClient()
		defer cl.Close()
		subs[i] = cl.Subscribe(ctx, channel)
		defer subs[i].Close()
		if _, err := subs[i].Receive(ctx); err != nil {
			return fmt.Errorf("%s: SUBSCRIBE: %w", s.Addr(), err)
		}
	}
	for i, from := range c.Servers {
		payload := strconv.Itoa(i)
		if _, err := from.do(ctx, "PUBLISH", channel, payload); err != nil {
			return fmt.Errorf("%s: PUBLISH: %w", from.Addr(), err)
		}
		for j, sub := range subs {
			msg, err := sub.ReceiveTimeout(ctx, probeTimeout)
			if err != nil {
				return fmt.Errorf("a message published on %s did not reach a subscriber on %s within %v: %w",
					from.Addr(), c.Servers[j].Addr(), probeTimeout, err)
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
	slots, err := cl.ClusterSlots(ctx).Result()
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

// Addrs returns the nodes' addresses in the order of Servers.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with all node
// addresses and go-redis's default options. It is closed when the test
// finishes.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
