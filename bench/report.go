package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Scenario names, as in results.json.
const (
	scUncontended = "uncontended"
	scHandoff     = "handoff"
	scContended0  = "contended-0ms"
	scContended1  = "contended-1ms"
	// The contended scenarios with ManyGoroutines over ManyClients (64
	// over 16 by default).
	scContended0Many = "contended-0ms-64"
	scContended1Many = "contended-1ms-64"
	// ManyLocksGoroutines goroutines, each on a lock of its own.
	scManyLocks = "many-locks"
	// The uncontended, handoff and many-locks scenarios of redisync on a
	// second server with one replica attached, replica acknowledgement on
	// (its default): replicated.go.
	scUncontendedReplica = "uncontended-replica"
	scHandoffReplica     = "handoff-replica"
	scManyLocksReplica   = "many-locks-replica"
	scSemaphore          = "semaphore"
	scLatchFanout        = "latch-fanout"
	scWatchdog1000       = "watchdog-1000"
	scWatchdog10000      = "watchdog-10000"
)

// allScenarios lists every scenario in the order they run.
var allScenarios = []string{scUncontended, scHandoff, scContended0, scContended1, scContended0Many, scContended1Many, scManyLocks,
	scUncontendedReplica, scHandoffReplica, scManyLocksReplica, scScripts, scSemaphore, scLatchFanout, scScaleWaiters, scWatchdog1000, scWatchdog10000}

// Result is one row of results.json: one library in one scenario. Fields
// that do not apply to a scenario are null.
type Result struct {
	Library  string `json:"library"`
	Scenario string `json:"scenario"`
	// OpsPerSec is operations per second: lock+unlock pairs (uncontended,
	// many-locks), acquisitions (contended-*, semaphore); null for handoff,
	// latch-fanout, scale-waiters and watchdog-*, which measure time or
	// cost.
	OpsPerSec *float64 `json:"ops_per_sec"`
	// P50ms and P99ms are quantiles, in milliseconds, of what Latency says.
	P50ms *float64 `json:"p50_ms"`
	P99ms *float64 `json:"p99_ms"`
	// P50RTT is P50ms as a multiple of the rtt row's p50 (the PING round
	// trip measured at the start of the run); null on the rtt row.
	P50RTT *float64 `json:"p50_rtt"`
	// CommandsPerOp is every command Redis executed per operation, from
	// INFO commandstats, including the commands run inside Lua scripts
	// (Redis counts those too) and pub/sub (un)subscribes.
	CommandsPerOp *float64 `json:"commands_per_op"`
	// RoundTripsPerOp is requests the clients sent per operation: each
	// command or pipeline they sent (counted by a go-redis hook) plus the
	// SUBSCRIBE/UNSUBSCRIBE commands of their pub/sub connections (from
	// commandstats; pub/sub bypasses hooks).
	RoundTripsPerOp *float64 `json:"round_trips_per_op"`
	// ScriptCallsPerOp is EVALSHA+EVAL calls per operation, from
	// commandstats.
	ScriptCallsPerOp *float64 `json:"script_calls_per_op"`
	// BytesInPerOp and BytesOutPerOp are total_net_input_bytes and
	// total_net_output_bytes deltas per operation (pub/sub messages
	// included), less the measurement's own INFO traffic.
	BytesInPerOp  *float64 `json:"bytes_in_per_op"`
	BytesOutPerOp *float64 `json:"bytes_out_per_op"`
	// ServerCPUusPerOp is the CPU time (user + sys, INFO cpu) the
	// redis-server process used per operation, in microseconds: script
	// execution, command processing and socket I/O.
	ServerCPUusPerOp *float64 `json:"server_cpu_us_per_op"`
	// ClientCPUusPerOp is the CPU time (user + sys, getrusage) the bench
	// process used per operation while the row ran, in microseconds:
	// every client of the row's library, its go-redis (or rueidis)
	// clients and the bench's own loop. The libraries of a scenario take
	// turns, so each row's figure is its own library's; the meter's INFO
	// snapshots add a little. In the clients-curve rows it is the child
	// worker processes' CPU (they report their own getrusage).
	ClientCPUusPerOp *float64 `json:"client_cpu_us_per_op"`
	// KeysAddedPerOp is the growth of the key count per operation (INFO
	// keyspace): keys an operation leaves behind until they expire, such
	// as redisync's retry-safety records.
	KeysAddedPerOp *float64 `json:"keys_added_per_op"`
	// AllocsPerOp and AllocBytesPerOp are the heap allocations (count
	// and bytes) the tool's process made per operation while the
	// operations ran (runtime.MemStats Mallocs and TotalAlloc deltas around
	// the measured loop): the library's and its go-redis client's, on the
	// uncontended rows only (null elsewhere). Other goroutines of the
	// process are idle then, but what they allocate is counted too.
	AllocsPerOp     *float64 `json:"allocs_per_op"`
	AllocBytesPerOp *float64 `json:"alloc_bytes_per_op"`
	// MeanBatch is the mean number of script calls per batch of redisync's
	// script pipelines (a Client's calls to one primary that went
	// together in one round trip) while the row ran; null for the other
	// libraries.
	MeanBatch *float64 `json:"mean_batch,omitempty"`
	// Op says what one operation is, Latency what the quantiles measure.
	Op      string `json:"op"`
	Latency string `json:"latency"`
	// Ops is how many operations were measured, Seconds over how long.
	Ops     int64   `json:"ops"`
	Seconds float64 `json:"seconds"`
	// Wait is the waiting strategy used.
	Wait string `json:"wait,omitempty"`
	// GaveUp counts lock calls that returned without the lock while the
	// scenario still ran (redsync after its default 32 tries, redislock
	// when its retry strategy ran out), each called again at once.
	GaveUp int64 `json:"gave_up"`
	// Commands is CommandsPerOp by command name.
	Commands map[string]float64 `json:"commands_per_op_by_name,omitempty"`
	// ExecUs is the execution time Redis recorded per operation by
	// command name (INFO commandstats usec), in microseconds. A script's
	// time includes that of the commands it ran, which are also listed
	// under their own names.
	ExecUs map[string]float64 `json:"exec_us_per_op_by_name,omitempty"`
	// Extra holds scenario-specific figures (fan-out, ticks).
	Extra map[string]float64 `json:"extra,omitempty"`
	// Processes are the figures of each child process of a
	// clients-one-lock or clients-one-semaphore row, in the order they
	// were started.
	Processes []ProcessFigures `json:"processes,omitempty"`
	Note      string           `json:"note,omitempty"`
}

// f rounds v to 4 significant digits (at least 3 decimals below 1) and
// returns a pointer for the JSON fields.
func f(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	r := round4(v)
	return &r
}

func round4(v float64) float64 {
	if v == 0 {
		return 0
	}
	digits := 4 - int(math.Floor(math.Log10(math.Abs(v)))) - 1
	digits = max(digits, 0)
	s := strconv.FormatFloat(v, 'f', digits, 64)
	r, _ := strconv.ParseFloat(s, 64)
	return r
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perOp fills the cost fields of r from u over ops operations.
func (r *Result) perOp(u usage, ops int64) {
	if ops <= 0 {
		return
	}
	n := float64(ops)
	r.CommandsPerOp = f(float64(u.commands) / n)
	r.RoundTripsPerOp = f(float64(u.requests) / n)
	r.ScriptCallsPerOp = f(float64(u.scripts) / n)
	r.BytesInPerOp = f(float64(u.bytesIn) / n)
	r.BytesOutPerOp = f(float64(u.bytesOut) / n)
	r.ServerCPUusPerOp = f(float64(u.cpu) / float64(time.Microsecond) / n)
	r.ClientCPUusPerOp = f(float64(u.clientCPU+u.childCPU) / float64(time.Microsecond) / n)
	r.KeysAddedPerOp = f(float64(u.keys) / n)
	if u.batches > 0 {
		r.MeanBatch = f(float64(u.batchCalls) / float64(u.batches))
	}
	r.Commands = map[string]float64{}
	r.ExecUs = map[string]float64{}
	for name, c := range u.byCommand {
		r.Commands[name] = round4(float64(c) / n)
		r.ExecUs[name] = round4(float64(u.usecBy[name]) / n)
	}
}

// quantiles fills P50ms and P99ms from sorted durations.
func (r *Result) quantiles(sorted []time.Duration) {
	if len(sorted) == 0 {
		return
	}
	r.P50ms = f(ms(percentile(sorted, 0.50)))
	r.P99ms = f(ms(percentile(sorted, 0.99)))
}

// Report is what results.json holds: where the run happened, its rows,
// and the targets checked on them.
type Report struct {
	Environment env      `json:"environment"`
	Results     []Result `json:"results"`
	// Scripts is the scripts scenario's table: each script's cost per
	// call.
	Scripts []ScriptCost `json:"scripts"`
	Targets []Target     `json:"targets"`
	// Curves are the scale scenarios' figures against their sizes, each
	// with its fitted growth exponent (curves.go); empty when none ran.
	Curves []Curve `json:"curves"`
}

// writeJSON writes the report to path through a temporary file, so that
// an interrupted run never leaves a truncated results.json.
func writeJSON(path string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// env describes where a run happened, for the table's heading.
type env struct {
	CPUs     int     `json:"cpus"`
	CPU      string  `json:"cpu"`
	Redis    string  `json:"redis"`
	Go       string  `json:"go"`
	OS       string  `json:"os"`
	Server   string  `json:"server"`     // "started by the tool" or the -redis address
	RTTp50ms float64 `json:"rtt_p50_ms"` // the rtt row's p50
}

// writeMarkdown prints the results as a markdown table, with the
// environment above it and what each scenario measures below it, then the
// scripts scenario's table and the targets.
func writeMarkdown(w io.Writer, e env, results []Result, scripts []ScriptCost, targets []Target, curves []Curve, outPath string) {
	fmt.Fprintf(w, "Machine: %d × %s, %s; Redis %s (%s), PING round trip p50 %s ms (the rtt row); %s.\n\n",
		e.CPUs, e.CPU, e.OS, e.Redis, e.Server, num(f(e.RTTp50ms), 3), e.Go)
	fmt.Fprintln(w, "| scenario | library | ops/s | p50 ms | p99 ms | p50/rtt | round trips/op | commands/op | busiest / ideal share % | bytes in/out per op | Redis CPU µs/op | client CPU µs/op | allocs/op | notes |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	var legend []string
	seen := map[string]bool{}
	for _, r := range results {
		var notes []string
		if r.Wait != "" {
			notes = append(notes, r.Wait)
		}
		if r.GaveUp > 0 {
			notes = append(notes, fmt.Sprintf("%d lock calls gave up and were called again", r.GaveUp))
		}
		if r.MeanBatch != nil {
			notes = append(notes, "mean batch "+num(r.MeanBatch, 1)+" calls")
		}
		if v, ok := r.Extra["retake_share"]; ok {
			notes = append(notes, "re-takes "+num(f(100*v), 0)+" %")
		}
		if r.Note != "" {
			notes = append(notes, r.Note)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Library, num(r.OpsPerSec, 0), num(r.P50ms, 3), num(r.P99ms, 3), num(r.P50RTT, 1),
			num(r.RoundTripsPerOp, 2), num(r.CommandsPerOp, 1), shareCell(r), bytesCell(r), num(r.ServerCPUusPerOp, 0),
			num(r.ClientCPUusPerOp, 0), num(r.AllocsPerOp, 1), strings.Join(notes, "; "))
		if !seen[r.Scenario] {
			seen[r.Scenario] = true
			legend = append(legend, fmt.Sprintf("- %s: op = %s; p50/p99 = %s.", r.Scenario, r.Op, r.Latency))
		}
	}
	fmt.Fprintln(w)
	for _, l := range legend {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "- p50/rtt: p50 as a multiple of the rtt row's p50;")
	fmt.Fprintln(w, "  busiest / ideal share: the share of the acquisitions the busiest goroutine made, and 1/goroutines;")
	fmt.Fprintln(w, "  re-takes (contended rows): the share of the acquisitions made by the goroutine that made the one before —")
	fmt.Fprintln(w, "    the releaser taking the lock again at once, past the goroutines waiting, where a handoff gives it to one of them;")
	fmt.Fprintln(w, "  round trips/op: requests the clients sent (each command or pipeline, plus pub/sub SUBSCRIBE/UNSUBSCRIBE);")
	fmt.Fprintln(w, "  commands/op: every command Redis executed (INFO commandstats), including those run inside Lua scripts;")
	fmt.Fprintln(w, "  bytes: total_net_input_bytes/total_net_output_bytes deltas, pub/sub messages included;")
	fmt.Fprintln(w, "  Redis CPU: user+sys CPU time of the redis-server process (INFO cpu) per op;")
	fmt.Fprintln(w, "  client CPU: user+sys CPU time of the bench process (getrusage; in clients-curve its child workers') per op;")
	fmt.Fprintln(w, "  allocs/op (uncontended rows): heap allocations of the tool's process per lock+unlock (runtime.MemStats).")
	writeScripts(w, scripts)
	writeClients(w, results, curves)
	writeCurves(w, curves)
	writeTargets(w, targets, results)
	if outPath != "" {
		abs, err := filepath.Abs(outPath)
		if err != nil {
			abs = outPath
		}
		fmt.Fprintf(w, "\nFull results: %s\n", abs)
	}
}

func num(v *float64, decimals int) string {
	if v == nil {
		return "–"
	}
	if decimals == 0 {
		return strconv.FormatFloat(math.Round(*v), 'f', 0, 64)
	}
	// Small latencies keep 3 decimals; large ones need fewer.
	if decimals == 3 && *v >= 100 {
		decimals = 1
	} else if decimals == 3 && *v >= 10 {
		decimals = 2
	}
	return strconv.FormatFloat(*v, 'f', decimals, 64)
}

// shareCell is the busiest goroutine's share of the acquisitions and the
// even share, in percent, or "–" for rows without goroutines contending.
func shareCell(r Result) string {
	busiest, ok1 := r.Extra["busiest_goroutine_share"]
	ideal, ok2 := r.Extra["ideal_share"]
	if !ok1 || !ok2 {
		return "–"
	}
	return num(f(100*busiest), 1) + " / " + num(f(100*ideal), 1)
}

func bytesCell(r Result) string {
	if r.BytesInPerOp == nil || r.BytesOutPerOp == nil {
		return "–"
	}
	return strings.Join([]string{num(r.BytesInPerOp, 0), num(r.BytesOutPerOp, 0)}, " / ")
}

// writeClients prints the rows of client processes on one lock or
// semaphore with what a fair comparison of them needs: acquisitions and
// cross-process handoffs per second, the fewest and most acquisitions of
// a process against the fair share, the longest wait, and the Redis and
// client CPU per acquisition; then, per library, the growth exponent of
// the Redis CPU per acquisition and of the rate over the processes.
func writeClients(w io.Writer, results []Result, curves []Curve) {
	var rows []Result
	for _, r := range results {
		if r.Scenario == scClientsOne || r.Scenario == scClientsSem {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nClient processes on one lock or semaphore (C processes, one goroutine each):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | library | C | acq/s | cross-process handoffs/s | acq per process min / max | ÷ fair share | longest wait ms | p99 wait ms | Redis CPU µs/acq | client CPU µs/acq |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	x := func(r Result, k string, d int) string {
		v, ok := r.Extra[k]
		if !ok {
			return "–"
		}
		return num(f(v), d)
	}
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Library, x(r, "clients", 0), num(r.OpsPerSec, 0), x(r, "cross_process_handoffs_per_s", 0),
			x(r, "min_acquisitions_per_process", 0), x(r, "max_acquisitions_per_process", 0),
			x(r, "min_to_fair_share", 2), x(r, "max_to_fair_share", 2), x(r, "longest_wait_ms", 3), num(r.P99ms, 3),
			num(r.ServerCPUusPerOp, 1), num(r.ClientCPUusPerOp, 1))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "- cross-process handoffs: acquisitions whose mark (SET key id GET between Lock and Unlock) held another process's id;")
	fmt.Fprintln(w, "  fair share: acquisitions / C; longest wait: the longest wait for Lock of any process, a wait unfinished at the window's end included;")
	fmt.Fprintln(w, "  Redis and client CPU: the marks' cost taken out at the price of one mark measured alone (see each row's op).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Growth over C (figure ∝ C^k, least squares on log-log):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | library | k of Redis CPU µs/acq | k of acq/s | C |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|")
	type key struct{ sc, lib string }
	exps := map[key][2]*float64{}
	var order []key
	sizes := map[key][]float64{}
	for _, c := range curves {
		if c.Scenario != scClientsOne && c.Scenario != scClientsSem {
			continue
		}
		k := key{c.Scenario, c.Library}
		e, seen := exps[k]
		if !seen {
			order = append(order, k)
		}
		switch c.Metric {
		case "server_cpu_us_per_op":
			e[0] = c.Exponent
			sizes[k] = c.Sizes
		case "ops_per_sec":
			e[1] = c.Exponent
		}
		exps[k] = e
	}
	for _, k := range order {
		var cs []string
		for _, s := range sizes[k] {
			cs = append(cs, strconv.FormatFloat(s, 'f', -1, 64))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", k.sc, k.lib, num(exps[k][0], 2), num(exps[k][1], 2), strings.Join(cs, ", "))
	}
}
