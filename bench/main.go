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
// redisson-floor's; many-locks ops/s ≥ 0.85× the best peer's; handoff
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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// config holds the sizes of a run.
type config struct {
	Redis          string        // address of an existing server; "" starts one
	Out            string        // results.json path; "" writes none
	Replica        bool          // start a replica of the tool's server (replica acknowledgement rows)
	Uncontended    time.Duration // per library
	Handoffs       int
	HandoffHold    time.Duration // the holder releases a random 0..HandoffHold after the waiter waits
	Duration       time.Duration // per contended scenario, per library, and of the semaphore scenario
	Goroutines     int
	Clients        int
	ManyGoroutines int // of the contended-*-64 scenarios
	ManyClients    int
	// many-locks: goroutines over clients, each goroutine on a lock of
	// its own.
	ManyLocksGoroutines int
	ManyLocksClients    int
	Permits             int
	SemaphoreHold       time.Duration
	FanoutWaiters       int
	FanoutRounds        int
	// scale-waiters: ScaleWaitersPerLock waiters on each of ScaleLocks
	// locks, ScaleHandoffs handoffs measured.
	ScaleLocks          int
	ScaleWaitersPerLock int
	ScaleHandoffs       int
	WatchdogLocks       int // of watchdog-1000
	WatchdogManyLocks   int // of watchdog-10000
	WatchdogTimeout     time.Duration
	WatchdogTicks       int
	ScriptCalls         int      // calls of each script in the scripts scenario
	Rounds              int      // turns the libraries of a lock scenario take
	Scenarios           []string // nil: all
	Libraries           []string // nil: all
	Seed                uint64
	CPUProfile          string // pprof CPU profile of the whole run; "" for none

	warmup         time.Duration // before each contended or semaphore window
	warmupOps      int           // uncontended
	warmupHandoffs int
}

// defaultConfig is sized to finish within about four minutes on a 2-core
// machine: uncontended 7 libraries × 2 s; handoff 7 × 200 cycles of a
// 0–100 ms hold plus the handoff (about 90 s, a third of it redsync's
// slow retries); contended-* 4 × 7 libraries × 3.3 s (about 90 s);
// many-locks 7 × 3.3 s; scripts 16 scripts × 2,000 calls (a few
// seconds); semaphore 3 s; latch-fanout about 1 s;
// scale-waiters about 5 s; watchdog-1000 and watchdog-10000 about 15 s
// together.
func defaultConfig() config {
	return config{
		Out:                 "results.json",
		Uncontended:         2 * time.Second,
		Handoffs:            200,
		HandoffHold:         100 * time.Millisecond,
		Duration:            3 * time.Second,
		Goroutines:          16,
		Clients:             4,
		ManyGoroutines:      64,
		ManyClients:         16,
		ManyLocksGoroutines: 256,
		ManyLocksClients:    4,
		Permits:             4,
		SemaphoreHold:       time.Millisecond,
		FanoutWaiters:       100,
		FanoutRounds:        20,
		ScaleLocks:          1000,
		ScaleWaitersPerLock: 10,
		ScaleHandoffs:       200,
		WatchdogLocks:       1000,
		WatchdogManyLocks:   10000,
		WatchdogTimeout:     3 * time.Second,
		WatchdogTicks:       5,
		ScriptCalls:         2000,
		Rounds:              4,
		Seed:                1,
		warmup:              300 * time.Millisecond,
		warmupOps:           100,
		warmupHandoffs:      3,
	}
}

// quick shrinks every size for a smoke run (the module's test, -quick).
func (c *config) quick(set map[string]bool) {
	def := func(name string, apply func()) {
		if !set[name] {
			apply()
		}
	}
	def("uncontended", func() { c.Uncontended = 100 * time.Millisecond })
	def("handoffs", func() { c.Handoffs = 8 })
	def("handoff-hold", func() { c.HandoffHold = 10 * time.Millisecond })
	def("duration", func() { c.Duration = 200 * time.Millisecond })
	def("many-locks-goroutines", func() { c.ManyLocksGoroutines = 16 })
	def("many-locks-clients", func() { c.ManyLocksClients = 2 })
	def("fanout-waiters", func() { c.FanoutWaiters = 12 })
	def("fanout-rounds", func() { c.FanoutRounds = 2 })
	def("scale-locks", func() { c.ScaleLocks = 20 })
	def("scale-waiters-per-lock", func() { c.ScaleWaitersPerLock = 3 })
	def("scale-handoffs", func() { c.ScaleHandoffs = 10 })
	def("watchdog-locks", func() { c.WatchdogLocks = 150 })
	def("watchdog-many-locks", func() { c.WatchdogManyLocks = 450 })
	def("watchdog-timeout", func() { c.WatchdogTimeout = 600 * time.Millisecond })
	def("watchdog-ticks", func() { c.WatchdogTicks = 2 })
	def("script-calls", func() { c.ScriptCalls = 40 })
	def("rounds", func() { c.Rounds = 2 })
	c.warmup = 50 * time.Millisecond
	c.warmupOps = 5
	c.warmupHandoffs = 1
}

// validate checks the flags' values, naming every problem.
func (c config) validate() error {
	var bad []string
	if c.Replica && c.Redis != "" {
		bad = append(bad, "-replica needs the server the tool starts (no -redis)")
	}
	if !c.durationsValid() {
		bad = append(bad, "durations must be positive (watchdog timeout ≥ 30ms; holds ≥ 0)")
	}
	if !c.countsValid() {
		bad = append(bad, "counts must be at least 1")
	}
	for _, s := range c.Scenarios {
		if !contains(allScenarios, s) {
			bad = append(bad, fmt.Sprintf("unknown scenario %q (have %s)", s, strings.Join(allScenarios, ", ")))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// durationsValid reports whether the run lengths are positive, the
// watchdog timeout at least 30ms and the holds not negative.
func (c config) durationsValid() bool {
	return c.Uncontended > 0 && c.Duration > 0 && c.WatchdogTimeout >= 30*time.Millisecond && c.HandoffHold >= 0 && c.SemaphoreHold >= 0
}

// countsValid reports whether every count is at least 1.
func (c config) countsValid() bool {
	for _, n := range []int{c.Handoffs, c.Goroutines, c.Clients, c.ManyGoroutines, c.ManyClients,
		c.ManyLocksGoroutines, c.ManyLocksClients, c.Permits, c.FanoutWaiters,
		c.FanoutRounds, c.WatchdogLocks, c.WatchdogManyLocks,
		c.ScaleLocks, c.ScaleWaitersPerLock, c.ScaleHandoffs, c.WatchdogTicks, c.Rounds,
		c.ScriptCalls} {
		if n < 1 {
			return false
		}
	}
	return true
}

func (c config) scenario(name string) bool {
	return len(c.Scenarios) == 0 || contains(c.Scenarios, name)
}

func (c config) library(name string) bool {
	if len(c.Libraries) == 0 {
		return true
	}
	for _, l := range c.Libraries {
		if l == name || strings.HasPrefix(name, l+"-") {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseFlags parses args into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Redis, "redis", "", "`host:port` of a Redis to use instead of starting a redis-server (it must be otherwise idle)")
	fs.BoolVar(&cfg.Replica, "replica", false, "attach one replica to the server the tool starts, and add redisync-nosync (WithReplicaSync(0, 0)) to the uncontended and handoff rows: the cost of replica acknowledgement")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "where to write the results as JSON (\"\" for nowhere)")
	fs.DurationVar(&cfg.Uncontended, "uncontended", cfg.Uncontended, "length of the uncontended run, per library")
	fs.IntVar(&cfg.Handoffs, "handoffs", cfg.Handoffs, "handoffs measured per library")
	fs.DurationVar(&cfg.HandoffHold, "handoff-hold", cfg.HandoffHold, "the holder unlocks a random 0..`d` after the waiter started waiting")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each contended run, per library, and of the semaphore run")
	fs.IntVar(&cfg.Goroutines, "goroutines", cfg.Goroutines, "contending goroutines")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients the contending goroutines are spread over")
	fs.IntVar(&cfg.ManyGoroutines, "many-goroutines", cfg.ManyGoroutines, "contending goroutines of the contended-*-64 scenarios")
	fs.IntVar(&cfg.ManyClients, "many-clients", cfg.ManyClients, "clients the goroutines of the contended-*-64 scenarios are spread over")
	fs.IntVar(&cfg.ManyLocksGoroutines, "many-locks-goroutines", cfg.ManyLocksGoroutines, "goroutines of the many-locks scenario, each on a lock of its own")
	fs.IntVar(&cfg.ManyLocksClients, "many-locks-clients", cfg.ManyLocksClients, "clients the goroutines of the many-locks scenario are spread over")
	fs.IntVar(&cfg.Permits, "permits", cfg.Permits, "semaphore permits")
	fs.DurationVar(&cfg.SemaphoreHold, "semaphore-hold", cfg.SemaphoreHold, "how long a semaphore contender holds its permit")
	fs.IntVar(&cfg.FanoutWaiters, "fanout-waiters", cfg.FanoutWaiters, "latch waiters (spread over -clients clients)")
	fs.IntVar(&cfg.FanoutRounds, "fanout-rounds", cfg.FanoutRounds, "latch fan-outs measured")
	fs.IntVar(&cfg.ScaleLocks, "scale-locks", cfg.ScaleLocks, "locks a second client holds in the scale-waiters scenario")
	fs.IntVar(&cfg.ScaleWaitersPerLock, "scale-waiters-per-lock", cfg.ScaleWaitersPerLock, "goroutines of one client waiting on each lock in the scale-waiters scenario")
	fs.IntVar(&cfg.ScaleHandoffs, "scale-handoffs", cfg.ScaleHandoffs, "handoffs measured in the scale-waiters scenario (at most one per lock)")
	fs.IntVar(&cfg.WatchdogLocks, "watchdog-locks", cfg.WatchdogLocks, "locks held by one client in the watchdog-1000 scenario")
	fs.IntVar(&cfg.WatchdogManyLocks, "watchdog-many-locks", cfg.WatchdogManyLocks, "locks held by one client in the watchdog-10000 scenario")
	fs.DurationVar(&cfg.WatchdogTimeout, "watchdog-timeout", cfg.WatchdogTimeout, "watchdog timeout in the watchdog scenarios (a tick every third of it)")
	fs.IntVar(&cfg.WatchdogTicks, "watchdog-ticks", cfg.WatchdogTicks, "renewal ticks measured")
	fs.IntVar(&cfg.ScriptCalls, "script-calls", cfg.ScriptCalls, "calls of each script measured in the scripts scenario (each acquisition and each release)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "turns the libraries of a lock scenario take: each runs 1/rounds of its measurement per turn")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the handoff hold times")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the tool (all clients) to `file`, for go tool pprof")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios to run (default all: "+strings.Join(allScenarios, ",")+")")
	libraries := fs.String("libraries", "", "comma-separated libraries to run (redisync, redisync-fair, redisync-spin, redsync, redislock, redislock-linear10ms, redislock-default, rueidislock, pubsub-floor (handoff only), redisson-floor (uncontended, many-locks and scripts only); \"redisync\" selects all three of its kinds, \"redislock\" both strategies; default all)")
	quick := fs.Bool("quick", false, "tiny sizes for a smoke run (flags given explicitly still apply)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Scenarios = splitList(*scenarios)
	cfg.Libraries = splitList(*libraries)
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		cfg.quick(set)
	}
	return cfg, cfg.validate()
}

func main() {
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
	return t, nil
}

// stop stops the servers the tool started, the replica first.
func (t *redisTarget) stop() {
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
	results, scripts, e, err := run(ctx, cfg, t.addr, stderr)
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
	if cfg.Out != "" {
		if err := writeJSON(cfg.Out, Report{Environment: e, Results: results, Scripts: scripts, Targets: targets}); err != nil {
			fmt.Fprintln(stderr, "bench: write results:", err)
			return 1
		}
	}
	writeMarkdown(stdout, e, results, scripts, targets, cfg.Out)
	return 0
}

// bench is one run's state.
type bench struct {
	cfg    config
	addr   string
	meter  *redis.Client // takes the INFO snapshots; sends nothing else
	log    io.Writer
	prefix string // of every key the run creates
}

// key returns a key of this run.
func (b *bench) key(parts ...string) string {
	return b.prefix + strings.Join(parts, ":")
}

// run runs the selected scenarios against the Redis at addr, reporting
// progress to log. It returns the rows, the scripts scenario's figures
// and the environment.
func run(ctx context.Context, cfg config, addr string, log io.Writer) ([]Result, []ScriptCost, env, error) {
	b := &bench{
		cfg:    cfg,
		addr:   addr,
		meter:  redis.NewClient(clientOptions(addr)),
		log:    log,
		prefix: fmt.Sprintf("redisync-bench:%x:", time.Now().UnixNano()),
	}
	defer b.meter.Close()
	e := env{CPUs: runtime.NumCPU(), CPU: cpuModel(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	v, err := redisVersion(ctx, b.meter)
	if err != nil {
		return nil, nil, e, fmt.Errorf("redis at %s: %w", addr, err)
	}
	e.Redis = v
	fmt.Fprintf(log, "bench: Redis %s\n", v)
	defer b.cleanup()

	// The round trip first: every other row's p50 is also given as a
	// multiple of its p50.
	rtt, err := b.rtt(ctx)
	if err != nil {
		return nil, nil, e, fmt.Errorf("%s: %w", scRTT, err)
	}
	e.RTTp50ms = *rtt.P50ms
	t := &tally{log: log, rttP50ms: e.RTTp50ms}
	t.record(rtt)
	for _, sc := range allScenarios {
		if !cfg.scenario(sc) {
			continue
		}
		if err := b.runScenario(ctx, sc, t); err != nil {
			return t.results, t.scripts, e, err
		}
	}
	return t.results, t.scripts, e, nil
}

// tally collects a run's rows and the scripts scenario's figures,
// reporting each to log as it comes.
type tally struct {
	log      io.Writer
	rttP50ms float64 // the round trip's p50, for each row's p50 in round trips
	results  []Result
	scripts  []ScriptCost
}

// record adds a row, with its p50 as a multiple of the round trip's.
func (t *tally) record(r Result) {
	if r.Scenario != scRTT && r.P50ms != nil && t.rttP50ms > 0 {
		r.P50RTT = f(*r.P50ms / t.rttP50ms)
	}
	t.results = append(t.results, r)
	fmt.Fprintf(t.log, "bench: %-16s %-21s %s\n", r.Scenario, r.Library, summary(r))
}

// recordScripts adds the figures of scenario sc's scripts.
func (t *tally) recordScripts(sc string, cs []ScriptCost) {
	for _, c := range cs {
		fmt.Fprintf(t.log, "bench: %-16s %-21s %s: %s µs exec, %s µs Redis CPU, %s commands per call\n",
			sc, c.Library, c.Script, num(c.ExecUsPerCall, 1), num(c.ServerCPUusPerCall, 1), num(c.CommandsPerCall, 2))
	}
	t.scripts = append(t.scripts, cs...)
}

// runScenario runs scenario sc for the selected libraries and adds what
// it measured to t. A scenario none of whose libraries is selected is
// left out.
func (b *bench) runScenario(ctx context.Context, sc string, t *tally) error {
	switch sc {
	case scUncontended, scHandoff, scContended0, scContended1, scContended0Many, scContended1Many, scManyLocks:
		rs, err := b.lockScenario(ctx, sc)
		if err != nil {
			return err
		}
		for _, r := range rs {
			t.record(r)
		}
	case scScripts: // scripts.go
		if !b.cfg.library("redisync") && !b.cfg.library("redisson-floor") {
			return nil
		}
		cs, err := b.scripts(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", sc, err)
		}
		t.recordScripts(sc, cs)
	case scGCRA1, scGCRA64, scRateLimiter1000: // ratelimit.go
		rs, err := b.rateLimit(ctx, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", sc, err)
		}
		for _, r := range rs {
			t.record(r)
		}
	case scSemaphore, scLatchFanout, scScaleWaiters, scWatchdog1000, scWatchdog10000:
		if !b.cfg.library("redisync") {
			return nil
		}
		r, err := b.redisyncScenario(ctx, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", sc, err)
		}
		t.record(r)
	}
	return nil
}

// redisyncScenario runs one of the scenarios only redisync runs.
func (b *bench) redisyncScenario(ctx context.Context, sc string) (Result, error) {
	switch sc {
	case scSemaphore:
		return b.semaphore(ctx)
	case scLatchFanout:
		return b.latchFanout(ctx)
	case scScaleWaiters:
		return b.scaleWaiters(ctx)
	case scWatchdog1000:
		return b.watchdog(ctx, sc, b.cfg.WatchdogLocks)
	case scWatchdog10000:
		return b.watchdog(ctx, sc, b.cfg.WatchdogManyLocks)
	}
	return Result{}, errors.New("not a redisync-only scenario")
}

// lockScenario runs a lock scenario for every selected library: each is
// set up and warmed up, then they take turns for Rounds slices of the
// measurement (see interleave).
func (b *bench) lockScenario(ctx context.Context, sc string) ([]Result, error) {
	var (
		runners []runner
		names   []string
	)
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, lib := range lockLibraries(sc) {
		if !b.cfg.library(lib.name) {
			continue
		}
		var r runner
		var err error
		switch sc {
		case scUncontended:
			r, err = b.newUncontended(ctx, lib)
		case scHandoff:
			r, err = b.newHandoff(ctx, lib)
		case scContended0:
			r, err = b.newContended(ctx, lib, sc, 0, b.cfg.Goroutines, b.cfg.Clients)
		case scContended1:
			r, err = b.newContended(ctx, lib, sc, time.Millisecond, b.cfg.Goroutines, b.cfg.Clients)
		case scContended0Many:
			r, err = b.newContended(ctx, lib, sc, 0, b.cfg.ManyGoroutines, b.cfg.ManyClients)
		case scContended1Many:
			r, err = b.newContended(ctx, lib, sc, time.Millisecond, b.cfg.ManyGoroutines, b.cfg.ManyClients)
		case scManyLocks:
			r, err = b.newManyLocks(ctx, lib)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", sc, lib.name, err)
		}
		runners = append(runners, r)
		names = append(names, lib.name)
	}
	if err := interleave(ctx, runners, names, b.cfg.Rounds); err != nil {
		return nil, fmt.Errorf("%s: %w", sc, err)
	}
	results := make([]Result, len(runners))
	for i, r := range runners {
		results[i] = r.result()
	}
	return results, nil
}

// summary is the progress line of a result.
func summary(r Result) string {
	var parts []string
	if r.OpsPerSec != nil {
		parts = append(parts, num(r.OpsPerSec, 0)+" ops/s")
	}
	if r.P50ms != nil {
		parts = append(parts, "p50 "+num(r.P50ms, 3)+" ms", "p99 "+num(r.P99ms, 3)+" ms")
	}
	if r.RoundTripsPerOp != nil {
		parts = append(parts, num(r.RoundTripsPerOp, 2)+" round trips/op", num(r.CommandsPerOp, 1)+" commands/op")
	}
	return strings.Join(parts, ", ")
}

// cleanup deletes the keys the run created (its locks expire anyway; this
// matters with -redis). Keys of one primitive share a hash tag, so the
// pattern matches the name inside braces too.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := b.meter.Scan(ctx, 0, "*"+b.prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			_ = b.meter.Del(ctx, batch...).Err()
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			flush()
		}
	}
	flush()
}

// cpuModel returns the CPU model from /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
