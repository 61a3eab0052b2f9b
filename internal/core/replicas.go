package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// Replica acknowledgement (Redisson's checkLockSyncedSlaves).
//
// Redis replicates asynchronously: a write the primary acknowledged can be
// lost when the primary dies before a replica has it, and the promoted
// replica then knows nothing of it. So the acquisitions and releases of
// locks and semaphores wait, in the same round trip as their script and on
// the same connection, until the primary's replicas have the write: the
// script and WAIT <replicas> <timeout> go in one pipeline to the primary
// that runs the script (on a Cluster, the master of the keys' slot: WAIT
// has no key). When the primary has no replica connected nothing is
// waited for and nothing extra is sent; the number of replicas of each
// primary is read with INFO replication the first time and kept, read
// again in the background every replicaProbe.
//
// Eval reports a write not acknowledged in time in Sync.Err, apart from
// the script's own result: the script did take effect on the primary. An
// acquisition then undoes what it took (its callers do), a release returns
// the error after its bookkeeping.

// ReplicasAll is the ReplicaSync.Replicas that means every replica
// connected to the primary.
const ReplicasAll = -1

// ReplicaSync configures replica acknowledgement.
type ReplicaSync struct {
	Replicas int           // replicas to wait for; ReplicasAll: every connected one; 0: off
	Timeout  time.Duration // the longest wait; 0: off
}

// DefaultReplicaSync is Redisson's default: every replica, for at most 1 s.
var DefaultReplicaSync = ReplicaSync{Replicas: ReplicasAll, Timeout: time.Second}

// on reports whether acknowledgement is wanted.
func (r ReplicaSync) on() bool { return r.Replicas != 0 && r.Timeout > 0 }

// replicaProbe is how often the number of replicas of a primary is read
// again.
const replicaProbe = time.Second

// Sync is one script call's replica acknowledgement: Eval sets Err when
// the write was not acknowledged by enough replicas in time.
type Sync struct {
	Err error
	c   *Client // whose Eval runs the call (Run)
}

// NewSync returns a Sync for one call when the client waits for replicas,
// nil otherwise.
func (c *Client) NewSync() *Sync {
	if !c.opts.ReplicaSync.on() {
		return nil
	}
	return &Sync{c: c}
}

// newSyncIn is NewSync in storage the caller has already (an Op's, which
// is on the heap anyway): no allocation of its own per call.
func (c *Client) newSyncIn(s *Sync) *Sync {
	if !c.opts.ReplicaSync.on() {
		return nil
	}
	*s = Sync{c: c}
	return s
}

// SyncErr returns the replica acknowledgement error of s, nil for a nil s.
func (s *Sync) SyncErr() error {
	if s == nil {
		return nil
	}
	return s.Err
}

// Eval runs script (EVALSHA, EVAL when the server lacks it) with keys and
// args: EvalCommand of its command.
func (c *Client) Eval(ctx context.Context, sync *Sync, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return c.EvalCommand(ctx, sync, lua.NewCommand(script, keys, args))
}

// EvalCommand runs a script's command (EVALSHA, EVAL when the server lacks
// the script). With sync not nil, and replicas connected to the primary
// that runs it, it sends WAIT in the same pipeline and sets sync.Err,
// wrapping errs.ErrNotReplicated, when fewer replicas than wanted acknowledged
// within the timeout. The command returned is the script's.
func (c *Client) EvalCommand(ctx context.Context, sync *Sync, call lua.Command) *redis.Cmd {
	if sync == nil {
		return call.Run(ctx, c.rdb)
	}
	for pause := 20 * time.Millisecond; ; pause *= 2 {
		cmd := c.evalSynced(ctx, sync, call)
		// A Cluster's slot that moved (a failover, a migration): the
		// script did not run on the node this client took for its
		// master. go-redis's cluster client follows the redirection
		// itself; sent to one node, the pipeline must be sent again once
		// the client knows the slot's new master.
		cc, cluster := c.rdb.(*redis.ClusterClient)
		if !cluster || !redirected(cmd.Err()) || pause > time.Second {
			return cmd
		}
		cc.ReloadState(ctx)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return cmd
		}
	}
}

// Run implements lua.Runner: a Sync is the runner of the engine for its
// call, which runs a script binding through Client.Eval with it, so an
// acquisition or release waits for the replicas. A pointer in an
// interface needs no allocation, as a struct of a client and a Sync would
// at every call.
func (s *Sync) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.c.Eval(ctx, s, script, keys, args...)
}

// RunCommand implements lua.CommandRunner.
func (s *Sync) RunCommand(ctx context.Context, call lua.Command) *redis.Cmd {
	return s.c.EvalCommand(ctx, s, call)
}

// plainRunner is the lua.Runner of the engine's calls without replica
// acknowledgement (Client.Runner(nil)): a plain EVALSHA (EVAL when the
// server lacks the script) on the client's connection, through Eval.
type plainRunner Client

// Run implements lua.Runner.
func (r *plainRunner) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return (*Client)(r).Eval(ctx, nil, script, keys, args...)
}

// RunCommand implements lua.CommandRunner.
func (r *plainRunner) RunCommand(ctx context.Context, call lua.Command) *redis.Cmd {
	return (*Client)(r).EvalCommand(ctx, nil, call)
}

// Runner returns the runner of script bindings that goes through Eval with
// sync (nil: no replica acknowledgement). A Sync made by this client runs
// its own call (Sync.Run).
func (c *Client) Runner(sync *Sync) lua.Runner {
	if sync == nil {
		return (*plainRunner)(c)
	}
	if sync.c == nil {
		sync.c = c
	}
	return sync
}

// Direct returns the runner of script bindings that runs them on the
// client's connection with (*redis.Script).Run, for the scripts that never
// wait for replicas.
func (c *Client) Direct() lua.Direct { return lua.Direct{Client: c.rdb} }

// redirected reports whether err says that the node a synced script was
// sent to is not (or no longer) the master of its slot, and the script did
// not run there: a redirection (MOVED, ASK), a cluster not ready, or a
// node that refused the connection (killed, its replica promoted).
func redirected(err error) bool {
	if err == nil {
		return false
	}
	for _, p := range []string{"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// evalSynced is one try of EvalCommand with sync.
func (c *Client) evalSynced(ctx context.Context, sync *Sync, call lua.Command) *redis.Cmd {
	node, addr, err := c.primaryFor(ctx, call.FirstKey())
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	connected := 0
	if node != nil {
		connected, err = c.replicasOf(ctx, node, addr)
		if err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
	}
	if connected == 0 {
		return call.Run(ctx, c.rdb)
	}
	want := c.opts.ReplicaSync.Replicas
	if want == ReplicasAll {
		want = connected
	}
	cmd, acked := c.evalWait(ctx, node, call, want)
	if cmd.Err() != nil {
		return cmd
	}
	if acked.Err() != nil {
		sync.Err = fmt.Errorf("%w: WAIT failed: %w", errs.ErrNotReplicated, acked.Err())
	} else if n := acked.Val(); n < int64(want) {
		sync.Err = fmt.Errorf("%w: %d of %d replicas acknowledged within %v", errs.ErrNotReplicated, n, want, c.opts.ReplicaSync.Timeout)
	}
	return cmd
}

// evalWait runs the script's command and WAIT want in one pipeline on
// node, loading the script when the server does not have it.
func (c *Client) evalWait(ctx context.Context, node *redis.Client, call lua.Command, want int) (*redis.Cmd, *redis.IntCmd) {
	ms := Millis(c.opts.ReplicaSync.Timeout)
	run := func(cmd *redis.Cmd) (*redis.Cmd, *redis.IntCmd) {
		pipe := node.Pipeline()
		_ = pipe.Process(ctx, cmd)
		acked := redis.NewIntCmd(ctx, "wait", want, ms)
		_ = pipe.Process(ctx, acked)
		_, _ = pipe.Exec(ctx)
		return cmd, acked
	}
	cmd, acked := run(call.EvalSha(ctx))
	if lua.NoScript(cmd.Err()) {
		cmd, acked = run(call.Eval(ctx))
	}
	return cmd, acked
}

// primaryFor returns the client of the primary that runs a script on keys,
// and a name for it; nil for a client kind that cannot be pipelined to one
// node (a Ring): then nothing is waited for.
func (c *Client) primaryFor(ctx context.Context, key string) (*redis.Client, string, error) {
	switch r := c.rdb.(type) {
	case *redis.Client:
		return r, "", nil
	case *redis.ClusterClient:
		node, err := r.MasterForKey(ctx, key)
		if err != nil {
			return nil, "", err
		}
		return node, node.Options().Addr, nil
	}
	return nil, "", nil
}

// replicaCounts keeps the number of replicas connected to each primary.
type replicaCounts struct {
	mu sync.Mutex
	m  map[string]*replicaCount
}

type replicaCount struct {
	n       int
	next    time.Time // when to read it again
	reading bool
}

// replicasOf returns the number of replicas connected to the primary node
// (named addr): read synchronously the first time, then again in the
// background every replicaProbe.
func (c *Client) replicasOf(ctx context.Context, node *redis.Client, addr string) (int, error) {
	rc := &c.replicas
	rc.mu.Lock()
	e := rc.m[addr]
	if e != nil {
		n := e.n
		if !e.reading && time.Now().After(e.next) {
			e.reading = c.bg.Background(replicaReadTimeout, func(ctx context.Context) { c.readReplicas(ctx, node, addr) })
		}
		rc.mu.Unlock()
		return n, nil
	}
	rc.mu.Unlock()
	n, err := connectedReplicas(ctx, node)
	if err != nil && !errs.IsReply(err) {
		return 0, fmt.Errorf("reading the primary's replicas: %w", err)
	}
	// A server that refuses INFO replication (a Redis-compatible server
	// without replication) has no replica to wait for.
	rc.mu.Lock()
	if rc.m == nil {
		rc.m = make(map[string]*replicaCount)
	}
	if rc.m[addr] == nil {
		rc.m[addr] = &replicaCount{n: n, next: time.Now().Add(replicaProbe)}
	}
	rc.mu.Unlock()
	return n, nil
}

// readReplicas reads the number of replicas of node again.
func (c *Client) readReplicas(ctx context.Context, node *redis.Client, addr string) {
	n, err := connectedReplicas(ctx, node)
	rc := &c.replicas
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e := rc.m[addr]
	e.reading = false
	e.next = time.Now().Add(replicaProbe)
	if err != nil && !errs.IsReply(err) {
		c.log.Debug("redisync: could not read the primary's replicas; keeping the last count", "primary", addr, "err", err)
		return
	}
	e.n = n
}

// connectedReplicas counts the replicas of INFO replication that are
// online: those still loading their first copy of the data set (a full
// synchronisation) cannot acknowledge anything yet, and are not counted
// until they can.
func connectedReplicas(ctx context.Context, node *redis.Client) (int, error) {
	info, err := node.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "slave"); ok && strings.Contains(rest, ":") &&
			strings.Contains(rest, "state=online") {
			if _, err := strconv.Atoi(rest[:strings.IndexByte(rest, ':')]); err == nil {
				n++
			}
		}
	}
	return n, nil
}

var (
	_ lua.CommandRunner = (*Sync)(nil)
	_ lua.CommandRunner = (*plainRunner)(nil)
)

// replicaReadTimeout bounds one reading of a primary's replica count
// (readReplicas), in the background.
const replicaReadTimeout = 5 * time.Second
