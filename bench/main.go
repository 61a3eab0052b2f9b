// Command bench compares redisync with go-redsync/redsync v4,
// bsm/redislock and redis/rueidis's rueidislock on one local redis-server,
// in one run, and prints a markdown table. It lives in its own module so
// that the library's users never download the peers.
//
// Usage (from the bench directory; "make bench" at the repository root
// runs it with the defaults):
//
//	go run . [flags]
//
// Unless -redis names a server, it starts its own redis-server (found on
// PATH or in the usual bin directories) on a free loopback port, without
// persistence, and kills it when it exits, Ctrl-C included. Every library
// but rueidislock talks to that server through go-redis v9 clients with the
// same (default) options. redisync runs as three libraries: its lock
// (rlock.New, "redisync"), its fair lock (rlock.NewFair, "redisync-fair")
// and its spin lock (rlock.NewSpin, "redisync-spin"), each with its
// defaults. rueidislock ("rueidislock") runs with its defaults over a
// rueidis client of its own per client (rueidis's default options, as
// rueidislock sets them: one auto-pipelined RESP3 connection with client
// tracking): a lock is 3 keys of which a holder needs 2, each key's lease
// is 5 s (renewed every 2.5 s while held), and each key's acquisition
// request gives up after 20 ms. Its waiters do not poll: the acquisition
// script reads the key, so the server tracks it for the client, and a
// waiter sleeps until the invalidation message of one of the lock's keys
// (released or expired) wakes its client's waiters of that name. Its
// requests are counted by a wrapper of its rueidis client, as the go-redis
// clients' are by a hook.
//
// Two libraries are references, not locks, run in the same run so that
// redisync is measured against what this machine and Redisson's layout
// allow: pubsub-floor (handoff only; floor.go), the least a lock woken by
// pub/sub does per handoff, and redisson-floor (uncontended, many-locks
// and scripts; redissonfloor.go), Redisson 3.52's own lock protocol with
// nothing added: the commands of its lock and unlock scripts on its
// layout (hash `name`, field `<uuid>:<thread id>`, HINCRBY and PEXPIRE to
// take it, PTTL when held; GET of the unlock request record, HEXISTS,
// HINCRBY -1, then DEL, PUBLISH 0 on `redisson_lock__channel:{name}` and
// SET of `redisson_unlock_latch:{name}:<request id>` with PX to release
// it), in our own Lua run with EVALSHA through bare go-redis. What
// redisync spends above redisson-floor is its own cost; what
// redisson-floor spends is the price of compatibility. The rows, in order:
//
//   - rtt (always measured): PING round trips from one goroutine, p50/p99;
//     every other row's p50 is also given as a multiple of this p50.
//   - uncontended: lock+unlock pairs from one goroutine: ops/s, p50/p99,
//     and the heap allocations of the tool's process per pair
//     (allocs_per_op, alloc_bytes_per_op: runtime.MemStats Mallocs and
//     TotalAlloc deltas around the measured loops, whose latency list is
//     sized beforehand; the other libraries' clients are idle meanwhile).
//   - handoff: a waiter on a second client is already waiting when the
//     holder unlocks; time from the unlock call to the waiter's Lock
//     returning, p50/p99 over -handoffs handoffs, with each library's
//     waiting strategy: redisync pub/sub, its spin lock and redsync their
//     default retry delays, redislock a 10 ms linear backoff and its
//     default (no retry, so the caller calls Obtain again at once),
//     rueidislock its invalidation messages. The fair lock is left out
//     here.
//   - contended-0ms, contended-1ms: -goroutines goroutines over -clients
//     clients on one lock, holding it ~0 or 1 ms: acquisitions/s, and how
//     evenly the goroutines shared them (the busiest one's share against
//     1/goroutines). The wait quantiles include the waits still going on
//     when the window closed, each as long as it had lasted then: a
//     goroutine starved for the whole window counts with a wait of the
//     window, instead of vanishing from the quantiles (extra
//     unfinished_waits says how many).
//   - contended-0ms-64, contended-1ms-64: the same with -many-goroutines
//     goroutines over -many-clients clients (64 over 16).
//   - many-locks: -many-locks-goroutines goroutines over
//     -many-locks-clients clients (256 over 4), each on a lock of its own,
//     locking and unlocking for -duration: lock+unlock pairs/s, p50/p99 of
//     a pair, and the Redis CPU time per pair, for every library (redislock
//     once, as in uncontended: nobody waits).
//   - uncontended-replica, handoff-replica, many-locks-replica: the
//     uncontended, handoff and many-locks rows of redisync again, on a
//     second server the tool starts with one replica attached: "redisync"
//     with replica acknowledgement on (its default: one WAIT ends each
//     batch of a Client's script pipeline), "redisync-nosync" with it off
//     (WithReplicaSync(0, 0)). Not run with -redis.
//   - redislock-autopipeline (uncontended and many-locks): redislock over
//     go-redis's AutoPipeline(), which users could set up themselves; no
//     target takes it as a peer (SET NX is a simpler protocol than
//     Redisson's).
//   - mean batch (redisync's rows, results.json's mean_batch): the mean
//     number of script calls per batch of its Clients' script pipelines
//     while the row ran.
//   - scripts (redisync and redisson-floor): not rows but a table of its
//     own (results.json's "scripts"): what each main script costs Redis
//     per call. INFO commandstats counts every script under EVALSHA,
//     whichever it was, and the rows' figures mix a Lock's script with its
//     Unlock's; so a true per-script figure needs one script run alone
//     between two snapshots. For each operation (redisync's lock without
//     and with a context owner, fair lock, read-write lock's write and read
//     sides, counted semaphore with 1 permit, permit-expirable semaphore
//     with 1 permit, each with its defaults and through its public API;
//     and redisson-floor's Lock and Unlock) the tool prepares
//     -script-calls fresh names (2,000, split over -rounds turns, the
//     operations taking turns), then acquires each once between two INFO
//     snapshots and releases each once between two more: every
//     acquisition finds its name free and every release a hold of one,
//     as in the uncontended row. A hook on the operation's client names
//     the script of every EVALSHA (by its SHA1, against package lua's
//     scripts and redisson-floor's), so each span's EVALSHA calls are
//     known to be that one script's; another script in the span (a
//     watchdog renewal falling into it) is named in the row's note, its
//     time included. Per call: commandstats' EVALSHA usec (the script's
//     run, the commands it called included; elapsed time, which on a
//     loaded machine includes time the server was not running), the
//     server's CPU time (that plus reading the request and writing the
//     reply, and the snapshots' two INFO commands shared by the span's
//     calls), the commands the script called, by name, and bytes in and
//     out.
//   - semaphore (redisync): -permits permits under -goroutines contenders
//     over -clients clients, each holding a permit -semaphore-hold:
//     acquisitions/s.
//   - latch-fanout (redisync): time from CountDown to the last of
//     -fanout-waiters waiters returning.
//   - scale-waiters (redisync): one client with -scale-waiters-per-lock
//     goroutines waiting on each of -scale-locks locks (10 on each of
//     1,000) that a second client holds: the pub/sub connections the
//     waiting client uses (CLIENT LIST), its subscribed channels, the Go
//     heap and stack and the goroutines per waiter (after GC, against
//     before the first waiter), and handoff p50/p99 with all of them
//     waiting: the holder releases -scale-handoffs locks one at a time,
//     timed from its Unlock call to a waiter of that lock holding it.
//     Then every lock is released and every waiter must get its turn and
//     leave (no waiter, hold or channel left); how long that took is in
//     the row's extra figures.
//   - watchdog-1000, watchdog-10000 (redisync): what a renewal tick
//     costs with -watchdog-locks (1,000) and -watchdog-many-locks (10,000)
//     locks held by one client: renewal scripts and round trips per tick,
//     commands, Redis CPU and bytes per tick and per held lock.
//
// In each lock scenario the libraries take turns (-rounds slices of each
// measurement, the starting library rotating), so that load from other
// processes on the machine falls on all of them alike.
//
// For every row it also reports, from INFO commandstats, stats, cpu and
// keyspace deltas, the commands Redis executed per operation (those run
// inside Lua scripts included) and their execution time, the requests the
// clients sent, the bytes in and out, the server's CPU time and the keys
// left behind.
//
// Below the table it checks the targets, each a figure of a redisync row
// (the plain lock's, "redisync", unless said) against a reference from
// the same run, or an absolute bound: uncontended ops/s ≥ 0.95× the
// redisson-floor's and Redis CPU per uncontended lock+unlock ≤ 1.15× the
// redisson-floor's; many-locks ops/s ≥ 1.5× the best peer's and Redis CPU
// per pair ≤ the best peer's; many-locks-replica ops/s ≥ 1.2× the best
// peer's many-locks (without replica); handoff
// p50 ≤ 1.15× the pubsub-floor's; in each contended-* scenario ops/s ≥
// 1.0× the best peer's and at most 3 round trips per acquisition; the fair
// lock's (redisync-fair) contended-0ms ops/s ≥ 0.6× the plain lock's; the
// semaphore at most 3 round trips per acquisition; at most 30 allocations
// per uncontended lock+unlock. The peers are redsync, redislock-* and
// rueidislock; the best peer is the one with the highest ops/s. A target
// whose rows were not run is shown as not judged.
//
// The results are written to -out (results.json) as one object:
// "environment" (machine, Redis, Go, the PING p50), "results" (a list of
// rows with the fields library, scenario, ops_per_sec, p50_ms, p99_ms,
// commands_per_op and more; see Result), "scripts" (the scripts
// scenario's table; see ScriptCost: library, script, operation, calls,
// exec_us_per_call, server_cpu_us_per_call, commands_per_call and more)
// and "targets" (see Target: name, library, redisync, reference, ratio,
// target, pass).
//
// With -redis, the server must be used by nothing else during the run, or
// the command counts are wrong; the tool deletes the keys it created.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

// mainErr runs the tool and returns the exit status.
func mainErr(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if cfg.Redraw != "" {
		return redraw(cfg, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	t, err := useRedis(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer t.stop()
	defer onSignals(cancel, t.srv, stderr)()

	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer stop()
	}
	return runAndReport(ctx, cfg, t, stdout, stderr)
}

// redisTarget is the Redis a run measures: the -redis one, or a server
// the tool started (srv), perhaps with a replica (rep).
type redisTarget struct {
	addr string
	desc string // how the report names it
	srv  *server
	rep  *server
	// the primary and replica of the *-replica scenarios (replicated.go)
	rsrv, rrep *server
}

// replicatedAddr returns the address of the primary with a replica of the
// *-replica scenarios, "" when none was started.
func (t *redisTarget) replicatedAddr() string {
	if t.rsrv == nil {
		return ""
	}
	return t.rsrv.addr
}

// useRedis returns the -redis server, warning when it is not on
// loopback, or else starts a redis-server (and with -replica a replica of
// it), reporting progress to stderr.
func useRedis(ctx context.Context, cfg config, stderr io.Writer) (*redisTarget, error) {
	t := &redisTarget{addr: cfg.Redis, desc: "-redis " + cfg.Redis}
	if t.addr != "" {
		if !isLoopback(t.addr) {
			fmt.Fprintf(stderr, "bench: warning: %s is not a loopback address; latencies include the network\n", t.addr)
		}
		return t, nil
	}
	bin, err := findRedisServer()
	if err != nil {
		return nil, err
	}
	if t.srv, err = startServer(bin); err != nil {
		return nil, err
	}
	t.addr = t.srv.addr
	t.desc = "started by the tool on loopback"
	fmt.Fprintf(stderr, "bench: started %s on %s\n", bin, t.addr)
	if cfg.Replica {
		if t.rep, err = startReplica(ctx, bin, t.addr); err != nil {
			t.srv.stop()
			return nil, err
		}
		replicaRun = true
		t.desc += ", with one replica (" + t.rep.addr + ")"
		fmt.Fprintf(stderr, "bench: replica on %s\n", t.rep.addr)
	}
	if cfg.wantsReplicated() {
		if t.rsrv, err = startServer(bin); err != nil {
			t.stop()
			return nil, err
		}
		if t.rrep, err = startReplica(ctx, bin, t.rsrv.addr); err != nil {
			t.stop()
			return nil, err
		}
		fmt.Fprintf(stderr, "bench: primary %s with replica %s for the *-replica scenarios\n", t.rsrv.addr, t.rrep.addr)
	}
	return t, nil
}

// stop stops the servers the tool started, the replica first.
func (t *redisTarget) stop() {
	for _, s := range []*server{t.rrep, t.rsrv} {
		if s != nil {
			s.stop()
		}
	}
	if t.rep != nil {
		t.rep.stop()
	}
	if t.srv != nil {
		t.srv.stop()
	}
}

// onSignals handles Ctrl-C and SIGTERM until the returned function is
// called: the first cancels the run (cancel); a second one, or a run that
// does not stop within 5 s, kills the server the tool started (srv, nil
// for none) and exits at once.
func onSignals(cancel context.CancelFunc, srv *server, stderr io.Writer) (stop func()) {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		select {
		case <-sigc:
		case <-finished:
			return
		}
		fmt.Fprintln(stderr, "bench: interrupted; stopping")
		cancel()
		select {
		case <-sigc:
		case <-finished:
			return
		case <-time.After(5 * time.Second):
		}
		if srv != nil {
			srv.stop()
		}
		os.Exit(130)
	}()
	return func() {
		signal.Stop(sigc)
		close(finished)
	}
}

// startCPUProfile writes a CPU profile of the tool to path until the
// returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		pf.Close()
	}, nil
}

// runAndReport runs the benchmarks against t, writes the JSON results
// (-out) and the Markdown tables, and returns the exit status: 130 when
// interrupted.
func runAndReport(ctx context.Context, cfg config, t *redisTarget, stdout, stderr io.Writer) int {
	results, scripts, e, err := run(ctx, cfg, t.addr, t.replicatedAddr(), stderr)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "bench: interrupted; no results written")
			return 130
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	e.Server = t.desc
	targets := evaluateTargets(results)
	curves := buildCurves(results)
	rep := Report{Environment: e, Results: results, Scripts: scripts, Targets: targets, Curves: curves}
	if cfg.Out != "" {
		if err := writeJSON(cfg.Out, rep); err != nil {
			fmt.Fprintln(stderr, "bench: write results:", err)
			return 1
		}
		if cfg.Charts != "" {
			dir := filepath.Join(filepath.Dir(cfg.Out), cfg.Charts)
			files, err := drawCharts(dir, rep)
			if err != nil {
				fmt.Fprintln(stderr, "bench: charts:", err)
				return 1
			}
			fmt.Fprintf(stderr, "bench: %d charts in %s\n", len(files), dir)
		}
	}
	writeMarkdown(stdout, e, results, scripts, targets, curves, cfg.Out)
	return 0
}

// redraw draws the charts of the results.json cfg.Redraw names, with the
// curves fitted again from its rows.
func redraw(cfg config, stderr io.Writer) int {
	raw, err := os.ReadFile(cfg.Redraw)
	if err == nil {
		var rep Report
		if err = json.Unmarshal(raw, &rep); err == nil {
			rep.Curves = buildCurves(rep.Results)
			dir := filepath.Join(filepath.Dir(cfg.Redraw), cfg.Charts)
			var files []string
			if files, err = drawCharts(dir, rep); err == nil {
				fmt.Fprintf(stderr, "bench: %d charts in %s\n", len(files), dir)
				return 0
			}
		}
	}
	fmt.Fprintln(stderr, "bench: redraw:", err)
	return 1
}
