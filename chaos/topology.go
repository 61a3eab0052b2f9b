package chaos

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// Topology is the Redis deployment a run uses.
type Topology string

// The topologies.
const (
	// Single is one redis-server (appendonly yes, appendfsync always).
	Single Topology = "single"
	// Replicated is a primary and one replica (both appendonly yes,
	// appendfsync always) and one sentinel monitoring them (quorum 1),
	// with the faults of Single on the current primary and the
	// replicated ones: failovers, stalled and emptied replicas.
	Replicated Topology = "replicated"
	// Cluster is a Redis Cluster of three masters with one replica each
	// (every node appendonly yes, appendfsync always), with the faults of
	// Single on a random node and the cluster ones: masters killed and
	// their replicas promoted, planned failovers, slots of live primitives
	// moved to another master, stalled replicas.
	Cluster Topology = "cluster"
	// Netns is a primary, a replica and three sentinels (quorum 2), each
	// in a Linux network namespace of its own, and each client in its
	// own, joined by a bridge: partitions between any two nodes, servers
	// included, packet loss and duplication (nftables), and failovers by
	// the sentinels' own failure detection, split brains included (see
	// netns.go). It needs root, ip and nft.
	Netns Topology = "netns"
	// NetCluster is a Redis Cluster of three masters with one replica
	// each, every node and every client in a Linux network namespace of
	// its own, in netns's lab: its partitions, loss and duplication, and
	// failovers by the Cluster's own failure detection
	// (cluster-node-timeout), split brains included (see netcluster.go).
	// It needs root, ip and nft.
	NetCluster Topology = "netcluster"
)

// ParseTopology reads a topology name.
func ParseTopology(s string) (Topology, error) {
	switch t := Topology(strings.ToLower(s)); t {
	case Single, Replicated, Cluster, Netns, NetCluster:
		return t, nil
	}
	return "", fmt.Errorf("chaos: unknown topology %q: want single, replicated, cluster, netns or netcluster", s)
}

// serverArgs are every data server's extra arguments: the append-only
// file, fsynced before each reply, keeps what a SIGKILL would lose; a
// replica's full synchronisation starts at once (not after the default
// 5s wait for more replicas).
var serverArgs = []string{"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0"}

// How the clients reach the servers.
//
// Each client has its own proxy in front of each data server (one in
// Single, two in Replicated), and every fault aimed at a client acts on
// all of its proxies. In Replicated a client is go-redis's failover
// client: it asks the sentinel for the master's address whenever it dials,
// and its Dialer (proxyDialer) turns that address into the address of the
// client's proxy in front of that server. So a client reaches whichever
// server is the primary, before and after a failover, always through its
// own proxies. The servers keep their ports across restarts and
// failovers (the former primary comes back as the replica on its port),
// so the map from server to proxy never changes. The sentinel is dialled
// directly: the faults act on the data path, not on discovery.

// startTopology starts the servers, the proxies, the clients' go-redis
// clients and the admin client (direct to the current primary).
func (r *run) startTopology(t testing.TB) {
	t.Helper()
	if r.cfg.Topology == Cluster {
		r.startCluster(t)
		r.startRedlock(t)
		return
	}
	if r.cfg.Topology == Netns {
		r.startNetns(t)
		return
	}
	if r.cfg.Topology == NetCluster {
		r.startNetCluster(t)
		return
	}
	defer r.startRedlock(t)
	if r.cfg.Topology == Replicated {
		r.sent = redistest.StartSentinel(t, redistest.SentinelReplicas(1), redistest.SentinelServerArgs(serverArgs...))
		r.servers = append([]*redistest.Server{r.sent.Master}, r.sent.Replicas...)
		r.adminRDB = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: redistest.SentinelMasterName, SentinelAddrs: []string{r.sent.SentinelAddr},
			Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
		})
	} else {
		r.srv = redistest.Start(t, redistest.WithArgs(append(append([]string(nil), serverArgs...), singleServerArgs...)...))
		r.servers = []*redistest.Server{r.srv}
		r.adminRDB = redis.NewClient(&redis.Options{
			Addr: r.srv.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
		})
	}
	t.Cleanup(func() { _ = r.adminRDB.Close() })
	for range r.cfg.Clients {
		var ps []*redistest.Proxy
		for _, s := range r.servers {
			ps = append(ps, redistest.NewProxy(t, s.Addr()))
		}
		r.proxies = append(r.proxies, ps)
		var rdb *redis.Client
		if r.sent != nil {
			rdb = redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:    redistest.SentinelMasterName,
				SentinelAddrs: []string{r.sent.SentinelAddr},
				Dialer:        r.proxyDialer(ps),
				ReadTimeout:   time.Second,
				WriteTimeout:  time.Second,
				MaxRetries:    1,
			})
		} else {
			rdb = redis.NewClient(&redis.Options{
				Addr:         ps[0].Addr(),
				ReadTimeout:  time.Second,
				WriteTimeout: time.Second,
				MaxRetries:   1,
			})
		}
		r.rdbs = append(r.rdbs, rdb)
	}
}

// proxyDialer returns a client's Dialer: a data server's address is
// dialled through the client's proxy in front of it (ps, in the order of
// r.servers), any other address (the sentinel's) directly.
func (r *run) proxyDialer(ps []*redistest.Proxy) func(ctx context.Context, network, addr string) (net.Conn, error) {
	via := map[string]string{}
	for i, s := range r.servers {
		via[s.Addr()] = ps[i].Addr()
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := via[addr]; ok {
			addr = p
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		return d.DialContext(ctx, network, addr)
	}
}

// primary returns the server that is the primary now.
func (r *run) primary() *redistest.Server {
	if r.sent != nil {
		return r.sent.Master
	}
	return r.srv
}

// primaryProxy returns client c's proxy in front of the primary.
func (r *run) primaryProxy(c int) *redistest.Proxy {
	p := r.primary()
	for i, s := range r.servers {
		if s == p {
			return r.proxies[c][i]
		}
	}
	panic("chaos: the primary is none of the servers")
}

// replicaSteady is how long the replica must have been online at the
// primary before a failover is injected: two of the clients' reads of the
// primary's replica count (every second) and a margin. A client waits
// for the replicas it counted; one that still counts none (it read the
// count while the replica was away) waits for nothing, so a failover
// then could lose what it acquired: the library does not promise more
// (WithReplicaSync waits for the replicas connected), and the suite
// fails over only once every client counts the replica.
const replicaSteady = 2500 * time.Millisecond

// waitReplicaOnline waits until the primary reports its replica online,
// then for replicaSteady.
func (r *run) waitReplicaOnline(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := r.adminRDB.Info(ctx, "replication").Result()
		cancel()
		if err == nil && strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chaos: the primary's replica is not online after 30s: %v %q", err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(replicaSteady)
}
