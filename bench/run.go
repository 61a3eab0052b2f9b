package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// bench is one run's state.
type bench struct {
	cfg    config
	addr   string
	meter  *redis.Client // takes the INFO snapshots; sends nothing else
	log    io.Writer
	prefix string // of every key the run creates
	// replicated: this bench runs the *-replica scenarios on the
	// replicated server (replicated.go); replicaAddr is that server's
	// address in the main bench ("" when it has none).
	replicated  bool
	replicaAddr string
}

// key returns a key of this run.
func (b *bench) key(parts ...string) string {
	return b.prefix + strings.Join(parts, ":")
}

// run runs the selected scenarios against the Redis at addr (the
// *-replica ones against the primary with a replica at replicaAddr, ""
// for none), reporting progress to log. It returns the rows, the scripts
// scenario's figures and the environment.
func run(ctx context.Context, cfg config, addr, replicaAddr string, log io.Writer) ([]Result, []ScriptCost, env, error) {
	b := &bench{
		cfg:         cfg,
		addr:        addr,
		meter:       redis.NewClient(clientOptions(addr)),
		log:         log,
		prefix:      fmt.Sprintf("redisync-bench:%x:", time.Now().UnixNano()),
		replicaAddr: replicaAddr,
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
	for _, sc := range curveScenarios {
		if !cfg.scenario(sc) {
			continue
		}
		rows, err := b.curveScenario(ctx, sc)
		t.results = append(t.results, rows...)
		if err != nil {
			return t.results, t.scripts, e, fmt.Errorf("%s: %w", sc, err)
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
	case scUncontended, scHandoff, scContended0, scContended1, scContended0Many, scContended1Many, scManyLocks,
		scUncontendedReplica, scHandoffReplica, scManyLocksReplica:
		rs, err := b.lockRows(ctx, sc)
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
	case scGCRA1, scGCRA64, scRateLimiter1000, scServerCost: // ratelimit.go, servercost.go
		rs, err := b.rateLimitOrServerCost(ctx, sc)
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

// rateLimitOrServerCost runs a rate limiter scenario (ratelimit.go) or
// the server-cost scenario (servercost.go): a row per library.
func (b *bench) rateLimitOrServerCost(ctx context.Context, sc string) ([]Result, error) {
	if sc == scServerCost {
		return b.serverCost(ctx)
	}
	return b.rateLimit(ctx, sc)
}

// curveScenario runs scale scenario sc (curves.go) at each of its sizes.
func (b *bench) curveScenario(ctx context.Context, sc string) ([]Result, error) {
	switch sc {
	case scWaiters1:
		return b.waitersCurve(ctx, sc, 1)
	case scWaiters16:
		return b.waitersCurve(ctx, sc, 16)
	case scHolds:
		return b.holdsCurve(ctx)
	case scContendedLocks:
		return b.contendedLocksCurve(ctx)
	case scClientsOne, scClientsSem, scClientsMany:
		return b.clientsCurve(ctx, sc)
	case scMemory:
		return b.memoryCurve(ctx)
	case scClusterMasters:
		return b.clusterCurve(ctx)
	}
	return nil, errors.New("not a scale scenario")
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
	for _, lib := range b.libraries(sc) {
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
	if r.MeanBatch != nil {
		parts = append(parts, "mean batch "+num(r.MeanBatch, 1))
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
