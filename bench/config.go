package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
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
	ScriptCalls         int // calls of each script in the scripts scenario
	ServerCostOps       int // lock+unlock pairs of each library in the server-cost scenario
	// The scale scenarios (curves.go): the sizes of each curve, the
	// window over which waiting is measured, the bound of a waiters run's
	// drain, and the operations of the redis-memory scenario.
	ScaleWaiters    []int
	ScaleHolds      []int
	ScaleLocksSizes []int
	ScaleClients    []int
	// ClientsMarks: the clients-one-* children mark each acquisition
	// (clients.go, markedPairs), to count cross-process handoffs.
	ClientsMarks      bool
	ScaleMasters      []int
	ScaleWindow       time.Duration
	ScaleDrainTimeout time.Duration
	ScaleMemoryOps    int
	Rounds            int      // turns the libraries of a lock scenario take
	Scenarios         []string // nil: all
	Libraries         []string // nil: all
	Seed              uint64
	CPUProfile        string // pprof CPU profile of the whole run; "" for none
	Charts            string // directory of the SVG charts, relative to Out's; "" for none
	Redraw            string // a results.json whose charts are drawn (nothing is run)

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
		ServerCostOps:       40000,
		ScaleWaiters:        []int{10, 100, 1000, 10000},
		ScaleHolds:          []int{1000, 10000, 100000},
		ScaleLocksSizes:     []int{1, 100, 10000},
		ScaleClients:        []int{1, 4, 16, 64, 128},
		ClientsMarks:        true,
		ScaleMasters:        []int{1, 3},
		ScaleWindow:         2 * time.Second,
		ScaleDrainTimeout:   60 * time.Second,
		ScaleMemoryOps:      1000,
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
	def("server-cost-ops", func() { c.ServerCostOps = 128 })
	def("rounds", func() { c.Rounds = 2 })
	def("scale-waiters", func() { c.ScaleWaiters = []int{2, 8} })
	def("scale-holds", func() { c.ScaleHolds = []int{20, 80} })
	def("scale-contended-locks", func() { c.ScaleLocksSizes = []int{1, 8} })
	def("scale-clients", func() { c.ScaleClients = []int{1, 2} })
	def("scale-window", func() { c.ScaleWindow = 200 * time.Millisecond })
	def("scale-drain-timeout", func() { c.ScaleDrainTimeout = 20 * time.Second })
	def("scale-memory-ops", func() { c.ScaleMemoryOps = 40 })
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
		if !contains(allScenarios, s) && !contains(curveScenarios, s) && s != "curves" {
			bad = append(bad, fmt.Sprintf("unknown scenario %q (have %s; and the scale ones, \"curves\" for all: %s)",
				s, strings.Join(allScenarios, ", "), strings.Join(curveScenarios, ", ")))
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
	return c.Uncontended > 0 && c.Duration > 0 && c.WatchdogTimeout >= 30*time.Millisecond && c.HandoffHold >= 0 && c.SemaphoreHold >= 0 &&
		c.ScaleWindow > 0 && c.ScaleDrainTimeout > 0
}

// countsValid reports whether every count is at least 1.
func (c config) countsValid() bool {
	for _, n := range []int{c.Handoffs, c.Goroutines, c.Clients, c.ManyGoroutines, c.ManyClients,
		c.ManyLocksGoroutines, c.ManyLocksClients, c.Permits, c.FanoutWaiters,
		c.FanoutRounds, c.WatchdogLocks, c.WatchdogManyLocks,
		c.ScaleLocks, c.ScaleWaitersPerLock, c.ScaleHandoffs, c.WatchdogTicks, c.Rounds,
		c.ScriptCalls, c.ServerCostOps, c.ScaleMemoryOps} {
		if n < 1 {
			return false
		}
	}
	return true
}

// scenario reports whether scenario name runs: with no -scenarios, every
// scenario but the scale ones; "curves" selects every scale scenario.
func (c config) scenario(name string) bool {
	if contains(curveScenarios, name) && contains(c.Scenarios, "curves") {
		return true
	}
	if len(c.Scenarios) == 0 {
		return !contains(curveScenarios, name)
	}
	return contains(c.Scenarios, name)
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
	fs.IntVar(&cfg.ServerCostOps, "server-cost-ops", cfg.ServerCostOps, "lock+unlock pairs of each library in the server-cost scenario (pipelined by one goroutine)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "turns the libraries of a lock scenario take: each runs 1/rounds of its measurement per turn")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the handoff hold times")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the tool (all clients) to `file`, for go tool pprof")
	sizes := map[string]*[]int{"scale-waiters": &cfg.ScaleWaiters, "scale-holds": &cfg.ScaleHolds,
		"scale-contended-locks": &cfg.ScaleLocksSizes, "scale-clients": &cfg.ScaleClients, "scale-masters": &cfg.ScaleMasters}
	sizeUsage := map[string]string{
		"scale-waiters":         "waiting goroutines of the waiters-* scale scenarios",
		"scale-holds":           "locks held by one client in the held-locks scale scenario",
		"scale-contended-locks": "locks (2 goroutines on each) of the contended-locks scale scenario",
		"scale-clients":         "client processes of the clients-* scale scenarios",
		"scale-masters":         "masters of the Clusters of the cluster-many-locks scale scenario",
	}
	for name, p := range sizes {
		fs.Func(name, "comma-separated sizes: "+sizeUsage[name]+" (default "+joinInts(*p)+")", func(v string) error {
			n, err := parseSizes(v)
			if err == nil {
				*p = n
			}
			return err
		})
	}
	fs.DurationVar(&cfg.ScaleWindow, "scale-window", cfg.ScaleWindow, "how long the cost of waiting is measured in the waiters-* scale scenarios")
	fs.DurationVar(&cfg.ScaleDrainTimeout, "scale-drain-timeout", cfg.ScaleDrainTimeout, "a waiters-* run whose waiters have not all held the lock by then, or a held-locks run that has not taken its locks by then, is cut (its row says how many did)")
	fs.BoolVar(&cfg.ClientsMarks, "clients-marks", cfg.ClientsMarks, "in clients-one-lock and clients-one-semaphore, each child writes its id into a mark key between Lock and Unlock (SET key id GET, on a connection of its own; its cost taken out of the rows' figures) to count cross-process handoffs; false leaves the marks out, and the count with them")
	fs.IntVar(&cfg.ScaleMemoryOps, "scale-memory-ops", cfg.ScaleMemoryOps, "operations of each primitive in the redis-memory scale scenario")
	fs.StringVar(&cfg.Charts, "charts", "charts", "directory, relative to -out's, where the SVG charts are drawn (\"\" for none)")
	fs.StringVar(&cfg.Redraw, "redraw", "", "draw the charts of an existing results.json `file` (into -charts next to it) and run nothing")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios to run (default all but the scale ones: "+strings.Join(allScenarios, ",")+"; scale scenarios, \"curves\" for all of them: "+strings.Join(curveScenarios, ",")+")")
	libraries := fs.String("libraries", "", "comma-separated libraries to run (redisync, redisync-fair, redisync-spin, redsync, redislock, redislock-linear10ms, redislock-default, rueidislock, pubsub-floor (handoff only), redisson-floor (uncontended, many-locks, scripts and clients-one-lock only); clients-one-semaphore runs redisync only; \"redisync\" selects all three of its kinds, \"redislock\" both strategies; default all)")
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

// joinInts formats sizes as a comma-separated list.
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
