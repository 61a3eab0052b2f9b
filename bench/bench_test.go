package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The clients-* scenarios re-execute the binary as child workers.
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	goleak.VerifyTestMain(m)
}

// wantRows are the (scenario, library) rows of a full run, in order.
var wantRows = func() [][2]string {
	rows := [][2]string{
		{scRTT, "go-redis"},
		{scUncontended, "redisync"}, {scUncontended, "redisync-fair"}, {scUncontended, "redisync-spin"},
		{scUncontended, "redsync"}, {scUncontended, "redislock"}, {scUncontended, "redislock-autopipeline"},
		{scUncontended, "rueidislock"}, {scUncontended, "redisson-floor"},
		{scHandoff, "redisync"}, {scHandoff, "redisync-spin"}, {scHandoff, "redsync"},
		{scHandoff, "redislock-linear10ms"}, {scHandoff, "redislock-default"}, {scHandoff, "rueidislock"}, {scHandoff, "pubsub-floor"},
	}
	for _, sc := range []string{scContended0, scContended1, scContended0Many, scContended1Many} {
		for _, lib := range []string{"redisync", "redisync-fair", "redisync-spin", "redsync", "redislock-linear10ms", "redislock-default", "rueidislock"} {
			rows = append(rows, [2]string{sc, lib})
		}
	}
	for _, lib := range []string{"redisync", "redisync-fair", "redisync-spin", "redsync", "redislock", "redislock-autopipeline", "rueidislock", "redisson-floor"} {
		rows = append(rows, [2]string{scManyLocks, lib})
	}
	for _, sc := range []string{scUncontendedReplica, scHandoffReplica, scManyLocksReplica} {
		rows = append(rows, [2]string{sc, "redisync"}, [2]string{sc, "redisync-nosync"})
	}
	return append(rows, [2]string{scSemaphore, "redisync"}, [2]string{scLatchFanout, "redisync"},
		[2]string{scScaleWaiters, "redisync"}, [2]string{scWatchdog1000, "redisync"},
		[2]string{scWatchdog10000, "redisync"},
		[2]string{scGCRA1, "redisync-gcra"}, [2]string{scGCRA1, "redis_rate"},
		[2]string{scGCRA64, "redisync-gcra"}, [2]string{scGCRA64, "redis_rate"},
		[2]string{scRateLimiter1000, "redisync-limiter"},
		[2]string{scServerCost, "redisync"}, [2]string{scServerCost, "evalsha-floor"},
		[2]string{scServerCost, "redislock"}, [2]string{scServerCost, "redisson-floor"})
}()

// TestQuickRun runs every scenario with tiny sizes against a redis-server
// the tool starts, and checks results.json and the table.
func TestQuickRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.json")
	var stdout, stderr bytes.Buffer
	if code := mainErr([]string{"-quick", "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	// results.json is an object: environment, results, targets.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("results.json is not a JSON object: %v", err)
	}
	for _, k := range []string{"environment", "results", "scripts", "targets"} {
		if _, ok := top[k]; !ok {
			t.Errorf("results.json has no %q", k)
		}
	}

	// The fields the issue names are present in every row, as numbers or
	// null.
	var generic []map[string]any
	if err := json.Unmarshal(top["results"], &generic); err != nil {
		t.Fatalf("results.json's results are not a list of objects: %v", err)
	}
	for i, obj := range generic {
		for _, k := range []string{"library", "scenario", "ops_per_sec", "p50_ms", "p99_ms", "commands_per_op"} {
			v, ok := obj[k]
			if !ok {
				t.Errorf("row %d: no %q", i, k)
				continue
			}
			switch k {
			case "library", "scenario":
				if _, ok := v.(string); !ok {
					t.Errorf("row %d: %q = %v, want a string", i, k, v)
				}
			default:
				if _, ok := v.(float64); !ok && v != nil {
					t.Errorf("row %d: %q = %v, want a number or null", i, k, v)
				}
			}
		}
	}

	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	results := rep.Results
	if rep.Environment.RTTp50ms <= 0 || rep.Environment.Redis == "" {
		t.Errorf("environment = %+v", rep.Environment)
	}
	// Every target is judged when every row ran, each a figure of the
	// plain lock's row, and a ratio where there is a reference.
	if len(rep.Targets) != 20 {
		t.Errorf("%d targets, want 20", len(rep.Targets))
	}
	for _, tg := range rep.Targets {
		if tg.Pass == nil || tg.Redisync == nil || (tg.Reference != nil) != (tg.Ratio != nil) || tg.Name == "" || tg.Target == "" {
			t.Errorf("target %+v", tg)
		}
	}
	var rows [][2]string
	for _, r := range results {
		rows = append(rows, [2]string{r.Scenario, r.Library})
	}
	if !slices.Equal(rows, wantRows) {
		t.Fatalf("rows = %v\nwant %v", rows, wantRows)
	}
	for _, r := range results {
		name := r.Scenario + "/" + r.Library
		base := strings.TrimSuffix(r.Scenario, "-replica") // the *-replica rows are their scenario's
		if r.Ops <= 0 {
			t.Errorf("%s: ops = %d", name, r.Ops)
		}
		if r.P50ms == nil || r.P99ms == nil || *r.P50ms <= 0 || *r.P99ms < *r.P50ms {
			t.Errorf("%s: p50 %v, p99 %v", name, r.P50ms, r.P99ms)
		}
		if r.CommandsPerOp == nil || *r.CommandsPerOp <= 0 || r.RoundTripsPerOp == nil || *r.RoundTripsPerOp <= 0 {
			t.Errorf("%s: commands/op %v, round trips/op %v", name, r.CommandsPerOp, r.RoundTripsPerOp)
		}
		if r.BytesInPerOp == nil || *r.BytesInPerOp <= 0 || r.BytesOutPerOp == nil || *r.BytesOutPerOp <= 0 {
			t.Errorf("%s: bytes in/out per op %v / %v", name, r.BytesInPerOp, r.BytesOutPerOp)
		}
		if r.ServerCPUusPerOp == nil || *r.ServerCPUusPerOp < 0 || r.KeysAddedPerOp == nil {
			t.Errorf("%s: Redis CPU per op %v, keys added per op %v", name, r.ServerCPUusPerOp, r.KeysAddedPerOp)
		}
		hasRate := r.Scenario == scRTT || base == scUncontended || strings.HasPrefix(r.Scenario, "contended-") || base == scManyLocks || r.Scenario == scSemaphore ||
			r.Scenario == scGCRA1 || r.Scenario == scGCRA64 || r.Scenario == scRateLimiter1000 || r.Scenario == scServerCost
		if hasRate != (r.OpsPerSec != nil) || (hasRate && *r.OpsPerSec <= 0) {
			t.Errorf("%s: ops_per_sec = %v", name, r.OpsPerSec)
		}
		if (r.Scenario == scRTT) != (r.P50RTT == nil) || (r.P50RTT != nil && *r.P50RTT <= 0) {
			t.Errorf("%s: p50_rtt = %v", name, r.P50RTT)
		}
		// The script pipelines' mean batch is measured on redisync's lock
		// rows.
		if lockRow := base == scUncontended || base == scHandoff || base == scManyLocks || strings.HasPrefix(r.Scenario, "contended-"); lockRow &&
			strings.HasPrefix(r.Library, "redisync") && (r.MeanBatch == nil || *r.MeanBatch < 1) {
			t.Errorf("%s: mean batch %v", name, r.MeanBatch)
		}
		// Allocations are measured on the uncontended rows only.
		if (base == scUncontended) != (r.AllocsPerOp != nil) || (r.AllocsPerOp != nil && (*r.AllocsPerOp <= 0 || *r.AllocBytesPerOp <= 0)) {
			t.Errorf("%s: allocs per op %v, bytes %v", name, r.AllocsPerOp, r.AllocBytesPerOp)
		}
		contended := strings.HasPrefix(r.Scenario, "contended-") || r.Scenario == scSemaphore
		if _, ok := r.Extra["busiest_goroutine_share"]; ok != contended {
			t.Errorf("%s: extra %v; want the fairness shares exactly on contended rows", name, r.Extra)
		}
		if contended {
			busiest, least, ideal := r.Extra["busiest_goroutine_share"], r.Extra["least_goroutine_share"], r.Extra["ideal_share"]
			goroutines := 16.0
			if strings.HasSuffix(r.Scenario, "-64") {
				goroutines = 64
			}
			if ideal != round4(1/goroutines) || busiest < ideal || least > ideal || busiest > 1 {
				t.Errorf("%s: busiest %v, least %v, ideal %v share", name, busiest, least, ideal)
			}
			if retake, ok := r.Extra["retake_share"]; !ok || retake < 0 || retake > 1 {
				t.Errorf("%s: re-take share %v (present: %v)", name, retake, ok)
			}
		}
	}

	// The scripts scenario: each operation's two scripts, each measured
	// alone, -quick's 40 calls each.
	wantScripts := [][2]string{
		{"redisync", "lock_acquire_fresh.lua"}, {"redisync", "lock_release_fresh.lua"},
		{"redisync", "lock_acquire.lua"}, {"redisync", "lock_release.lua"},
		{"redisync", "fair_acquire.lua"}, {"redisync", "fair_release.lua"},
		{"redisync", "rwlock_write_acquire_fresh.lua"}, {"redisync", "rwlock_write_release_fresh.lua"},
		{"redisync", "rwlock_read_acquire.lua"}, {"redisync", "rwlock_read_release.lua"},
		{"redisync", "semaphore_acquire.lua"}, {"redisync", "semaphore_release.lua"},
		{"redisync", "semaphore_permit_acquire.lua"}, {"redisync", "semaphore_permit_release.lua"},
		{"redisson-floor", "acquire"}, {"redisson-floor", "release"},
	}
	var gotScripts [][2]string
	for _, c := range rep.Scripts {
		gotScripts = append(gotScripts, [2]string{c.Library, c.Script})
		name := c.Library + "/" + c.Script
		if c.Calls != 40 || c.Note != "" || c.Operation == "" {
			t.Errorf("%s: %d calls (want 40), note %q, operation %q", name, c.Calls, c.Note, c.Operation)
		}
		if c.ExecUsPerCall == nil || *c.ExecUsPerCall <= 0 || c.ServerCPUusPerCall == nil || *c.ServerCPUusPerCall <= 0 ||
			c.CommandsPerCall == nil || *c.CommandsPerCall < 1 || c.BytesInPerCall == nil || *c.BytesInPerCall <= 0 {
			t.Errorf("%s: exec %v µs, CPU %v µs, %v commands, %v bytes in per call", name, c.ExecUsPerCall, c.ServerCPUusPerCall, c.CommandsPerCall, c.BytesInPerCall)
		}
	}
	if !slices.Equal(gotScripts, wantScripts) {
		t.Errorf("scripts = %v\nwant %v", gotScripts, wantScripts)
	}
	for _, c := range rep.Scripts {
		// redisson-floor's scripts call exactly Redisson's commands.
		var want map[string]float64
		switch {
		case c.Library == "redisson-floor" && c.Script == "acquire":
			want = map[string]float64{"exists": 1, "hincrby": 1, "pexpire": 1}
		case c.Library == "redisson-floor" && c.Script == "release":
			want = map[string]float64{"get": 1, "hexists": 1, "hincrby": 1, "del": 1, "publish": 1, "set": 1}
		default:
			continue
		}
		if !maps.Equal(c.Commands, want) {
			t.Errorf("redisson-floor %s: commands per call %v, want %v", c.Script, c.Commands, want)
		}
	}

	// Exact counts that do not depend on timing.
	for _, r := range results {
		switch {
		case r.Scenario == scRTT:
			if *r.RoundTripsPerOp != 1 || *r.CommandsPerOp != 1 || r.Commands["ping"] != 1 {
				t.Errorf("rtt: %v round trips, %v commands per PING (%v)", *r.RoundTripsPerOp, *r.CommandsPerOp, r.Commands)
			}
		case r.Scenario == scUncontended && r.Library == "rueidislock":
			// Two of its three keys' acquisition scripts before Lock
			// returns, the third's unless Unlock comes first, and a release
			// script per key.
			if got := *r.RoundTripsPerOp; got < 5 || got > 6 {
				t.Errorf("uncontended/%s: %v round trips per lock+unlock, want 5 to 6", r.Library, got)
			}
		case r.Scenario == scUncontended && r.Library == "redisson-floor":
			// Redisson's protocol: EVALSHA of the acquisition (EXISTS,
			// HINCRBY, PEXPIRE), EVALSHA of the release (GET, HEXISTS,
			// HINCRBY, DEL, PUBLISH, SET).
			want := map[string]float64{"evalsha": 2, "exists": 1, "hincrby": 2, "pexpire": 1, "get": 1, "hexists": 1, "del": 1, "publish": 1, "set": 1}
			if *r.RoundTripsPerOp != 2 || *r.CommandsPerOp != 11 || !maps.Equal(r.Commands, want) || *r.KeysAddedPerOp != 1 {
				t.Errorf("uncontended/redisson-floor: %v round trips, %v commands %v, %v keys added per lock+unlock; want 2, 11 %v, 1 (the unlock record)",
					*r.RoundTripsPerOp, *r.CommandsPerOp, r.Commands, *r.KeysAddedPerOp, want)
			}
		case r.Scenario == scUncontended:
			// Every other library locks and unlocks in one request each;
			// redisync's clients may also read the primary's replica count
			// in the background (once a second when it has none).
			if got := *r.RoundTripsPerOp; got < 2 || got > 2.01 || (got != 2 && !strings.HasPrefix(r.Library, "redisync")) {
				t.Errorf("uncontended/%s: %v round trips per lock+unlock, want 2", r.Library, got)
			}
		case r.Scenario == scWatchdog1000:
			// -quick holds 150 locks: two renewal scripts per tick, counted by Redis.
			if got := *r.ScriptCallsPerOp; got != 2 {
				t.Errorf("watchdog-1000: %v renewal scripts per tick, want 2", got)
			}
		case r.Scenario == scScaleWaiters:
			// -quick: 3 waiters on each of 20 locks, all in one client.
			// The memory per waiter is reported but not judged here: with
			// 60 waiters a GC can leave the in-use heap lower than before
			// them (spans freed meanwhile, CI measured -3,823 B), and the
			// runtime can shrink stacks (-1,092 B); the goroutines per
			// waiter are exact.
			x := r.Extra
			_, heap := x["heap_bytes_per_waiter"]
			_, stack := x["stack_bytes_per_waiter"]
			// Channels: per lock, the client's own (the lock's queue) and,
			// while the holder is not one the queue recorded, the lock's.
			if x["waiters"] != 60 || x["waiters_finished"] != 60 || x["pubsub_connections"] < 1 || x["pubsub_channels"] < 20 || x["pubsub_channels"] > 40 ||
				!heap || !stack || x["goroutines_per_waiter"] < 1 || r.Ops != 10 {
				t.Errorf("scale-waiters: %d handoffs, extra %v", r.Ops, x)
			}
		case r.Scenario == scWatchdog10000:
			// -quick holds 450 locks: five renewal scripts per tick.
			if got := *r.ScriptCallsPerOp; got != 5 || r.Extra["held_locks"] != 450 {
				t.Errorf("watchdog-10000: %v renewal scripts per tick for %v locks, want 5 for 450", got, r.Extra["held_locks"])
			}
			if r.Extra["commands_per_lock"] <= 0 || r.Extra["server_cpu_us_per_lock"] <= 0 {
				t.Errorf("watchdog-10000: per lock %v", r.Extra)
			}
		case r.Scenario == scHandoff && r.Library == "redisync":
			// Lock, try (joins the lock's queue at once: the waiter's
			// channel is still subscribed from its previous cycle, the
			// subscription lingering a second: docs/wake.md; the holder,
			// which took the lock while nobody waited, is not the one the
			// queue recorded, so the waiter, first in the queue, listens
			// on the lock's channel too), subscribe, try, unlock, try,
			// unlock, unsubscribe (the lock's channel; its own lingers);
			// and each client's INFO replication (replica
			// acknowledgement: read at its first script, then every
			// second), a fraction per cycle, and a cycle whose waiter's
			// subscription had run out (3 more: subscribe, try,
			// unsubscribe).
			if got := *r.RoundTripsPerOp; got < 8 || got > 9 {
				t.Errorf("handoff/redisync: %v round trips per cycle, want 8 (9 at most with the replica probes and a subscription run out)", got)
			}
		}
	}

	table := stdout.String()
	if !strings.Contains(table, "| scenario | library | ops/s | p50 ms | p99 ms | p50/rtt |") {
		t.Errorf("no table header in:\n%s", table)
	}
	for _, row := range wantRows {
		if !strings.Contains(table, "| "+row[0]+" | "+row[1]+" |") {
			t.Errorf("no row %v in the table", row)
		}
	}
	if !strings.Contains(table, "| library | script | run by | calls | exec µs/call |") ||
		!strings.Contains(table, "| redisync | lock_acquire_fresh.lua | rlock.Lock, no context owner") ||
		!strings.Contains(table, "| redisson-floor | release | redisson-floor Unlock | 40 |") {
		t.Errorf("no scripts table in:\n%s", table)
	}
	if !strings.Contains(table, "Targets (ratios within this run") || !strings.Contains(table, "| uncontended ops/s vs redisson-floor |") ||
		!strings.Contains(table, "| uncontended allocations per lock+unlock |") {
		t.Errorf("no targets section in:\n%s", table)
	}
	// The output is for users: no issue numbers.
	if regexp.MustCompile(`(?i)issue \d`).MatchString(table) {
		t.Errorf("the output mentions an issue number:\n%s", table)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

// startTestServer starts the tool's redis-server, stopped when the test
// ends, and returns it with the binary it runs.
func startTestServer(t *testing.T) (*server, string) {
	t.Helper()
	bin, err := findRedisServer()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServer(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv, bin
}

// TestExternalRedis runs one scenario against a server given with -redis
// and checks the tool deletes the keys it created.
func TestExternalRedis(t *testing.T) {
	srv, _ := startTestServer(t)
	var stdout, stderr bytes.Buffer
	code := mainErr([]string{"-quick", "--redis", srv.addr, "-out", "", "-scenarios", "uncontended,latch-fanout", "-libraries", "redisync,redislock"},
		&stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	for _, row := range []string{"| uncontended | redisync |", "| uncontended | redislock |", "| latch-fanout | redisync |"} {
		if !strings.Contains(stdout.String(), row) {
			t.Errorf("no %q row in:\n%s", row, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "| uncontended | redsync |") {
		t.Errorf("-libraries ignored:\n%s", stdout.String())
	}
	rdb, _ := newClient(srv.addr)
	defer rdb.Close()
	keys, err := rdb.Keys(t.Context(), "*redisync-bench*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("keys left behind: %v", keys)
	}
}

func TestServerStop(t *testing.T) {
	srv, _ := startTestServer(t)
	srv.stop()
	select {
	case <-srv.done:
	default:
		t.Fatal("redis-server still running after stop")
	}
	if _, err := os.Stat(srv.dir); !os.IsNotExist(err) {
		t.Errorf("directory %s left behind", srv.dir)
	}
	if c, err := net.DialTimeout("tcp", srv.addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections", srv.addr)
	}
	srv.stop() // idempotent
}

// TestForeignServerNotTakenForOurs: when another process's redis-server
// holds the port, the tool's own server fails to start instead of the
// foreign one being benchmarked.
func TestForeignServerNotTakenForOurs(t *testing.T) {
	other, bin := startTestServer(t)
	_, port, _ := net.SplitHostPort(other.addr)
	p, _ := strconv.Atoi(port)
	if srv, err := startServerOn(bin, p); err == nil {
		srv.stop()
		t.Fatalf("started on %s, which another redis-server holds", other.addr)
	} else if !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("error %v; want one that shows the lost bind", err)
	}
}

func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	cfg, err := parseFlags([]string{"-quick", "-handoffs", "50"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Handoffs != 50 {
		t.Errorf("-quick overrode an explicit -handoffs: %d", cfg.Handoffs)
	}
	if cfg.Duration != 200*time.Millisecond {
		t.Errorf("-quick duration = %v", cfg.Duration)
	}
	def, err := parseFlags(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if def.Handoffs != 200 || def.Goroutines != 16 || def.Clients != 4 || def.ManyGoroutines != 64 || def.ManyClients != 16 ||
		def.ManyLocksGoroutines != 256 || def.ManyLocksClients != 4 || def.WatchdogLocks != 1000 || def.ScriptCalls != 2000 ||
		def.Out != "results.json" {
		t.Errorf("defaults = %+v", def)
	}
	for _, args := range [][]string{
		{"-scenarios", "handoff,nope"},
		{"-handoffs", "0"},
		{"-script-calls", "0"},
		{"-duration", "-1s"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	if code := mainErr([]string{"-scenarios", "nope"}, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("bad flag: exit status %d, want 2", code)
	}
	if !cfg.library("redislock-default") || !cfg.library("redisync") {
		t.Error("no -libraries must select every library")
	}
	cfg.Libraries = []string{"redisync"}
	if !cfg.library("redisync-fair") || !cfg.library("redisync-spin") || cfg.library("redsync") {
		t.Error("-libraries redisync must select its three lock kinds and nothing else")
	}
	cfg.Libraries = []string{"redislock"}
	if !cfg.library("redislock-linear10ms") || cfg.library("redisync") || cfg.library("rueidislock") {
		t.Error("-libraries redislock must select both redislock strategies and nothing else")
	}
	cfg.Libraries = []string{"redisson-floor"}
	if !cfg.library("redisson-floor") || cfg.library("redisync") || cfg.library("redislock") {
		t.Error("-libraries redisson-floor must select redisson-floor and nothing else")
	}
	cfg.Libraries = []string{"rueidislock"}
	if !cfg.library("rueidislock") || cfg.library("redislock") || cfg.library("redislock-default") {
		t.Error("-libraries rueidislock must select rueidislock and nothing else")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(d, 0.5); got != 100*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := percentile(d, 0.99); got != 198*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

func TestGroupTicks(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) renewCall {
		s := t0.Add(time.Duration(ms) * time.Millisecond)
		return renewCall{start: s, end: s.Add(time.Millisecond), scripts: 1}
	}
	ticks := groupTicks([]renewCall{at(1005), at(0), at(2), at(1000), at(2001)}, 500*time.Millisecond)
	var sizes []int
	for _, tk := range ticks {
		sizes = append(sizes, len(tk))
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) {
		t.Errorf("tick sizes = %v, want [2 2 1]", sizes)
	}
}

func TestRound4(t *testing.T) {
	for in, want := range map[float64]float64{0: 0, 1234.567: 1235, 0.123456: 0.1235, 12.3456: 12.35, 2: 2} {
		if got := round4(in); got != want {
			t.Errorf("round4(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestTargets(t *testing.T) {
	row := func(sc, lib string, ops, p50, trips, cpu float64) Result {
		return Result{Scenario: sc, Library: lib, OpsPerSec: &ops, P50ms: &p50, RoundTripsPerOp: &trips, ServerCPUusPerOp: &cpu}
	}
	allocs := func(r Result, n float64) Result { r.AllocsPerOp = &n; return r }
	results := []Result{
		row(scRTT, "go-redis", 30000, 0.1, 1, 10),
		allocs(row(scUncontended, "redisync", 950, 0.13, 2, 115), 30),
		row(scUncontended, "redislock", 2000, 0.1, 2, 50), // a peer, not the reference
		row(scUncontended, "redisson-floor", 1000, 0.1, 2, 100),
		row(scHandoff, "redisync", 0, 0.7, 8, 40),
		row(scHandoff, "pubsub-floor", 0, 0.5, 3, 20),
		// rueidislock is the fastest peer, so the reference; redisync's own
		// kinds are no peers.
		row(scContended0, "redisync", 2000, 1, 3, 20),
		row(scContended0, "redsync", 1500, 1, 2, 4),
		row(scContended0, "redislock-linear10ms", 1800, 1, 2, 5),
		row(scContended0, "rueidislock", 2500, 1, 10, 30),
		row(scContended0, "redisync-spin", 9000, 1, 2, 13),
		row(scContended0, "redisync-fair", 1200, 1, 2, 13),
		row(scManyLocks, "redisync", 1500, 1, 2, 10),
		row(scManyLocksReplica, "redisync", 1200, 1, 2, 10),
		row(scManyLocks, "redislock", 1000, 1, 2, 10),
		row(scManyLocks, "redisson-floor", 5000, 1, 2, 10),          // a floor, not a peer
		row(scManyLocks, "redislock-autopipeline", 9000, 1, 0.1, 5), // no peer: not the best peer
		row(scServerCost, "redisync", 5000, 1, 0.1, 8),
		row(scServerCost, "redislock", 9000, 1, 0.1, 5),
		row(scSemaphore, "redisync", 100, 1, 3.5, 10),
	}
	targets := evaluateTargets(results)
	if len(targets) != 20 {
		t.Errorf("%d targets, want 20", len(targets))
	}
	byName := map[string]Target{}
	for _, tg := range targets {
		byName[tg.Name] = tg
	}
	check := func(name string, pass *bool, ref float64, refOf string) {
		t.Helper()
		tg, ok := byName[name]
		if !ok {
			t.Fatalf("no target %q", name)
		}
		if (pass == nil) != (tg.Pass == nil) || (pass != nil && *pass != *tg.Pass) {
			t.Errorf("%s: pass %v, want %v", name, tg.Pass, pass)
		}
		if ref != 0 && (tg.Reference == nil || *tg.Reference != ref || tg.ReferenceOf != refOf) {
			t.Errorf("%s: reference %v (%s), want %v (%s)", name, tg.Reference, tg.ReferenceOf, ref, refOf)
		}
	}
	yes, no := true, false
	check("uncontended ops/s vs redisson-floor", &yes, 1000, "redisson-floor")                                      // 0.95 exactly
	check("uncontended Redis CPU per lock+unlock vs redisson-floor", &yes, 100, "redisson-floor")                   // 1.15 exactly
	check("uncontended allocations per lock+unlock", &yes, 0, "")                                                   // 30 exactly
	check("many-locks ops/s vs the best peer", &yes, 1000, "best peer: redislock")                                  // 1.5 exactly
	check("many-locks Redis CPU per lock+unlock vs the best peer", &yes, 10, "best peer: redislock")                // 1.0 exactly
	check("many-locks with a replica (sync on) ops/s vs the best peer without", &yes, 1000, "best peer: redislock") // 1.2 exactly
	check("handoff p50 vs pubsub-floor", &no, 0.5, "pubsub-floor")                                                  // 1.4×
	check("contended-0ms ops/s vs the best peer", &no, 2500, "best peer: rueidislock")
	check("contended-0ms round trips per acquisition", &yes, 0, "")
	check("contended-1ms ops/s vs the best peer", nil, 0, "")
	check("contended-1ms-64 round trips per acquisition", nil, 0, "")
	check("fair lock contended-0ms ops/s vs the plain lock", &yes, 2000, "redisync (plain lock)") // 0.6 exactly
	check("semaphore round trips per acquisition", &no, 0, "")
	check("uncontended ops/s vs redislock", &no, 2000, "redislock")                                           // 0.475×
	check("many-locks Redis CPU per lock+unlock vs redislock-autopipeline", &no, 5, "redislock-autopipeline") // 2×
	check("server-cost Redis CPU per lock+unlock vs redislock", &yes, 5, "redislock")                         // 1.6 exactly
	if tg := byName["fair lock contended-0ms ops/s vs the plain lock"]; tg.Library != "redisync-fair" || *tg.Redisync != 1200 {
		t.Errorf("fair lock target judges %s's %v, want redisync-fair's 1200", tg.Library, tg.Redisync)
	}
}

// TestFitExponent checks the growth fit on exact power laws.
func TestFitExponent(t *testing.T) {
	for _, k := range []float64{0, 1, -1, 0.5, 2} {
		sizes := []float64{10, 100, 1000, 10000}
		var vals []float64
		for _, s := range sizes {
			vals = append(vals, 3*math.Pow(s, k))
		}
		got := fitExponent(sizes, vals)
		if got == nil || math.Abs(*got-k) > 0.005 {
			t.Errorf("k = %v: fitted %v", k, got)
		}
	}
	if got := fitExponent([]float64{10, 100}, []float64{0, 5}); got != nil {
		t.Errorf("one positive point: fitted %v, want none", *got)
	}
}

// TestSubtractMarks checks that the marks' cost leaves a row's figures.
func TestSubtractMarks(t *testing.T) {
	u := usage{cpu: 1000 * time.Microsecond, childCPU: 3000 * time.Microsecond, commands: 50, bytesIn: 900, bytesOut: 400, keys: 11,
		byCommand: map[string]int64{"set": 10, "evalsha": 40}, usecBy: map[string]int64{"set": 30, "evalsha": 400}}
	u.subtractMarks(10, markCost{serverCPU: 15 * time.Microsecond, clientCPU: 20 * time.Microsecond, usec: 2, bytesIn: 50, bytesOut: 20})
	if u.cpu != 850*time.Microsecond || u.childCPU != 2800*time.Microsecond || u.commands != 40 || u.bytesIn != 400 || u.bytesOut != 200 || u.keys != 10 {
		t.Errorf("after the marks: %+v", u)
	}
	if _, ok := u.byCommand["set"]; ok || u.byCommand["evalsha"] != 40 || u.usecBy["evalsha"] != 400 {
		t.Errorf("commands after the marks: %v, %v", u.byCommand, u.usecBy)
	}
}

// TestOnLock checks a clients-one row's figures from its processes'.
func TestOnLock(t *testing.T) {
	m := &merged{pairs: 300, cross: 150, procs: []ProcessFigures{
		{Acquisitions: 200, CrossProcessHandoffs: 100, LongestWaitMs: 3},
		{Acquisitions: 100, CrossProcessHandoffs: 50, LongestWaitMs: 9},
		{Acquisitions: 0, LongestWaitMs: 2000},
	}}
	r := Result{Extra: map[string]float64{}}
	m.onLock(&r, 3, 2*time.Second)
	want := map[string]float64{"cross_process_handoffs_per_s": 75, "cross_process_share": 0.5, "min_acquisitions_per_process": 0,
		"max_acquisitions_per_process": 200, "fair_share_per_process": 100, "min_to_fair_share": 0, "max_to_fair_share": 2,
		"processes_without_acquisition": 1, "longest_wait_ms": 2000}
	for k, v := range want {
		if r.Extra[k] != v {
			t.Errorf("%s = %v, want %v", k, r.Extra[k], v)
		}
	}
	if !strings.Contains(r.Note, "1 of 3 processes took none") || len(r.Processes) != 3 {
		t.Errorf("note %q, %d processes", r.Note, len(r.Processes))
	}
}

// TestQuickCurves runs the scale scenarios with tiny sizes for redisync
// and redislock, and checks their rows, curves (with exponents) and
// charts.
func TestQuickCurves(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "results.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-scenarios", "curves", "-libraries", "redisync,redislock", "-out", out}
	if code := mainErr(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, r := range rep.Results {
		if _, ok := r.Extra["size"]; ok || r.Scenario == scMemory {
			rows[r.Scenario+" "+r.Library]++
		}
	}
	for _, sc := range []string{scWaiters1, scWaiters16, scHolds, scContendedLocks, scClientsOne, scClientsSem, scClientsMany, scClusterMasters} {
		if rows[sc+" redisync"] != 2 {
			t.Errorf("%s: %d redisync rows, want 2 (one per size)", sc, rows[sc+" redisync"])
		}
	}
	if rows[scClientsOne+" redisync-fair"] != 2 {
		t.Errorf("%s: %d redisync-fair rows, want 2", scClientsOne, rows[scClientsOne+" redisync-fair"])
	}
	// The rows on one lock or semaphore count each process's
	// acquisitions, the cross-process handoffs and the marks.
	for _, r := range rep.Results {
		if r.Scenario != scClientsOne && r.Scenario != scClientsSem {
			continue
		}
		var acq, cross int64
		for _, p := range r.Processes {
			acq += p.Acquisitions
			cross += p.CrossProcessHandoffs
		}
		c := r.Extra["clients"]
		if len(r.Processes) != int(c) || acq != r.Ops || float64(cross) != r.Extra["cross_process_handoffs"] || r.Ops == 0 {
			t.Errorf("%s %s C=%v: %d processes, %d acquisitions (row %d), %d cross (row %v)",
				r.Scenario, r.Library, c, len(r.Processes), acq, r.Ops, cross, r.Extra["cross_process_handoffs"])
		}
		if r.Extra["marks"] < float64(r.Ops) || r.Extra["mark_redis_cpu_us_each"] <= 0 || r.Extra["longest_wait_ms"] <= 0 {
			t.Errorf("%s %s C=%v: marks %v for %d acquisitions, a mark's Redis CPU %v µs, longest wait %v ms",
				r.Scenario, r.Library, c, r.Extra["marks"], r.Ops, r.Extra["mark_redis_cpu_us_each"], r.Extra["longest_wait_ms"])
		}
		if c == 1 && cross != 0 {
			t.Errorf("%s %s: %d cross-process handoffs with one process", r.Scenario, r.Library, cross)
		}
	}
	if !strings.Contains(stdout.String(), "Client processes on one lock or semaphore") {
		t.Error("the table has no clients section")
	}
	if rows[scMemory+" redisync"] != 1 || rows[scMemory+" redislock"] != 1 {
		t.Errorf("redis-memory rows: %v", rows)
	}
	exps := 0
	for _, c := range rep.Curves {
		if c.Exponent != nil {
			exps++
		}
	}
	if exps == 0 {
		t.Error("no curve has an exponent")
	}
	if !strings.Contains(stdout.String(), "Scale curves") {
		t.Error("the table has no scale curves")
	}
	charts, _ := filepath.Glob(filepath.Join(dir, "charts", "*.svg"))
	if len(charts) == 0 {
		t.Error("no chart drawn")
	}
	for _, r := range rep.Results {
		if r.Scenario == scWaiters1 && r.Library == "redisync" && r.Extra["waiters_finished"] != r.Extra["size"] {
			t.Errorf("waiters: %v of %v held the lock", r.Extra["waiters_finished"], r.Extra["size"])
		}
	}
}
