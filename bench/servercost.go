package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// The server-cost scenario (issue 41, items 2 and 4): what Redis spends
// per lock+unlock when nothing else is counted, a figure the client's CPU
// and the machine's load hardly move. One goroutine sends the commands of
// each library's lock+unlock itself, in pipelines of serverCostBatch
// acquisitions then serverCostBatch releases, over serverCostNames names
// (a lock is re-used as in many-locks): the round trip, the client's work
// and the socket reads and writes are shared by the whole pipeline, so
// the Redis CPU per op is, nearly, the commands' own. The rows:
//
//   - redisync: lua/lock_acquire_fresh.lua and lua/lock_release_fresh.lua
//     with the arguments the library sends for a lock without a context
//     owner and the default watchdog (30 s lease; deadlines and marks as
//     with go-redis v9.22's default timeouts: a 45 s request lifetime);
//   - evalsha-floor: two EVALSHA of an empty script (return 0) with the
//     same KEYS and ARGV: what any script call with those arguments costs
//     before it runs a command;
//   - redislock: bsm/redislock v0.9.4's obtain script (SET NX PX) and
//     release script (GET, DEL) with its arguments (a 22-character token):
//     the peer's calls, which its AutoPipeline row also sends;
//   - redisson-floor: the floor's two scripts (Redisson's commands).
//
// The libraries take turns (-rounds); each sends -server-cost-ops pairs.
const scServerCost = "server-cost"

func init() { allScenarios = append(allScenarios, scServerCost) }

const (
	serverCostBatch = 32
	serverCostNames = 256
	// serverCostLease is the lease of the redisync and peer locks.
	serverCostLease = 30 * time.Second
	// serverCostTTL is the request lifetime a redisync client derives
	// from go-redis v9.22's default timeouts (request.TTLOf: 4 attempts
	// of 5 s + 5 s + 1 s, and a second).
	serverCostTTL = 45 * time.Second
	// serverCostClient is the client id part of the owner fields.
	serverCostClient = "2k207rw7qve2q"
)

// redislockObtain and redislockRelease are bsm/redislock v0.9.4's
// obtain and release scripts' text.
var (
	redislockObtain = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`)
	redislockRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
)

// redislockToken is the length of redislock's tokens (its value when
// there is no metadata).
const redislockToken = 22

// emptyScript is the evalsha-floor row's script.
var emptyScript = redis.NewScript(`return 0`)

// serverCostLib is one row of the scenario: acquire and release queue
// the commands of lock i's acquisition and release by owner n on p.
type serverCostLib struct {
	name, note       string
	acquire, release func(ctx context.Context, p redis.Pipeliner, lock string, n int64)
}

func serverCostLibs() []serverCostLib {
	fields := func(lock string, n int64) (field, req string) {
		field = serverCostClient + ":" + strconv.FormatInt(n, 10)
		return field, "redisync_request:{" + lock + "}:" + field
	}
	channel := func(lock string) string { return "redisson_lock__channel:{" + lock + "}" }
	// the lock's queue of waiting Clients, which the library's releases
	// name (lua/prelude_wake.lua; its first attempts do not); uncontended,
	// it stays empty
	waiters := func(lock string) string { return "redisync_lock_waiters:{" + lock + "}" }
	waitState := func(lock string) string { return "redisync_lock_wait_state:{" + lock + "}" }
	lease := serverCostLease.Milliseconds()
	freshAcquire := func(lock string, n int64) lua.LockAcquireFreshArgs {
		field, req := fields(lock, n)
		return lua.LockAcquireFreshArgs{Lock: lock, Request: req, LeaseMillis: lease,
			FieldAt: int64(len(req) - len(field) + 1), Deadline: time.Now().Add(serverCostLease - 2*time.Second).UnixMilli()}
	}
	freshRelease := func(lock string, n int64) lua.LockReleaseFreshArgs {
		field, req := fields(lock, n)
		return lua.LockReleaseFreshArgs{Lock: lock, Request: req, Channel: channel(lock),
			Waiters: waiters(lock), WaitState: waitState(lock), Probe: true, AliveMillis: 15000,
			WakePrefix: "redisync_lock_wake:{" + lock + "}:",
			FieldAt:    int64(len(req) - len(field) + 1), Message: "0", Publish: "publish",
			MarkUntil: time.Now().Add(serverCostTTL + time.Second).UnixMilli()}
	}
	return []serverCostLib{
		{
			name: "redisync",
			acquire: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				_, _ = freshAcquire(lock, n).Run(ctx, lua.Direct{Client: p})
			},
			release: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				_, _ = freshRelease(lock, n).Run(ctx, lua.Direct{Client: p})
			},
		},
		{
			name: "evalsha-floor",
			note: "reference, not a lock: two EVALSHA of an empty script with redisync's KEYS and ARGV",
			acquire: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				a := freshAcquire(lock, n)
				p.EvalSha(ctx, emptyScript.Hash(), a.Keys(), a.Args()...)
			},
			release: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				r := freshRelease(lock, n)
				p.EvalSha(ctx, emptyScript.Hash(), r.Keys(), r.Args()...)
			},
		},
		{
			name: "redislock",
			note: "bsm/redislock's obtain and release scripts, sent as its AutoPipeline row sends them",
			acquire: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				p.EvalSha(ctx, redislockObtain.Hash(), []string{lock}, redislockValue(n), redislockToken, strconv.FormatInt(lease, 10))
			},
			release: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				p.EvalSha(ctx, redislockRelease.Hash(), []string{lock}, redislockValue(n))
			},
		},
		{
			name: "redisson-floor",
			note: "reference, not a lock: the floor's scripts (Redisson 3.52's commands)",
			acquire: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				field, _ := fields(lock, n)
				p.EvalSha(ctx, redissonFloorAcquire.Hash(), []string{lock}, lease, field)
			},
			release: func(ctx context.Context, p redis.Pipeliner, lock string, n int64) {
				field, req := fields(lock, n)
				p.EvalSha(ctx, redissonFloorRelease.Hash(), []string{lock, channel(lock), req},
					"0", lease, field, redissonFloorRecordTTL.Milliseconds())
			},
		},
	}
}

// serverCost runs the scenario: a row per selected library.
func (b *bench) serverCost(ctx context.Context) ([]Result, error) {
	var libs []serverCostLib
	for _, l := range serverCostLibs() {
		if b.cfg.library(l.name) {
			libs = append(libs, l)
		}
	}
	if len(libs) == 0 {
		return nil, nil
	}
	rdb, cnt := newClient(b.addr)
	defer rdb.Close()
	for _, s := range []*redis.Script{emptyScript, redislockObtain, redislockRelease, redissonFloorAcquire, redissonFloorRelease,
		lua.Script("lock_acquire_fresh.lua"), lua.Script("lock_release_fresh.lua")} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return nil, fmt.Errorf("load a script: %w", err)
		}
	}
	runs := make([]*serverCostRun, len(libs))
	for i, l := range libs {
		runs[i] = &serverCostRun{b: b, rdb: rdb, lib: l}
		if err := runs[i].pairs(ctx, "warm-up", b.cfg.warmupOps*serverCostBatch/4+serverCostBatch, false); err != nil {
			return nil, err
		}
	}
	n := b.cfg.Rounds
	for r := range n {
		for j := range runs {
			run := runs[(r+j)%len(runs)]
			if err := run.measure(ctx, cnt, strconv.Itoa(r), share(b.cfg.ServerCostOps, r, n)); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Result, 0, len(runs))
	for _, run := range runs {
		out = append(out, run.result())
	}
	return out, nil
}

// serverCostRun is one library's part of the scenario: what it measured
// over the rounds.
type serverCostRun struct {
	b   *bench
	rdb *redis.Client
	lib serverCostLib
	seq int64 // owner numbers given out
	u   usage
	ops int64
	lat []time.Duration
}

// measure sends ops pairs between two snapshots (round names the keys).
func (r *serverCostRun) measure(ctx context.Context, cnt *counter, round string, ops int) error {
	if ops == 0 {
		return nil
	}
	sp, err := beginSpan(ctx, r.b.meter, []*counter{cnt})
	if err != nil {
		return err
	}
	if err := r.pairs(ctx, round, ops, true); err != nil {
		return err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	r.u.add(u)
	r.ops += int64(ops)
	return nil
}

// pairs sends ops lock+unlock pairs in pipelines of serverCostBatch
// acquisitions, each followed by the pipeline of their releases, over
// serverCostNames names; with timed, the time of each such pair of
// pipelines is kept.
func (r *serverCostRun) pairs(ctx context.Context, round string, ops int, timed bool) error {
	names := make([]string, serverCostNames)
	for i := range names {
		names[i] = r.b.key(scServerCost, r.lib.name, round, strconv.Itoa(i))
	}
	for done := 0; done < ops; done += serverCostBatch {
		n := min(serverCostBatch, ops-done)
		start := time.Now()
		for _, step := range []func(context.Context, redis.Pipeliner, string, int64){r.lib.acquire, r.lib.release} {
			p := r.rdb.Pipeline()
			for i := range n {
				step(ctx, p, names[(done+i)%serverCostNames], r.seq+int64(i))
			}
			cmds, _ := p.Exec(ctx) // its error is the first command's: checked below
			if err := serverCostCheck(r.lib.name, cmds); err != nil {
				return err
			}
		}
		r.seq += int64(n)
		if timed {
			r.lat = append(r.lat, time.Since(start))
		}
	}
	return nil
}

// result is the library's row.
func (r *serverCostRun) result() Result {
	res := Result{Library: r.lib.name, Scenario: scServerCost,
		Op: fmt.Sprintf("one lock+unlock's commands, sent by one goroutine in pipelines of %d acquisitions then %d releases over %d names",
			serverCostBatch, serverCostBatch, serverCostNames),
		Latency: fmt.Sprintf("one pipeline of %d acquisitions and its pipeline of releases", serverCostBatch),
		Ops:     r.ops, Seconds: round4(r.u.elapsed.Seconds()), Note: r.lib.note}
	if r.u.elapsed > 0 {
		res.OpsPerSec = f(float64(r.ops) / r.u.elapsed.Seconds())
	}
	res.perOp(r.u, r.ops)
	slices.Sort(r.lat)
	res.quantiles(r.lat)
	return res
}

// redislockValue is a redislock token of owner n: 22 characters, as its
// random base64 tokens.
func redislockValue(n int64) string {
	return fmt.Sprintf("%022d", n)
}

// serverCostCheck returns the first error of a pipeline's replies. (Every
// name is free when its acquisition comes: a batch's releases follow its
// acquisitions, and a batch holds each name at most once.)
func serverCostCheck(lib string, cmds []redis.Cmder) error {
	if len(cmds) == 0 {
		return fmt.Errorf("%s: nothing sent", lib)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) { // the floor's acquisition answers nil
			return fmt.Errorf("%s: %s: %w", lib, c.Name(), err)
		}
	}
	return nil
}
