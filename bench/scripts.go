package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// scScripts is the per-script scenario: what each main script costs Redis
// per call.
const scScripts = "scripts"

// ScriptCost is one script's cost per call, from the scripts scenario.
//
// Redis's INFO commandstats counts every script under EVALSHA (or EVAL),
// whichever script it was, so a per-script figure needs calls of one
// script alone between two snapshots. The scenario makes them: for each
// operation (a primitive's acquisition or release, as the library calls
// it, or one of redisson-floor's two scripts) it prepares -script-calls
// fresh names (split over -rounds turns, the operations taking turns as
// the libraries do in the lock scenarios), then, between two snapshots,
// acquires each of them once, and, between two more, releases each once.
// A hook on the client records which script every EVALSHA was (by its
// SHA1), so each span's EVALSHA calls and time are known to be that one
// script's; a span in which the client sent another script too (a
// watchdog renewal falling into it, say) is kept, with that script named
// in the note. Each acquisition finds its name free and each release a
// hold of one, as in the uncontended row. With -replica, redisync's
// clients acknowledge through the replica (their default): the note names
// the WAIT each call adds, and the server's CPU includes the propagation.
type ScriptCost struct {
	// Library is "redisync" or "redisson-floor".
	Library string `json:"library"`
	// Script is the script's file in package lua ("lock_acquire_fresh.lua"),
	// or redisson-floor's "acquire" or "release".
	Script string `json:"script"`
	// Operation is the call that ran it.
	Operation string `json:"operation"`
	// Calls is the EVALSHA (and EVAL) calls Redis counted.
	Calls int64 `json:"calls"`
	// ExecUsPerCall is INFO commandstats' execution time of those calls
	// (usec of cmdstat_evalsha and cmdstat_eval) per call, in
	// microseconds: the script's run, the commands it called included.
	// Redis measures it as elapsed time around the call, so on a loaded
	// machine it also holds time the server was not running, which
	// ServerCPUusPerCall does not.
	ExecUsPerCall *float64 `json:"exec_us_per_call"`
	// ServerCPUusPerCall is the redis-server process's CPU time (user +
	// sys, INFO cpu) per call, in microseconds: the script's run plus
	// reading the request and writing the reply.
	ServerCPUusPerCall *float64 `json:"server_cpu_us_per_call"`
	// CommandsPerCall is the commands the script called per call (from
	// commandstats, less the EVALSHA itself and any command the client
	// sent on its own), and Commands the same by name.
	CommandsPerCall *float64           `json:"commands_per_call"`
	Commands        map[string]float64 `json:"commands_per_call_by_name,omitempty"`
	// BytesInPerCall and BytesOutPerCall are the request's and the
	// reply's bytes (total_net_input_bytes and total_net_output_bytes
	// deltas, less the measurement's INFO traffic).
	BytesInPerCall  *float64 `json:"bytes_in_per_call"`
	BytesOutPerCall *float64 `json:"bytes_out_per_call"`
	Note            string   `json:"note,omitempty"`
}

// scriptNames maps the SHA1 of every script the tool may see to its name:
// package lua's, by file, and redisson-floor's two.
var scriptNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, n := range lua.Names() {
		m[lua.Script(n).Hash()] = n
	}
	m[redissonFloorAcquire.Hash()] = "acquire"
	m[redissonFloorRelease.Hash()] = "release"
	return m
})

// scriptTally is a go-redis hook that counts what one client sends by
// script (EVALSHA by its SHA1, EVAL by its source's) and, for everything
// else but INFO, by command name.
type scriptTally struct {
	mu      sync.Mutex
	scripts map[string]int64
	evals   int64 // EVAL calls (a script sent whole after NOSCRIPT)
	other   map[string]int64
}

func newScriptTally() *scriptTally {
	return &scriptTally{scripts: map[string]int64{}, other: map[string]int64{}}
}

func (t *scriptTally) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *scriptTally) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.note(cmd)
		return next(ctx, cmd)
	}
}

func (t *scriptTally) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			t.note(cmd)
		}
		return next(ctx, cmds)
	}
}

func (t *scriptTally) note(cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	args := cmd.Args()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case (name == "evalsha" || name == "evalsha_ro") && len(args) > 1:
		sha := strings.ToLower(fmt.Sprint(args[1]))
		t.scripts[scriptName(sha)]++
	case (name == "eval" || name == "eval_ro") && len(args) > 1:
		sum := sha1.Sum([]byte(fmt.Sprint(args[1])))
		t.scripts[scriptName(hex.EncodeToString(sum[:]))]++
		t.evals++
	case name != "info":
		t.other[name]++
	}
}

// scriptName returns the name of the script with SHA1 sha.
func scriptName(sha string) string {
	if n, ok := scriptNames()[sha]; ok {
		return n
	}
	return "unknown script " + sha
}

// take returns the counts since the last take and starts again.
func (t *scriptTally) take() (scripts map[string]int64, evals int64, other map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	scripts, evals, other = t.scripts, t.evals, t.other
	t.scripts, t.evals, t.other = map[string]int64{}, 0, map[string]int64{}
	return scripts, evals, other
}

// scriptItem is one name of an operation, prepared: its acquisition and
// its release.
type scriptItem struct {
	acquire, release func(ctx context.Context) error
}

// scriptOp is one operation of the scripts scenario: a primitive's
// acquisition and release (or redisson-floor's), over a client of its own.
type scriptOp struct {
	library string // "redisync" or "redisson-floor"
	id      string // part of its keys' names
	// acquireBy and releaseBy say what runs the two scripts.
	acquireBy, releaseBy string
	// prepare makes a handle on a new name (outside the measurement: a
	// semaphore's permits are set here).
	prepare func(ctx context.Context, c *redisync.Client, rdb *redis.Client, name string) (scriptItem, error)

	rdb     *redis.Client
	cnt     *counter
	tally   *scriptTally
	client  *redisync.Client
	session session // redisson-floor's
	acq     scriptSpan
	rel     scriptSpan
}

// scriptSpan accumulates one step's measurements over the rounds.
type scriptSpan struct {
	u       usage
	scripts map[string]int64
	evals   int64
	other   map[string]int64
}

func (s *scriptSpan) add(u usage, scripts map[string]int64, evals int64, other map[string]int64) {
	s.u.add(u)
	if s.scripts == nil {
		s.scripts, s.other = map[string]int64{}, map[string]int64{}
	}
	for k, n := range scripts {
		s.scripts[k] += n
	}
	for k, n := range other {
		s.other[k] += n
	}
	s.evals += evals
}

// scriptOps returns the operations of the scenario: redisync's lock
// (without and with a context owner), fair lock, read-write lock (write
// and read), counted semaphore and permit-expirable semaphore, each with
// its defaults, and redisson-floor.
func scriptOps() []*scriptOp {
	lockItem := func(m mutex) scriptItem {
		return scriptItem{acquire: m.Lock, release: m.Unlock}
	}
	return []*scriptOp{
		{
			library: "redisync", id: "lock",
			acquireBy: "rlock.Lock, no context owner (as in the uncontended row)",
			releaseBy: "rlock.Unlock, no context owner",
			prepare: func(_ context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				return lockItem(rlock.New(c, name)), nil
			},
		},
		{
			library: "redisync", id: "lock-owner",
			acquireBy: "rlock.Lock with a context owner (redisync.WithOwner)",
			releaseBy: "rlock.Unlock with a context owner",
			prepare: func(ctx context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				// One owner per name, acquiring and releasing.
				l := rlock.New(c, name)
				tok, _ := redisync.OwnerToken(redisync.WithOwner(ctx))
				return scriptItem{
					acquire: func(ctx context.Context) error { return l.Lock(redisync.WithOwnerToken(ctx, tok)) },
					release: func(ctx context.Context) error { return l.Unlock(redisync.WithOwnerToken(ctx, tok)) },
				}, nil
			},
		},
		{
			library: "redisync", id: "fair",
			acquireBy: "rlock.FairLock.Lock, no context owner",
			releaseBy: "rlock.FairLock.Unlock, no context owner",
			prepare: func(_ context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				return lockItem(rlock.NewFair(c, name)), nil
			},
		},
		{
			library: "redisync", id: "rwlock-write",
			acquireBy: "rwlock.RWLock.Lock, no context owner",
			releaseBy: "rwlock.RWLock.Unlock, no context owner",
			prepare: func(_ context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				return lockItem(rwlock.New(c, name)), nil
			},
		},
		{
			library: "redisync", id: "rwlock-read",
			acquireBy: "rwlock.RWLock.RLock, no context owner",
			releaseBy: "rwlock.RWLock.RUnlock, no context owner",
			prepare: func(_ context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				rw := rwlock.New(c, name)
				return scriptItem{acquire: rw.RLock, release: rw.RUnlock}, nil
			},
		},
		{
			library: "redisync", id: "semaphore",
			acquireBy: "semaphore.Semaphore.Acquire(1), 1 permit set",
			releaseBy: "semaphore.Semaphore.Release(1)",
			prepare: func(ctx context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				s := semaphore.New(c, name)
				if ok, err := s.TrySetPermits(ctx, 1); err != nil || !ok {
					return scriptItem{}, fmt.Errorf("set permits of %s: %v, %v", name, ok, err)
				}
				return lockItem(permit{s}), nil
			},
		},
		{
			library: "redisync", id: "permits",
			acquireBy: "semaphore.ExpirableSemaphore.Acquire (30 s lease), 1 permit set",
			releaseBy: "semaphore.ExpirableSemaphore.Release of that permit",
			prepare: func(ctx context.Context, c *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
				s := semaphore.NewExpirable(c, name)
				if ok, err := s.TrySetPermits(ctx, 1); err != nil || !ok {
					return scriptItem{}, fmt.Errorf("set permits of %s: %v, %v", name, ok, err)
				}
				var id string
				return scriptItem{
					acquire: func(ctx context.Context) (err error) {
						id, err = s.Acquire(ctx, 30*time.Second)
						return err
					},
					release: func(ctx context.Context) error { return s.Release(ctx, id) },
				}, nil
			},
		},
		{
			library: "redisson-floor", id: "redisson-floor",
			acquireBy: "redisson-floor Lock",
			releaseBy: "redisson-floor Unlock",
		},
	}
}

// scripts runs the scripts scenario for the selected libraries.
func (b *bench) scripts(ctx context.Context) ([]ScriptCost, error) {
	var ops []*scriptOp
	defer func() {
		for _, op := range ops {
			op.close()
		}
	}()
	for _, op := range scriptOps() {
		if !b.cfg.library(op.library) {
			continue
		}
		if err := op.open(b.addr); err != nil {
			return nil, err
		}
		ops = append(ops, op)
		if err := b.warmScriptOp(ctx, op); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", op.id, err)
		}
	}
	n := b.cfg.Rounds
	for i := range n {
		for j := range ops {
			op := ops[(i+j)%len(ops)]
			if err := b.scriptRound(ctx, op, i, share(b.cfg.ScriptCalls, i, n)); err != nil {
				return nil, err
			}
		}
	}
	var out []ScriptCost
	for _, op := range ops {
		out = append(out, op.acq.cost(op.library, op.acquireBy), op.rel.cost(op.library, op.releaseBy))
	}
	return out, nil
}

// open opens op's client to the Redis at addr, with its counter and
// script tally: a redisync Client, or a redisson-floor session.
func (op *scriptOp) open(addr string) error {
	op.rdb, op.cnt = newClient(addr)
	op.tally = newScriptTally()
	op.rdb.AddHook(op.tally)
	if op.library != "redisson-floor" {
		op.client = redisync.New(op.rdb)
		return nil
	}
	s, err := redissonFloorLib().open(conn{addr: addr, rdb: op.rdb, cnt: op.cnt}, nil)
	if err != nil {
		op.rdb.Close()
		return err
	}
	op.session = s
	op.prepare = func(_ context.Context, _ *redisync.Client, _ *redis.Client, name string) (scriptItem, error) {
		m := op.session.mutex(name)
		return scriptItem{acquire: m.Lock, release: m.Unlock}, nil
	}
	return nil
}

// warmScriptOp warms op up: the scripts loaded (no NOSCRIPT in the
// spans), the client's first requests made.
func (b *bench) warmScriptOp(ctx context.Context, op *scriptOp) error {
	items, err := b.prepareScriptItems(ctx, op, "warm-up", max(b.cfg.warmupOps, 1))
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := it.acquire(ctx); err != nil {
			return err
		}
		if err := it.release(ctx); err != nil {
			return err
		}
	}
	return nil
}

// scriptRound measures calls acquisitions of op, then their releases, in
// round i.
func (b *bench) scriptRound(ctx context.Context, op *scriptOp, i, calls int) error {
	if calls == 0 {
		return nil
	}
	items, err := b.prepareScriptItems(ctx, op, fmt.Sprint(i), calls)
	if err != nil {
		return fmt.Errorf("%s: %w", op.id, err)
	}
	if err := b.scriptStep(ctx, op, &op.acq, items, func(it scriptItem) func(context.Context) error { return it.acquire }); err != nil {
		return fmt.Errorf("%s: %s: %w", op.id, op.acquireBy, err)
	}
	if err := b.scriptStep(ctx, op, &op.rel, items, func(it scriptItem) func(context.Context) error { return it.release }); err != nil {
		return fmt.Errorf("%s: %s: %w", op.id, op.releaseBy, err)
	}
	return nil
}

func (b *bench) prepareScriptItems(ctx context.Context, op *scriptOp, round string, n int) ([]scriptItem, error) {
	items := make([]scriptItem, n)
	for k := range items {
		it, err := op.prepare(ctx, op.client, op.rdb, b.key(scScripts, op.id, round, fmt.Sprint(k)))
		if err != nil {
			return nil, err
		}
		items[k] = it
	}
	return items, nil
}

// scriptStep calls step of every item between two snapshots and adds what
// they measured to s.
func (b *bench) scriptStep(ctx context.Context, op *scriptOp, s *scriptSpan, items []scriptItem, step func(scriptItem) func(context.Context) error) error {
	op.tally.take()
	sp, err := beginSpan(ctx, b.meter, []*counter{op.cnt})
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := step(it)(ctx); err != nil {
			return err
		}
	}
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	scripts, evals, other := op.tally.take()
	s.add(u, scripts, evals, other)
	return nil
}

// scriptCommands are the commands that run scripts.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro"}

// neverInScripts are commands Redis refuses inside scripts that a span
// may still count: a replica's REPLCONF ACK (with -replica), and what
// clients send on their own.
var neverInScripts = append([]string{"replconf", "wait", "waitaof", "info"}, pubsubCommands...)

// cost returns the step's figures per call. The script is the one the
// client sent most; any other it sent is named in the note, its time being
// included.
func (s *scriptSpan) cost(library, by string) ScriptCost {
	c := ScriptCost{Library: library, Operation: by}
	names := slices.SortedFunc(maps.Keys(s.scripts), func(a, b string) int {
		if d := s.scripts[b] - s.scripts[a]; d != 0 {
			return int(d)
		}
		return strings.Compare(a, b)
	})
	if len(names) == 0 {
		c.Note = "no script ran"
		return c
	}
	c.Script = names[0]
	var notes []string
	for _, n := range names[1:] {
		notes = append(notes, fmt.Sprintf("also ran %s ×%d (included)", n, s.scripts[n]))
	}
	var execUs int64
	for _, n := range scriptCommands {
		c.Calls += s.u.byCommand[n]
		execUs += s.u.usecBy[n]
	}
	if sent := s.scripts[c.Script]; sent != c.Calls && len(names) == 1 {
		notes = append(notes, fmt.Sprintf("Redis counted %d script calls, the client sent %d", c.Calls, sent))
	}
	if s.evals > 0 {
		notes = append(notes, fmt.Sprintf("%d sent whole with EVAL", s.evals))
	}
	if len(s.other) > 0 {
		var o []string
		for _, n := range slices.Sorted(maps.Keys(s.other)) {
			o = append(o, fmt.Sprintf("%s ×%d", n, s.other[n]))
		}
		notes = append(notes, "the client also sent "+strings.Join(o, ", ")+" (not counted in commands/call)")
	}
	c.Note = strings.Join(notes, "; ")
	if c.Calls == 0 {
		return c
	}
	n := float64(c.Calls)
	c.ExecUsPerCall = f(float64(execUs) / n)
	c.ServerCPUusPerCall = f(float64(s.u.cpu) / float64(time.Microsecond) / n)
	c.BytesInPerCall = f(float64(s.u.bytesIn) / n)
	c.BytesOutPerCall = f(float64(s.u.bytesOut) / n)
	c.Commands = map[string]float64{}
	var inner int64
	for name, k := range s.u.byCommand {
		if slices.Contains(scriptCommands, name) || slices.Contains(neverInScripts, name) {
			continue
		}
		k -= s.other[name]
		if k <= 0 {
			continue
		}
		inner += k
		c.Commands[name] = round4(float64(k) / n)
	}
	c.CommandsPerCall = f(float64(inner) / n)
	return c
}

func (op *scriptOp) close() {
	if op.session != nil {
		op.session.close()
	}
	if op.client != nil {
		_ = op.client.Close()
	}
	if op.rdb != nil {
		_ = op.rdb.Close()
	}
}

// writeScripts prints the scripts scenario's figures as a markdown table.
func writeScripts(w io.Writer, costs []ScriptCost) {
	if len(costs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Scripts: Redis's cost per call of each script, each run alone between two INFO snapshots (the scripts scenario).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| library | script | run by | calls | exec µs/call | Redis CPU µs/call | commands/call | commands it called, per call | bytes in/out per call | notes |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---|---:|---|")
	for _, c := range costs {
		var cmds []string
		for _, n := range slices.Sorted(maps.Keys(c.Commands)) {
			v := c.Commands[n]
			cmds = append(cmds, n+" "+strconv.FormatFloat(v, 'f', -1, 64))
		}
		bytes := "–"
		if c.BytesInPerCall != nil && c.BytesOutPerCall != nil {
			bytes = num(c.BytesInPerCall, 0) + " / " + num(c.BytesOutPerCall, 0)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
			c.Library, c.Script, c.Operation, c.Calls, num(c.ExecUsPerCall, 1), num(c.ServerCPUusPerCall, 1),
			num(c.CommandsPerCall, 2), strings.Join(cmds, ", "), bytes, c.Note)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "- exec µs: INFO commandstats usec of EVALSHA per call, the commands the script called included (time Redis")
	fmt.Fprintln(w, "  measured around the call: on a loaded machine it includes time the server was not running);")
	fmt.Fprintln(w, "  Redis CPU: user+sys CPU time of the redis-server process per call, reading the request and writing the reply")
	fmt.Fprintln(w, "  included; commands/call: the commands the script called (commandstats, less the EVALSHA).")
}
