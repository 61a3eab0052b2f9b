package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
)

// The *-replica scenarios run redisync's uncontended, handoff and
// many-locks rows again on a second server the tool starts with one
// replica attached (replica acknowledgement on, its default: one WAIT
// ends each batch of a Client's script pipeline), beside redisync-nosync
// (WithReplicaSync(0, 0)) on the same server. The peers cannot acknowledge
// at all: their rows without replica are the reference. They need the
// servers the tool starts (not -redis).

// replicaScenarios maps each *-replica scenario to the scenario it runs.
var replicaScenarios = map[string]string{
	scUncontendedReplica: scUncontended,
	scHandoffReplica:     scHandoff,
	scManyLocksReplica:   scManyLocks,
}

// wantsReplicated reports whether cfg selects a *-replica scenario.
func (c config) wantsReplicated() bool {
	for sc := range replicaScenarios {
		if c.scenario(sc) {
			return true
		}
	}
	return false
}

// lockRows runs lock scenario sc: a *-replica one on the replicated
// server (redisync only), any other with lockScenario.
func (b *bench) lockRows(ctx context.Context, sc string) ([]Result, error) {
	if _, ok := replicaScenarios[sc]; !ok {
		return b.lockScenario(ctx, sc)
	}
	if !b.cfg.library("redisync") {
		return nil, nil
	}
	return b.replicaScenario(ctx, sc, b.replicaAddr)
}

// replicaScenario runs *-replica scenario sc on the replicated server at
// addr: the rows of its base scenario for redisync, named sc.
func (b *bench) replicaScenario(ctx context.Context, sc, addr string) ([]Result, error) {
	if addr == "" {
		fmt.Fprintf(b.log, "bench: %s left out: it needs the servers the tool starts (no -redis)\n", sc)
		return nil, nil
	}
	rb := &bench{cfg: b.cfg, addr: addr, meter: redis.NewClient(clientOptions(addr)), log: b.log,
		prefix: b.prefix, replicated: true}
	defer rb.meter.Close()
	defer rb.cleanup()
	rs, err := rb.lockScenario(ctx, replicaScenarios[sc])
	for i := range rs {
		rs[i].Scenario = sc
		rs[i].Op += ", on a primary with one replica"
	}
	return rs, err
}

// libraries returns the contenders of lock scenario sc: on the replicated
// server redisync with and without acknowledgement, else lockLibraries.
func (b *bench) libraries(sc string) []library {
	if !b.replicated {
		return lockLibraries(sc)
	}
	return []library{
		{
			name:         "redisync",
			wait:         "pub/sub (default); replica acknowledgement on (default)",
			waitingAfter: 2,
			open:         openRedisync(newPlain),
		},
		{
			name:         "redisync-nosync",
			wait:         "pub/sub (default), WithReplicaSync(0, 0)",
			waitingAfter: 2,
			open: func(c conn, _ *atomic.Int64) (session, error) {
				return &redisyncSession{c: newRedisync(c.rdb, redisync.WithReplicaSync(0, 0)), kind: newPlain}, nil
			},
		},
	}
}

// autoPipelinedRedislock is redislock over go-redis's AutoPipeline(), which
// users could set up themselves: the concurrent calls of a client go
// together in pipelines. Not a peer in the targets (its protocol, SET NX,
// is simpler than Redisson's).
func autoPipelinedRedislock() library {
	return library{
		name: "redislock-autopipeline",
		note: "redislock over go-redis's AutoPipeline() (experimental in go-redis v9.22)",
		open: func(c conn, _ *atomic.Int64) (session, error) {
			ap, err := c.rdb.AutoPipeline()
			if err != nil {
				return nil, err
			}
			return &autoPipelineSession{redislockSession: redislockSession{c: redislock.New(ap)}, ap: ap}, nil
		},
		waitingAfter: 1,
	}
}

// autoPipelineSession is a redislock session over an AutoPipeliner, which
// it closes.
type autoPipelineSession struct {
	redislockSession
	ap *redis.AutoPipeliner
}

func (s *autoPipelineSession) mutex(key string) mutex {
	return &redislockMutex{s: &s.redislockSession, key: key}
}
func (s *autoPipelineSession) close() { _ = s.ap.Close() }

// pipelines holds every redisync client of the lock rows, whose script
// pipelines' batches pipelineTotals sums.
var pipelines struct {
	mu      sync.Mutex
	clients []*redisync.Client
}

// newRedisync returns a redisync client over rdb, counted by
// pipelineTotals.
func newRedisync(rdb redis.UniversalClient, opts ...redisync.Option) *redisync.Client {
	c := redisync.New(rdb, opts...)
	pipelines.mu.Lock()
	pipelines.clients = append(pipelines.clients, c)
	pipelines.mu.Unlock()
	return c
}

// pipelineTotals returns the batches the redisync clients of the lock rows
// sent through their script pipelines so far, and the calls they carried.
func pipelineTotals() (batches, calls int64) {
	pipelines.mu.Lock()
	defer pipelines.mu.Unlock()
	for _, c := range pipelines.clients {
		st := (*core.Client)(c).Pipeline().Stats()
		batches += int64(st.Batches)
		calls += int64(st.Calls)
	}
	return batches, calls
}

// isAutoPipelined reports whether lib is the AutoPipeline() row, which no
// target takes as a peer.
func isAutoPipelined(lib string) bool { return strings.HasSuffix(lib, "-autopipeline") }
