package chaos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// The Cluster topology.
//
// Three masters with one replica each (redistest.StartCluster), every node
// with the append-only file fsynced before each reply. Each client is a
// go-redis ClusterClient with its own proxy in front of each of the six
// nodes; its Dialer (proxyDialer, as in Replicated) turns a node's address,
// whichever way the client learnt it (its seeds, CLUSTER SLOTS, a MOVED or
// ASK redirection), into the address of its proxy in front of that node.
// Nodes keep their ports across restarts, failovers and migrations, so a
// client reaches every node through its own proxies whatever serves a
// slot. redisync's pub/sub is sharded (ShardedAuto, the default: SSUBSCRIBE
// on the node serving the channel's slot). The admin client is a
// ClusterClient dialling the nodes directly.

// clusterMasters is the number of masters of the Cluster topology.
const clusterMasters = 3

// startCluster starts the Cluster topology: the nodes, the proxies, the
// clients' ClusterClients and the admin client.
func (r *run) startCluster(t testing.TB) {
	t.Helper()
	r.cl = redistest.StartCluster(t, clusterMasters, redistest.ClusterReplicas(1), redistest.ClusterServerArgs(serverArgs...))
	r.servers = r.cl.Nodes()
	var dialers []func(ctx context.Context, network, addr string) (net.Conn, error)
	for range r.cfg.Clients {
		var ps []*redistest.Proxy
		for _, s := range r.servers {
			ps = append(ps, redistest.NewProxy(t, s.Addr()))
		}
		r.proxies = append(r.proxies, ps)
		dialers = append(dialers, r.proxyDialer(ps))
	}
	r.clusterClients(t, r.cl.Addrs(), nil, dialers)
}

// clusterClients creates the admin client, a ClusterClient dialling with
// adm (nil: directly), and one ClusterClient per client dialling with its
// dialer, each knowing the nodes seeds to start with.
func (r *run) clusterClients(t testing.TB, seeds []string, adm func(ctx context.Context, network, addr string) (net.Conn, error),
	dialers []func(ctx context.Context, network, addr string) (net.Conn, error)) {
	t.Helper()
	r.adminRDB = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Dialer: adm, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
	})
	t.Cleanup(func() { _ = r.adminRDB.Close() })
	for _, d := range dialers {
		r.rdbs = append(r.rdbs, redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        seeds,
			Dialer:       d,
			ReadTimeout:  time.Second,
			WriteTimeout: time.Second,
			MaxRetries:   1,
		}))
	}
}

// keys returns the keys matching pattern: on every master in Cluster.
func (r *run) keys(ctx context.Context, pattern string) ([]string, error) {
	cc, ok := r.adminRDB.(*redis.ClusterClient)
	if !ok {
		return r.adminRDB.Keys(ctx, pattern).Result()
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		ks, err := node.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, ks...)
		mu.Unlock()
		return err
	})
	return all, err
}

// slotMap returns, per slot range, the node that serves it now (CLUSTER
// SLOTS, asked of one node; of another if that one does not answer).
func (r *run) slotMap(t testing.TB) []slotRange {
	t.Helper()
	var slots []redis.ClusterSlot
	var err error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		slots, err = r.adminRDB.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SLOTS: all the suite needs, on every Redis 7
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("chaos: CLUSTER SLOTS: %v", err)
	}
	var m []slotRange
	for _, sl := range slots {
		if len(sl.Nodes) == 0 {
			continue
		}
		for _, s := range r.servers {
			if s.Addr() == sl.Nodes[0].Addr {
				m = append(m, slotRange{sl.Start, sl.End, s})
			}
		}
	}
	return m
}

// slotRange is a range of slots and the master serving it.
type slotRange struct {
	start, end int
	master     *redistest.Server
}

// masters returns the nodes serving slots now, in the order of r.servers.
func (r *run) masters(t testing.TB) []*redistest.Server {
	t.Helper()
	serving := map[*redistest.Server]bool{}
	for _, sr := range r.slotMap(t) {
		serving[sr.master] = true
	}
	var ms []*redistest.Server
	for _, s := range r.servers {
		if serving[s] {
			ms = append(ms, s)
		}
	}
	return ms
}

// masterOfName returns the master serving the slot of primitive name now.
func (r *run) masterOfName(t testing.TB, name string) *redistest.Server {
	t.Helper()
	return r.cl.MasterOf(t, keys.Slot(name))
}

// nodeDo runs one command on the node at addr directly and returns its
// reply as text, or the error's.
func nodeDo(addr string, args ...any) string {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, PoolSize: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprint(v)
}

// proxyOf returns client c's proxy in front of node s.
func (r *run) proxyOf(c int, s *redistest.Server) *redistest.Proxy {
	for i, x := range r.servers {
		if x == s {
			return r.proxies[c][i]
		}
	}
	panic("chaos: " + s.Addr() + " is none of the servers")
}

// readCluster is the sampler's read in Cluster: each primitive in one
// MULTI on the master serving its slot (its keys share the slot; a MULTI
// may not span slots), each with the server's time. An error (a master
// paused, a slot moved since the admin client last learnt the slot map,
// which it then reloads) means no sample.
func readCluster(ctx context.Context, cc *redis.ClusterClient) (*sampleReplies, error) {
	rep := &sampleReplies{locks: make([]*redis.MapStringStringCmd, len(lockNames))}
	for _, n := range append(append([]string(nil), lockNames...), rwName, semName, xsemName) {
		node, err := cc.MasterForKey(ctx, n)
		if err == nil {
			_, err = node.TxPipelined(ctx, func(p redis.Pipeliner) error {
				rep.read(ctx, p, n)
				rep.time = p.Time(ctx)
				return nil
			})
		}
		if err != nil && err != redis.Nil {
			cc.ReloadState(ctx)
			return nil, err
		}
	}
	return rep, nil
}

// read queues the sampler's reads of primitive n on p.
func (rep *sampleReplies) read(ctx context.Context, p redis.Pipeliner, n string) {
	if i := slices.Index(lockNames, n); i >= 0 {
		rep.locks[i] = p.HGetAll(ctx, n)
	}
	switch n {
	case rwName:
		rep.rw = p.HGetAll(ctx, rwName)
		rep.rwKeys = p.Keys(ctx, keys.Tag(rwName)+":*rwlock_timeout*")
	case semName:
		rep.sem = p.Get(ctx, semName)
	case xsemName:
		rep.xsem = p.Get(ctx, xsemName)
		rep.xsemZ = p.ZRangeWithScores(ctx, keys.SemaphoreTimeouts(xsemName), 0, -1)
	}
}
