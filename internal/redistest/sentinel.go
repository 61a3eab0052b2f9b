package redistest

import (
	"context"
	"fmt"
	"net"
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

// Sentinel is a master and one sentinel monitoring it as "mymaster"
// (quorum 1, down-after 5 s), started by StartSentinel. SentinelAddr is
// the sentinel's "127.0.0.1:port".
type Sentinel struct {
	Master       *Server
	SentinelAddr string

	sentinel *Server
}

// StartSentinel starts a redis-server master and a sentinel process
// (redis-sentinel, or "redis-server <conf> --sentinel" if that binary is
// missing) monitoring it, and returns when the sentinel reports the master
// at its address with no down flags. Both processes are killed when the
// test finishes. StartSentinel fails the test if no local redis-server
// binary is installed (a Docker-backed sentinel is not supported) or if the
// sentinel does not report the master within 30 seconds.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	master := Start(t)
	sent := Start(t, func(cfg *config) { cfg.sentinelOf = master.Addr() })
	s := &Sentinel{Master: master, SentinelAddr: sent.Addr(), sentinel: sent}

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
// with exactly the "master" flag (no "disconnected", "s_down", ...).
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
	return nil
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
