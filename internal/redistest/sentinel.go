package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMasterName is the master name the sentinel of StartSentinel
// monitors.
const SentinelMasterName = "mymaster"

// sentinelTimeout bounds how long StartSentinel waits for the sentinel to
// report the master.
const sentinelTimeout = 30 * time.Second

// Sentinel is a master, its replicas and one sentinel monitoring it as
// "mymaster" (quorum 1, down-after 5 s), started by StartSentinel.
// SentinelAddr is the sentinel's "127.0.0.1:port". Master is the current
// master and Replicas the others: Failover and KillMaster swap them.
type Sentinel struct {
	Master       *Server
	Replicas     []*Server
	SentinelAddr string

	sentinel *Server
}

// SentinelOption configures StartSentinel.
type SentinelOption func(*sentinelConfig)

type sentinelConfig struct {
	replicas int
	args     []string
}

// SentinelReplicas gives the master n replicas (n >= 0), so that the
// sentinel can fail over (Sentinel.Failover). The default is no replicas.
func SentinelReplicas(n int) SentinelOption {
	return func(c *sentinelConfig) { c.replicas = n }
}

// SentinelServerArgs gives the master and every replica these extra
// redis-server arguments, as WithArgs does for Start (for example
// "--appendonly", "yes"). They stay across Restart and KillMaster. The
// default is none.
func SentinelServerArgs(args ...string) SentinelOption {
	return func(c *sentinelConfig) { c.args = append(c.args, args...) }
}

// StartSentinel starts a redis-server master, the replicas
// SentinelReplicas asks for, and a sentinel process (redis-sentinel, or
// "redis-server <conf> --sentinel" if that binary is missing) monitoring
// the master, and returns when the sentinel reports the master at its
// address with no down flags and every replica as a replica whose link to
// the master is up. The processes are killed when the test finishes.
// StartSentinel fails the test if no local redis-server binary is installed
// (a Docker-backed sentinel is not supported) or if the sentinel does not
// report that within 30 seconds.
func StartSentinel(t testing.TB, opts ...SentinelOption) *Sentinel {
	t.Helper()
	var cfg sentinelConfig
	for _, o := range opts {
		o(&cfg)
	}
	master := Start(t, WithArgs(cfg.args...))
	s := &Sentinel{Master: master}
	for range cfg.replicas {
		r := Start(t, WithArgs(cfg.args...))
		r.Do(t, "REPLICAOF", master.host, master.port)
		s.Replicas = append(s.Replicas, r)
	}
	// Replicas whose link is up before the sentinel starts are found by its
	// first INFO of the master, not ten seconds later.
	for _, r := range s.Replicas {
		waitFor(t, r.Addr()+": link to the master", func() error { return r.linkUp() })
	}
	sent := Start(t, func(cfg *config) { cfg.sentinelOf = master.Addr() })
	s.SentinelAddr, s.sentinel = sent.Addr(), sent

	deadline := time.Now().Add(sentinelTimeout)
	for {
		err := s.check()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: sentinel %s did not report master %s within %v: %v\nsentinel output:\n%s",
				s.SentinelAddr, master.Addr(), sentinelTimeout, err, sent.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check returns nil when the sentinel reports the master at its address
// with exactly the "master" flag (no "disconnected", "s_down", ...), and
// each replica as a replica whose link to the master is ok.
func (s *Sentinel) check() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := redis.NewSentinelClient(&redis.Options{Addr: s.SentinelAddr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(ctx, SentinelMasterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	if len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != s.Master.Addr() {
		return fmt.Errorf("sentinel reports master at %v", addr)
	}
	info, err := c.Master(ctx, SentinelMasterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	if info["flags"] != "master" {
		return fmt.Errorf("sentinel reports master flags %q", info["flags"])
	}
	replicas, err := c.Replicas(ctx, SentinelMasterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	ok := map[string]bool{}
	for _, r := range replicas {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			ok[net.JoinHostPort(r["ip"], r["port"])] = true
		}
	}
	for _, r := range s.Replicas {
		if !ok[r.Addr()] {
			return fmt.Errorf("sentinel does not report replica %s as a replica with its link up (it reports %v)", r.Addr(), replicas)
		}
	}
	return nil
}

// Failover has the sentinel promote a replica (SENTINEL FAILOVER) and
// returns the new master once the sentinel reports it, the new master's
// role is master, the former master replicates it (the sentinel has
// reconfigured it, which kills its clients' connections) and the sentinel
// sees every replica's link up. Master and Replicas are updated. Failover
// fails the test if there is no replica or it takes more than 30 seconds.
func (s *Sentinel) Failover(t testing.TB) *Server {
	t.Helper()
	if len(s.Replicas) == 0 {
		t.Fatal("redistest: Sentinel.Failover needs a replica: start with SentinelReplicas(1)")
	}
	old := s.Master
	s.sentinel.Do(t, "SENTINEL", "FAILOVER", SentinelMasterName)
	next := s.waitPromoted(t)
	waitFor(t, "former master to replicate the new one", old.linkUp)
	replicas := []*Server{old}
	for _, r := range s.Replicas {
		if r != next {
			replicas = append(replicas, r)
		}
	}
	s.Master, s.Replicas = next, replicas
	waitFor(t, "sentinel to settle after the failover", s.check)
	return next
}

// KillMaster kills the master with SIGKILL, runs whileDown (if not nil:
// the replicas then hold exactly what a promotion can keep, and nothing
// more reaches them), has the sentinel promote a replica at once
// (SENTINEL FAILOVER, re-sent while the sentinel answers an error such as
// INPROG or NOGOODSLAVE), then restarts the former master on its port and
// directory (with whatever it persisted, if SentinelServerArgs turned
// persistence on) and makes it a replica of the new master (REPLICAOF,
// which discards its data for the new master's). It returns the new
// master once the sentinel reports it, its role is master, the former
// master's link to it is up and the sentinel sees every replica's link up.
// Master and Replicas are updated. Writes the replica did not have when
// the master died are lost, as in production. KillMaster fails the test
// if there is no replica or it takes more than 30 seconds.
func (s *Sentinel) KillMaster(t testing.TB, whileDown func()) *Server {
	t.Helper()
	if len(s.Replicas) == 0 {
		t.Fatal("redistest: Sentinel.KillMaster needs a replica: start with SentinelReplicas(1)")
	}
	old := s.Master
	old.Stop(t)
	if whileDown != nil {
		whileDown()
	}
	waitFor(t, "SENTINEL FAILOVER accepted", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.sentinel.do(ctx, "SENTINEL", "FAILOVER", SentinelMasterName)
		return err
	})
	next := s.waitPromoted(t)
	old.Restart(t)
	old.replicaOf(t, next)
	waitFor(t, "former master to replicate the new one", old.linkUp)
	replicas := []*Server{old}
	for _, r := range s.Replicas {
		if r != next {
			replicas = append(replicas, r)
		}
	}
	s.Master, s.Replicas = next, replicas
	waitFor(t, "sentinel to settle after the failover", s.check)
	return next
}

// waitPromoted waits until the sentinel reports one of the replicas as
// the master and that replica's role is master, and returns it.
func (s *Sentinel) waitPromoted(t testing.TB) *Server {
	t.Helper()
	var next *Server
	waitFor(t, "sentinel failover", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := s.sentinel.do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMasterName)
		if err != nil {
			return err
		}
		a, _ := v.([]any)
		if len(a) != 2 {
			return fmt.Errorf("sentinel reports master %v", v)
		}
		addr := net.JoinHostPort(fmt.Sprint(a[0]), fmt.Sprint(a[1]))
		next = nil
		for _, r := range s.Replicas {
			if r.Addr() == addr {
				next = r
			}
		}
		if next == nil {
			return fmt.Errorf("sentinel still reports master %s", addr)
		}
		if r, err := next.do(ctx, "ROLE"); err != nil {
			return err
		} else if r, _ := r.([]any); len(r) == 0 || r[0] != "master" {
			return fmt.Errorf("%s is not master yet", addr)
		}
		return nil
	})
	return next
}

// RestartReplica kills replica i (an index into Replicas) with SIGKILL
// and starts it again on its port and directory, empty if empty (its
// persisted data deleted first) or with whatever it persisted, then makes
// it a replica of the master again (REPLICAOF) and returns once its link
// to the master is up and the sentinel reports it so. Meanwhile the
// master has one replica fewer connected. RestartReplica fails the test
// if i is out of range or it takes more than 30 seconds.
func (s *Sentinel) RestartReplica(t testing.TB, i int, empty bool) {
	t.Helper()
	if i < 0 || i >= len(s.Replicas) {
		t.Fatalf("redistest: Sentinel.RestartReplica(%d) with %d replicas", i, len(s.Replicas))
	}
	r := s.Replicas[i]
	if empty {
		r.Stop(t)
		r.wipe(t)
	}
	r.Restart(t)
	r.replicaOf(t, s.Master)
	waitFor(t, "restarted replica's link to the master", r.linkUp)
	waitFor(t, "sentinel to see the restarted replica", s.check)
}

// replicaOf makes s a replica of master (REPLICAOF), re-sent while s
// refuses it (a server just restarted answers LOADING while it reads its
// append-only file), for at most 30 seconds.
func (s *Server) replicaOf(t testing.TB, master *Server) {
	t.Helper()
	waitFor(t, "REPLICAOF "+master.Addr()+" on "+s.Addr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.do(ctx, "REPLICAOF", master.host, strconv.Itoa(master.port))
		return err
	})
}

// linkUp returns nil when the server is a replica whose link to its master
// is up.
func (s *Server) linkUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.do(ctx, "INFO", "replication")
	if err != nil {
		return err
	}
	info, _ := v.(string)
	if !strings.Contains(info, "role:slave\r\n") || !strings.Contains(info, "master_link_status:up\r\n") {
		return fmt.Errorf("%s is not a replica with its link up", s.Addr())
	}
	return nil
}

// waitFor polls check every 100 ms until it returns nil, and fails the
// test with its last error if that takes longer than sentinelTimeout.
func waitFor(t testing.TB, what string, check func() error) {
	t.Helper()
	timeout := sentinelTimeout
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: %s: not done within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// for master "mymaster" through the sentinel, with go-redis's default
// options. It is closed when the test finishes.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    SentinelMasterName,
		SentinelAddrs: []string{s.SentinelAddr},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
