package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/redisync/redisync/internal/core/bg"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// All is the Settings.Replicas that means every replica
// connected to the primary.
const All = -1

// Settings configures replica acknowledgement.
type Settings struct {
	Replicas int           // replicas to wait for; All: every connected one; 0: off
	Timeout  time.Duration // the longest wait; 0: off
	// Forget is how long a replica that dropped out of its primary's
	// count is still waited for (with All): DefaultForget when 0.
	Forget time.Duration
}

// DefaultForget is how long a replica that dropped out of its primary's
// count (cut off for longer than the primary's repl-timeout) is still
// waited for: 5 minutes, about the longest such a replica stays eligible
// for promotion with the defaults of Sentinel (down-after-milliseconds
// 30 s × 10, plus the time the primary has been down) and of the Cluster
// (cluster-node-timeout 15 s × cluster-replica-validity-factor 10).
const DefaultForget = 5 * time.Minute

// DefaultSettings is Redisson's default: every replica, for at most 1 s.
var DefaultSettings = Settings{Replicas: All, Timeout: time.Second, Forget: DefaultForget}

// on reports whether acknowledgement is wanted.
func (r Settings) on() bool { return r.Replicas != 0 && r.Timeout > 0 }

// Pipeline is one client's script pipeline, its one door to Redis for
// state-changing scripts: its primaries' script queues (pipeline.go), the
// batches (batch.go), and the replicas' acknowledgement of what it wrote
// (acks).
type Pipeline struct {
	rdb       redis.UniversalClient
	bg        *bg.Group
	primaries primaries
	acks      acks
}

// acks is the replica count of each primary and what a batch waits for
// (WAIT): the count a batch waits for (count, countFor, readFirst,
// learn, readReplicas, in counts.go and batch.go), the WAIT it sends
// (ackFor, wake) and what it makes of the reply (settle).
type acks struct {
	sync Settings
	bg   *bg.Group
	log  *slog.Logger
}

// New returns the script pipeline of a client over rdb, waiting for
// replicas as rs says, reading replica counts again in g, logging to log.
// It does no I/O.
func New(rdb redis.UniversalClient, rs Settings, g *bg.Group, log *slog.Logger) *Pipeline {
	if rs.Forget == 0 {
		rs.Forget = DefaultForget
	}
	return &Pipeline{rdb: rdb, bg: g, acks: acks{sync: rs, bg: g, log: log}}
}

// On reports whether the client waits for replicas at all.
func (pl *Pipeline) On() bool { return pl.acks.sync.on() }

// Settings returns what the client waits for.
func (pl *Pipeline) Settings() Settings { return pl.acks.sync }

// Sync is one script call's replica acknowledgement: Eval sets Err when
// the write was not acknowledged by enough replicas in time.
type Sync struct {
	Err  error
	pipe *Pipeline // whose Eval runs the call (Run)
}

// NewSync returns a Sync for one call when the client waits for replicas,
// nil otherwise.
func (pl *Pipeline) NewSync() *Sync {
	if !pl.acks.sync.on() {
		return nil
	}
	return &Sync{pipe: pl}
}

// NewSyncIn is NewSync in storage the caller has already (a Request's, which
// is on the heap anyway): no allocation of its own per call.
func (pl *Pipeline) NewSyncIn(s *Sync) *Sync {
	if !pl.acks.sync.on() {
		return nil
	}
	*s = Sync{pipe: pl}
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
func (pl *Pipeline) Eval(ctx context.Context, sync *Sync, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return pl.EvalCommand(ctx, sync, lua.NewCommand(script, keys, args))
}

// EvalCommand runs a script's command (EVALSHA, EVAL when the server lacks
// the script) through the script queue of the primary that runs it, in a
// batch with the other calls of the client meanwhile (see the package
// doc). With sync not nil, and replicas online on that primary, the batch
// ends with WAIT, and sync.Err is set, wrapping errs.ErrNotReplicated,
// when fewer replicas than wanted acknowledged within the timeout. The
// command returned is the script's; when ctx ends first, one with ctx's
// error (the call goes on in its batch, as a call whose reply was lost).
func (pl *Pipeline) EvalCommand(ctx context.Context, sync *Sync, cmd lua.Command) *redis.Cmd {
	for pause := 20 * time.Millisecond; ; pause *= 2 {
		reply := pl.eval(ctx, sync, cmd)
		// A Cluster's slot that moved (a failover, a migration): the
		// script did not run on the node this client took for its
		// master. Only this call is sent again: without sync through
		// go-redis's cluster client, which follows the redirection
		// itself; with sync to the slot's master once the client knows
		// it (WAIT must go to the node that runs the script).
		cc, cluster := pl.rdb.(*redis.ClusterClient)
		if !cluster || !redirected(reply.Err()) {
			return reply
		}
		if sync == nil {
			return cmd.Run(ctx, pl.rdb)
		}
		if pause > time.Second {
			return reply
		}
		cc.ReloadState(ctx)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return reply
		}
	}
}

// Run implements lua.Runner: a Sync is the runner of the engine for its
// call, which runs a script binding through Pipeline.Eval with it, so an
// acquisition or release waits for the replicas. A pointer in an
// interface needs no allocation, as a struct of a client and a Sync would
// at every call.
func (s *Sync) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.pipe.Eval(ctx, s, script, keys, args...)
}

// RunCommand implements lua.CommandRunner.
func (s *Sync) RunCommand(ctx context.Context, call lua.Command) *redis.Cmd {
	return s.pipe.EvalCommand(ctx, s, call)
}

// plainRunner is the lua.Runner of the engine's calls without replica
// acknowledgement (Pipeline.Runner(nil)): a plain EVALSHA (EVAL when the
// server lacks the script) on the client's connection, through Eval.
type plainRunner Pipeline

// Run implements lua.Runner.
func (p *plainRunner) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return (*Pipeline)(p).Eval(ctx, nil, script, keys, args...)
}

// RunCommand implements lua.CommandRunner.
func (p *plainRunner) RunCommand(ctx context.Context, call lua.Command) *redis.Cmd {
	return (*Pipeline)(p).EvalCommand(ctx, nil, call)
}

// Runner returns the runner of script bindings that goes through Eval with
// sync (nil: no replica acknowledgement). A Sync made by this client runs
// its own call (Sync.Run).
func (pl *Pipeline) Runner(sync *Sync) lua.Runner {
	if sync == nil {
		return (*plainRunner)(pl)
	}
	if sync.pipe == nil {
		sync.pipe = pl
	}
	return sync
}

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

// eval is one try of EvalCommand: the call through its primary's queue.
func (pl *Pipeline) eval(ctx context.Context, sync *Sync, cmd lua.Command) *redis.Cmd {
	node, addr, err := pl.primaryFor(ctx, cmd.FirstKey())
	if err != nil {
		reply := redis.NewCmd(ctx)
		reply.SetErr(err)
		return reply
	}
	if node == nil {
		return cmd.Run(ctx, pl.rdb)
	}
	reply, ackErr := pl.pipelined(ctx, pl.primaries.get(addr), node, newCall(ctx, cmd, sync != nil))
	if sync != nil {
		sync.Err = ackErr
	}
	return reply
}

// primaryFor returns the client of the primary that runs a script on keys,
// and a name for it; nil for a client kind that cannot be pipelined to one
// node (a Ring): then nothing is waited for.
func (pl *Pipeline) primaryFor(ctx context.Context, key string) (*redis.Client, string, error) {
	switch r := pl.rdb.(type) {
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

var (
	_ lua.CommandRunner = (*Sync)(nil)
	_ lua.CommandRunner = (*plainRunner)(nil)
)
