package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// scClusterMasters is the many-locks scenario on a Redis Cluster the tool
// starts, of 1 and of 3 masters (-scale-masters), for redisync and each
// peer over a Cluster client.
const scClusterMasters = "cluster-many-locks"

// cluster is a Redis Cluster of masters only, started by the tool.
type cluster struct {
	nodes []*server
}

func (c *cluster) addrs() []string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.addr)
	}
	return a
}

func (c *cluster) stop() {
	for _, n := range c.nodes {
		n.stop()
	}
}

// startCluster starts n cluster-enabled servers, splits the 16,384 slots
// evenly among them, joins them and waits until each says the cluster is
// ok.
func startCluster(ctx context.Context, n int) (*cluster, error) {
	bin, err := findRedisServer()
	if err != nil {
		return nil, err
	}
	c := &cluster{}
	for range n {
		s, err := startServer(bin, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.join(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// join assigns the slots, introduces the nodes to the first and waits for
// cluster_state:ok with every node known, everywhere.
func (c *cluster) join(ctx context.Context) error {
	n := len(c.nodes)
	for i, s := range c.nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.addr})
		from, to := i*16384/n, (i+1)*16384/n-1
		err := rdb.Do(ctx, "cluster", "addslotsrange", from, to).Err()
		if err == nil && i > 0 {
			host, port, _ := strings.Cut(c.nodes[0].addr, ":")
			err = rdb.ClusterMeet(ctx, host, port).Err()
		}
		_ = rdb.Close()
		if err != nil {
			return fmt.Errorf("cluster setup on %s: %w", s.addr, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := true
		for _, s := range c.nodes {
			rdb := redis.NewClient(&redis.Options{Addr: s.addr})
			info, err := rdb.ClusterInfo(ctx).Result()
			_ = rdb.Close()
			if err != nil || infoField(info, "cluster_state") != "ok" || infoField(info, "cluster_known_nodes") != strconv.Itoa(n) {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the cluster did not reach cluster_state:ok within 30 s")
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// clusterLib is a library of the cluster scenario: open makes a session
// over a Cluster client (rueidislock: its own rueidis client to addrs,
// which finds the cluster by itself).
type clusterLib struct {
	name string
	open func(cc *redis.ClusterClient, cnt *counter, addrs []string) (session, error)
}

func clusterLibraries() []clusterLib {
	return []clusterLib{
		{"redisync", func(cc *redis.ClusterClient, _ *counter, _ []string) (session, error) {
			return &redisyncSession{c: newRedisync(cc), kind: newPlain}, nil
		}},
		{"redsync", func(cc *redis.ClusterClient, _ *counter, _ []string) (session, error) {
			return &redsyncSession{rs: redsync.New(redsyncgoredis.NewPool(cc)), gaveUp: &atomic.Int64{}}, nil
		}},
		{"redislock", func(cc *redis.ClusterClient, _ *counter, _ []string) (session, error) {
			return &redislockSession{c: redislock.New(cc)}, nil
		}},
		{"rueidislock", func(_ *redis.ClusterClient, cnt *counter, addrs []string) (session, error) {
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{
				ClientOption: rueidis.ClientOption{InitAddress: addrs},
				ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
					rc, err := rueidis.NewClient(opt)
					if err != nil {
						return nil, err
					}
					return countingRueidis{Client: rc, cnt: cnt}, nil
				},
			})
			if err != nil {
				return nil, fmt.Errorf("rueidislock: %w", err)
			}
			return &rueidislockSession{l: l}, nil
		}},
	}
}

// clusterCurve runs many-locks (-many-locks-goroutines over
// -many-locks-clients Cluster clients, each goroutine on a lock of its
// own, for -duration) on a Cluster of each size of -scale-masters, for
// redisync and each peer. Redis's figures are summed over the masters;
// the row also gives the busiest master's share of the CPU.
func (b *bench) clusterCurve(ctx context.Context) ([]Result, error) {
	var rows []Result
	for _, masters := range b.cfg.ScaleMasters {
		cl, err := startCluster(ctx, masters)
		if err != nil {
			return rows, err
		}
		fmt.Fprintf(b.log, "bench: cluster of %d masters on %s\n", masters, strings.Join(cl.addrs(), ", "))
		for _, lib := range clusterLibraries() {
			if !b.cfg.library(lib.name) {
				continue
			}
			r, err := b.clusterRun(ctx, cl, lib, masters)
			if err != nil {
				cl.stop()
				return rows, fmt.Errorf("%s %s masters=%d: %w", scClusterMasters, lib.name, masters, err)
			}
			fmt.Fprintf(b.log, "bench: %-18s %-21s masters=%d %s ops/s, Redis CPU %s µs/op (busiest master %.0f%%), client CPU %s µs/op\n",
				scClusterMasters, lib.name, masters, num(r.OpsPerSec, 0), num(r.ServerCPUusPerOp, 1), 100*r.Extra["busiest_master_cpu_share"], num(r.ClientCPUusPerOp, 1))
			rows = append(rows, r)
		}
		cl.stop()
	}
	return rows, nil
}

// clusterRun measures one library on cluster cl.
func (b *bench) clusterRun(ctx context.Context, cl *cluster, lib clusterLib, masters int) (Result, error) {
	goroutines, clients := b.cfg.ManyLocksGoroutines, b.cfg.ManyLocksClients
	cs := &clusterSessions{}
	defer cs.close()
	if err := cs.open(lib, cl, clients); err != nil {
		return Result{}, err
	}
	mutexes := make([]mutex, goroutines)
	for g := range mutexes {
		mutexes[g] = cs.sessions[g%clients].mutex(b.key(lib.name, scClusterMasters, strconv.Itoa(masters), strconv.Itoa(g)))
	}
	if _, _, err := lockPairs(ctx, mutexes, b.cfg.warmup); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	ms, err := beginClusterSpan(ctx, cl, cs.counters)
	defer ms.close()
	if err != nil {
		return Result{}, err
	}
	pairs, lat, err := lockPairs(ctx, mutexes, b.cfg.Duration)
	if err != nil {
		return Result{}, err
	}
	total, busiest, err := ms.end(ctx)
	if err != nil {
		return Result{}, err
	}
	r := curveRow(lib.name, scClusterMasters, masters,
		fmt.Sprintf("one Lock and one Unlock: %d goroutines over %d Cluster clients, each on a lock of its own, on a Cluster of %d master(s)", goroutines, clients, masters),
		"Lock+Unlock")
	r.OpsPerSec = f(float64(pairs) / b.cfg.Duration.Seconds())
	r.Ops, r.Seconds = pairs, round4(b.cfg.Duration.Seconds())
	r.quantiles(lat)
	r.perOp(total, pairs)
	r.Extra["masters"] = float64(masters)
	if total.cpu > 0 {
		r.Extra["busiest_master_cpu_share"] = round4(float64(busiest) / float64(total.cpu))
	}
	r.Extra["redis_cpu_us_per_op_per_master"] = round4(float64(total.cpu) / float64(time.Microsecond) / float64(max(pairs, 1)) / float64(masters))
	return r, nil
}

// clusterSessions are one library's Cluster clients and sessions.
type clusterSessions struct {
	ccs      []*redis.ClusterClient
	counters []*counter
	sessions []session
}

// open opens n Cluster clients of cl and a session of lib over each.
func (cs *clusterSessions) open(lib clusterLib, cl *cluster, n int) error {
	for range n {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.addrs()})
		cnt := &counter{}
		cc.AddHook(cnt)
		cs.ccs = append(cs.ccs, cc)
		cs.counters = append(cs.counters, cnt)
		s, err := lib.open(cc, cnt, cl.addrs())
		if err != nil {
			return err
		}
		cs.sessions = append(cs.sessions, s)
	}
	return nil
}

func (cs *clusterSessions) close() {
	for _, s := range cs.sessions {
		s.close()
	}
	for _, cc := range cs.ccs {
		_ = cc.Close()
	}
}

// clusterSpan measures a span on every master of a Cluster, each through
// a meter of its own.
type clusterSpan struct {
	meters []*redis.Client
	spans  []*span
}

// beginClusterSpan begins a span on every master of cl; the clients'
// requests (counters) are counted once.
func beginClusterSpan(ctx context.Context, cl *cluster, counters []*counter) (*clusterSpan, error) {
	ms := &clusterSpan{}
	for i, addr := range cl.addrs() {
		m := redis.NewClient(clientOptions(addr))
		ms.meters = append(ms.meters, m)
		var cs []*counter
		if i == 0 {
			cs = counters
		}
		sp, err := beginSpan(ctx, m, cs)
		if err != nil {
			return ms, err
		}
		ms.spans = append(ms.spans, sp)
	}
	return ms, nil
}

// end returns the usage summed over the masters (the process's CPU
// once), and the busiest master's CPU time.
func (ms *clusterSpan) end(ctx context.Context) (total usage, busiest time.Duration, err error) {
	for i, sp := range ms.spans {
		u, err := sp.end(ctx)
		if err != nil {
			return total, 0, err
		}
		if i > 0 {
			u.clientCPU = 0
		}
		busiest = max(busiest, u.cpu)
		elapsed := u.elapsed
		total.add(u)
		total.elapsed = elapsed
	}
	return total, busiest, nil
}

func (ms *clusterSpan) close() {
	for _, m := range ms.meters {
		_ = m.Close()
	}
}
