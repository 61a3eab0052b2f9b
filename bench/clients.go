package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// childEnv, when set in the environment, makes the bench binary (or its
// test binary) a child worker of the clients-* scenarios: it reads its
// task (childSpec, JSON) from the variable, and talks with its parent on
// stdin and stdout.
const childEnv = "REDISYNC_BENCH_CHILD"

// childSpec is a child worker's task: goroutines goroutines of library
// lib of scenario scenario (clientsLibraries), over one client to addr,
// lock and unlock key (mode "one": a lock, or a semaphore's permit) or
// each a lock of its own under key (mode "many"). ID is the child's number
// in its run; with MarkKey set (mode "one"), every acquisition writes ID
// into MarkKey (markedPairs).
type childSpec struct {
	Addr       string `json:"addr"`
	Scenario   string `json:"scenario"`
	Lib        string `json:"lib"`
	Mode       string `json:"mode"`
	Key        string `json:"key"`
	Goroutines int    `json:"goroutines"`
	DurationNs int64  `json:"duration_ns"`
	ID         int    `json:"id"`
	MarkKey    string `json:"mark_key,omitempty"`
}

// childReport is what a child worker prints when its window ends.
type childReport struct {
	// Pairs: in mode "many" the Lock+Unlock pairs that ended within the
	// window; in mode "one" the acquisitions (Lock returned) within it.
	Pairs int64 `json:"pairs"`
	// LatUs: up to 2,000 samples, evenly spread over the sorted list: in
	// mode "many" of the pairs' durations, in mode "one" of the waits for
	// Lock (Lock call to its return; a wait still going on when the
	// window closed counts as long as it had lasted then).
	LatUs    []int64 `json:"lat_us"`
	CPUNs    int64   `json:"cpu_ns"` // its CPU time (getrusage) over the window
	Requests int64   `json:"requests"`
	Err      string  `json:"err,omitempty"`
	// FailedLocks and FailedUnlocks count the calls that failed (see
	// tolerant).
	FailedLocks   int64 `json:"failed_locks"`
	FailedUnlocks int64 `json:"failed_unlocks"`
	// Mode "one": Cross counts the acquisitions within the window whose
	// mark had another child's id before (cross-process handoffs), Marks
	// the mark commands sent (those after the window included), MaxWaitUs
	// the longest wait for Lock (an unfinished one included).
	Cross     int64 `json:"cross"`
	Marks     int64 `json:"marks"`
	MaxWaitUs int64 `json:"max_wait_us"`
}

// childMain is the child worker: it opens its client, says "ready", waits
// for "go" on stdin, runs its window and prints its childReport.
func childMain(stdin io.Reader, stdout io.Writer) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &spec); err != nil {
		fmt.Fprintln(stdout, `{"err":"bad spec"}`)
		return 2
	}
	rep := runChild(spec, stdin, stdout)
	b, _ := json.Marshal(rep)
	fmt.Fprintln(stdout, string(b))
	if rep.Err != "" {
		return 1
	}
	return 0
}

func runChild(spec childSpec, stdin io.Reader, stdout io.Writer) childReport {
	ctx := context.Background()
	var lib *library
	sc := cmp.Or(spec.Scenario, scClientsOne)
	for _, l := range clientsLibraries(sc) {
		if l.name == spec.Lib {
			lib = &l
		}
	}
	if lib == nil {
		return childReport{Err: "unknown library " + spec.Lib + " in " + sc}
	}
	rdb, cnt := newClient(spec.Addr)
	defer rdb.Close()
	s, err := lib.open(conn{addr: spec.Addr, rdb: rdb, cnt: cnt}, nil)
	if err != nil {
		return childReport{Err: err.Error()}
	}
	defer s.close()
	// The marks go over a client of their own: its requests are not the
	// library's, and its one connection is made before the window.
	var mark *redis.Client
	if spec.MarkKey != "" {
		mark = redis.NewClient(clientOptions(spec.Addr))
		defer mark.Close()
		if err := mark.Ping(ctx).Err(); err != nil {
			return childReport{Err: "mark client: " + err.Error()}
		}
	}
	var fl failures
	mutexes := make([]mutex, spec.Goroutines)
	for g := range mutexes {
		key := spec.Key
		if spec.Mode == "many" {
			key += ":" + strconv.Itoa(os.Getpid()) + ":" + strconv.Itoa(g)
		}
		mutexes[g] = fl.wrap(s.mutex(key))
	}
	fmt.Fprintln(stdout, "ready")
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "go" {
		return childReport{Err: "no go from the parent"}
	}
	cpu0, req0 := processCPU(), cnt.started.Load()
	var rep childReport
	var lat []time.Duration
	if spec.Mode == "many" {
		rep.Pairs, lat, err = lockPairs(ctx, mutexes, time.Duration(spec.DurationNs))
	} else {
		var o *oneLock
		o, err = markedPairs(ctx, mutexes, time.Duration(spec.DurationNs), mark, spec.MarkKey, strconv.Itoa(spec.ID))
		rep.Pairs, rep.Cross, rep.Marks = o.acquisitions.Load(), o.cross.Load(), o.marks.Load()
		rep.MaxWaitUs = time.Duration(o.maxWait.Load()).Microseconds()
		lat = o.waits.sorted()
	}
	rep.CPUNs, rep.Requests = int64(processCPU()-cpu0), cnt.started.Load()-req0
	rep.FailedLocks, rep.FailedUnlocks = fl.lock.Load(), fl.unlock.Load()
	if err != nil {
		rep.Err = err.Error()
	}
	step := max(1, len(lat)/2000)
	for i := 0; i < len(lat); i += step {
		rep.LatUs = append(rep.LatUs, lat[i].Microseconds())
	}
	return rep
}

// oneLock is what the goroutines of a child on the one lock measured
// (markedPairs).
type oneLock struct {
	acquisitions, cross, marks atomic.Int64
	maxWait                    atomic.Int64 // ns
	waits                      latencies
}

// wait records one wait for Lock.
func (o *oneLock) wait(d time.Duration) {
	o.waits.add(d)
	for {
		cur := o.maxWait.Load()
		if int64(d) <= cur || o.maxWait.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// markedPairs runs a child's goroutines on the one lock (or semaphore)
// for d: each calls Lock; then, with markKey set, writes id into markKey
// with SET markKey id GET over mark (a client of its own, not the
// library's); then calls Unlock, and starts again. An acquisition counts
// when its Lock returned within the window, and is a cross-process
// handoff when the mark held another child's id before (no value: the
// row's first acquisition, which is none). Its wait runs from the Lock
// call to its return; a wait still going on when the window closed
// counts as long as it had lasted then, so that a process starved all
// along shows a wait of the whole window.
func markedPairs(ctx context.Context, mutexes []mutex, d time.Duration, mark *redis.Client, markKey, id string) (*oneLock, error) {
	o := &oneLock{}
	err := window(ctx, mutexes, d, func(runCtx context.Context, _ int, m mutex, deadline time.Time, fail func(error)) {
		for runCtx.Err() == nil {
			t := time.Now()
			if err := m.Lock(runCtx); err != nil {
				if runCtx.Err() == nil {
					fail(fmt.Errorf("lock: %w", err))
				} else if t.Before(deadline) {
					o.wait(deadline.Sub(t))
				}
				return
			}
			got := time.Now()
			var prev string
			var markErr error
			if markKey != "" {
				o.marks.Add(1)
				prev, markErr = mark.SetArgs(context.WithoutCancel(ctx), markKey, id, redis.SetArgs{Get: true}).Result()
				if errors.Is(markErr, redis.Nil) {
					prev, markErr = "", nil
				}
			}
			// The release must happen even after the window closed.
			if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
				fail(fmt.Errorf("unlock: %w", err))
				return
			}
			if markErr != nil {
				fail(fmt.Errorf("mark: %w", markErr))
				return
			}
			if got.Before(deadline) {
				o.acquisitions.Add(1)
				o.wait(got.Sub(t))
				if prev != "" && prev != id {
					o.cross.Add(1)
				}
			}
		}
	})
	return o, err
}

// clientsLibraries returns the libraries of scenario sc. On one lock
// (clients-one-lock): redisync's lock and fair lock, the peers of the
// scale scenarios and the redisson-floor — Redisson's protocol waiting as
// Redisson does, so that the rows show what a release costs across
// processes with the protocol Java waiters rely on (every subscribed
// process is woken and tries). On one semaphore (clients-one-semaphore):
// redisync's semaphore alone, as no peer and no floor has one. On locks of
// their own (clients-many-locks): the scale libraries.
func clientsLibraries(sc string) []library {
	switch sc {
	case scClientsOne:
		var libs []library
		for _, l := range lockLibraries(scContended0) {
			if contains([]string{"redisync", "redisync-fair", "redsync", "redislock-linear10ms", "rueidislock"}, l.name) {
				libs = append(libs, l)
			}
		}
		return append(libs, redissonFloorLib())
	case scClientsSem:
		return []library{{
			name:         "redisync",
			wait:         "pub/sub, one process woken per release (semaphore.New's queue of waiting Clients; an acquisition that leaves permits wakes the next)",
			waitingAfter: 2,
			open:         openRedisync(newPermit),
		}}
	}
	return scaleLibraries()
}

// semaphorePermits is the permits of the clients-one-semaphore
// semaphore with n processes: a quarter of them hold at once.
func semaphorePermits(n int) int { return max(1, n/4) }

// clientsCurve runs scenario sc (one lock, one semaphore, or locks of
// their own) with every count of -scale-clients child processes, for
// every library of sc: each child is this binary re-executed as a worker
// with one client of the library, 1 goroutine on the shared lock or
// semaphore (clients-one-lock, clients-one-semaphore) or 4 each on a lock
// of its own (clients-many-locks), for -duration. The row gives the
// acquisitions per second of all of them, the connections the server had
// (CLIENT LIST, mid-window, less the meter's and the marks'), the Redis
// CPU and the children's CPU (their own getrusage) per acquisition; on
// the shared lock or semaphore also the cross-process handoffs, the
// acquisitions of each process and the longest wait (clientsRun).
func (b *bench) clientsCurve(ctx context.Context, sc string) ([]Result, error) {
	mode, perChild := "one", 1
	if sc == scClientsMany {
		mode, perChild = "many", 4
	}
	var rows []Result
	for _, n := range b.cfg.ScaleClients {
		var mc *markCost
		for _, lib := range clientsLibraries(sc) {
			if !b.cfg.library(lib.name) {
				continue
			}
			size := strconv.Itoa(n)
			spec := childSpec{Addr: b.addr, Scenario: sc, Lib: lib.name, Mode: mode, Key: b.key(lib.name, sc, size),
				Goroutines: perChild, DurationNs: int64(b.cfg.Duration)}
			if mode == "one" && b.cfg.ClientsMarks {
				spec.MarkKey = b.key(lib.name, sc, size, "mark")
				if mc == nil {
					c, err := b.measureMarkCost(ctx, b.key(sc, size, "mark-cost"))
					if err != nil {
						return rows, fmt.Errorf("%s C=%d: the marks' cost: %w", sc, n, err)
					}
					mc = &c
				}
			}
			r, err := b.clientsRun(ctx, sc, lib, spec, n, mc)
			if err != nil {
				return rows, fmt.Errorf("%s %s C=%d: %w", sc, lib.name, n, err)
			}
			line := fmt.Sprintf("bench: %-21s %-21s C=%-4d %s ops/s, %s connections, client CPU %s µs/op, Redis CPU %s µs/op",
				sc, lib.name, n, num(r.OpsPerSec, 0), num(f(r.Extra["connections"]), 0), num(r.ClientCPUusPerOp, 0), num(r.ServerCPUusPerOp, 0))
			if mode == "one" {
				line += fmt.Sprintf("; %s cross-process handoffs/s, per process %s–%s (fair share %s), longest wait %s ms",
					num(f(r.Extra["cross_process_handoffs_per_s"]), 0), num(f(r.Extra["min_acquisitions_per_process"]), 0),
					num(f(r.Extra["max_acquisitions_per_process"]), 0), num(f(r.Extra["fair_share_per_process"]), 1),
					num(f(r.Extra["longest_wait_ms"]), 3))
			}
			fmt.Fprintln(b.log, line)
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// ProcessFigures are one child process's figures in a clients-one-* row.
type ProcessFigures struct {
	Acquisitions         int64   `json:"acquisitions"`
	CrossProcessHandoffs int64   `json:"cross_process_handoffs"`
	LongestWaitMs        float64 `json:"longest_wait_ms"`
}

// clientsRun runs n child workers of spec and merges their reports. With
// mc set, the children's marks are taken out of the row's cost figures at
// mc's price (usage.subtractMarks).
func (b *bench) clientsRun(ctx context.Context, sc string, lib library, spec childSpec, n int, mc *markCost) (Result, error) {
	permits := semaphorePermits(n)
	if sc == scClientsSem {
		if err := b.setPermits(ctx, spec.Key, permits); err != nil {
			return Result{}, err
		}
	}
	w, err := b.clientsWindow(ctx, spec, n, mc)
	if err != nil {
		return Result{}, err
	}
	m, u := w.m, w.u
	d := time.Duration(spec.DurationNs)
	r := clientsRow(lib, sc, spec, n, permits)
	r.OpsPerSec = f(float64(m.pairs) / d.Seconds())
	r.Ops, r.Seconds = m.pairs, round4(d.Seconds())
	slices.Sort(m.lat)
	r.quantiles(m.lat)
	r.perOp(u, m.pairs)
	r.Extra["clients"] = float64(n)
	r.Extra["connections"] = float64(w.conns)
	r.Extra["connections_per_client"] = round4(float64(w.conns) / float64(n))
	if spec.Mode != "many" {
		m.onLock(&r, n, d)
		if sc == scClientsSem {
			r.Extra["permits"] = float64(permits)
		}
		if spec.MarkKey != "" && mc != nil && m.pairs > 0 {
			markExtras(&r, m.marks, m.pairs, *mc, w.withMarks)
		}
	}
	m.fl.note(&r)
	return r, nil
}

// clientsWindow is one window of a clients-* row: what the n children
// reported (m), the server's and their usage with the marks taken out
// (u) and before (withMarks), and the connections the server held in the
// middle of the window, less the children's mark connections (conns).
type clientsWindow struct {
	m            *merged
	u, withMarks usage
	conns        int
}

// clientsWindow starts n children with spec, lets them run their window
// and collects what clientsWindow holds.
func (b *bench) clientsWindow(ctx context.Context, spec childSpec, n int, mc *markCost) (clientsWindow, error) {
	var w clientsWindow
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, err := b.startChildren(runCtx, spec, n)
	defer func() {
		for _, c := range children {
			c.close()
		}
	}()
	if err != nil {
		return w, err
	}
	sp, err := beginSpan(ctx, b.meter, nil)
	if err != nil {
		return w, err
	}
	for _, c := range children {
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			return w, err
		}
	}
	_ = sleepCtx(ctx, b.cfg.Duration/2)
	if w.conns, err = b.connections(ctx); err != nil {
		return w, err
	}
	if spec.MarkKey != "" {
		w.conns = max(w.conns-n, 0) // each child's mark connection
	}
	if w.m, err = mergeReports(children); err != nil {
		return w, err
	}
	if w.u, err = sp.end(ctx); err != nil {
		return w, err
	}
	// The children's requests and CPU, not the parent's.
	w.u.requests += w.m.reqs
	w.u.clientCPU, w.u.childCPU = 0, w.m.cpu
	w.withMarks = w.u
	if spec.MarkKey != "" && mc != nil {
		w.u.subtractMarks(w.m.marks, *mc)
	}
	return w, nil
}

// clientsRow returns the row of a clients-* scenario sc for lib over n
// processes (permits: the semaphore's, in clients-one-semaphore).
func clientsRow(lib library, sc string, spec childSpec, n, permits int) Result {
	var r Result
	if spec.Mode == "many" {
		r = curveRow(lib.name, sc, n,
			fmt.Sprintf("one acquisition (Lock+Unlock): %d client processes, each with one client of the library and %d goroutines, each on a lock of its own", n, spec.Goroutines),
			"Lock call to Unlock return (up to 2,000 samples per process)")
	} else {
		r = curveRow(lib.name, sc, n, oneOp(sc, n, permits, spec.MarkKey != ""),
			"wait for the lock (or permit), from the Lock call to its return (up to 2,000 samples per process); a wait still going on when the window closed counts as long as it had lasted")
	}
	r.Wait = lib.wait
	return r
}

// markExtras records in r what the marks (marks of them over pairs
// acquisitions, each costing mc) cost, and the row's CPU figures with
// them (withMarks: the usage before they were taken out).
func markExtras(r *Result, marks, pairs int64, mc markCost, withMarks usage) {
	acq := float64(pairs)
	r.Extra["marks"] = float64(marks)
	r.Extra["mark_redis_cpu_us_each"] = round4(float64(mc.serverCPU) / float64(time.Microsecond))
	r.Extra["mark_client_cpu_us_each"] = round4(float64(mc.clientCPU) / float64(time.Microsecond))
	r.Extra["server_cpu_us_per_op_with_marks"] = round4(float64(withMarks.cpu) / float64(time.Microsecond) / acq)
	r.Extra["client_cpu_us_per_op_with_marks"] = round4(float64(withMarks.childCPU) / float64(time.Microsecond) / acq)
}

// oneOp describes the operation of a clients-one-* row of n processes.
func oneOp(sc string, n, permits int, marks bool) string {
	op := fmt.Sprintf("one acquisition: %d client processes, each with one client of the library and 1 goroutine on the one lock, locking and unlocking at once", n)
	if sc == scClientsSem {
		op = fmt.Sprintf("one acquisition of 1 permit, released at once: %d client processes, each with one client of the library and 1 goroutine on one semaphore of %d permits (max(1, C/4)); redisync's semaphore only: no peer, and not the redisson-floor, has a semaphore", n, permits)
	}
	if !marks {
		return op + "; no marks (-clients-marks=false): no cross-process handoffs counted"
	}
	return op + ". Between Lock and Unlock each process writes its id into a mark key of the row with SET key id GET, on a connection of its own " +
		"(not the library's: its requests and connection are left out of the row's round trips and connections); an acquisition whose mark held " +
		"another process's id is a cross-process handoff (for the semaphore: the acquisition before it, whichever permit, was another process's). " +
		"The mark makes each hold one round trip longer for every library alike. Its cost is taken out of the row's Redis CPU, commands, " +
		"bytes and client CPU at the price of one mark measured alone before the size's rows (extra mark_redis_cpu_us_each and " +
		"mark_client_cpu_us_each: SET GET from one connection, one at a time; under load, where Redis serves several clients per event-loop " +
		"turn, a command costs it less, so the subtraction may take out slightly more than the marks cost); the figures with the marks are " +
		"in extra *_with_marks"
}

// setPermits sets the permits of the semaphore name (a fresh one) through
// a redisync client of its own.
func (b *bench) setPermits(ctx context.Context, name string, permits int) error {
	rdb := redis.NewClient(clientOptions(b.addr))
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()
	ok, err := semaphore.New(c, name).TrySetPermits(ctx, int64(permits))
	if err != nil {
		return fmt.Errorf("set permits: %w", err)
	}
	if !ok {
		return fmt.Errorf("semaphore %q already set", name)
	}
	return nil
}

// markCost is what one mark (SET key id GET on a connection of its own)
// costs, measured alone: Redis CPU, the sending process's CPU, the
// execution time commandstats gives SET, and bytes in and out.
type markCost struct {
	serverCPU, clientCPU    time.Duration
	usec, bytesIn, bytesOut float64
}

// markCostCalls is how many marks measureMarkCost sends.
const markCostCalls = 5000

// measureMarkCost sends markCostCalls marks on key from one client, one
// at a time (after 100 unmeasured), and returns what one cost.
func (b *bench) measureMarkCost(ctx context.Context, key string) (markCost, error) {
	rdb := redis.NewClient(clientOptions(b.addr))
	defer rdb.Close()
	set := func(i int) error {
		err := rdb.SetArgs(ctx, key, strconv.Itoa(i%2), redis.SetArgs{Get: true}).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		return err
	}
	for i := range 100 {
		if err := set(i); err != nil {
			return markCost{}, err
		}
	}
	sp, err := beginSpan(ctx, b.meter, nil)
	if err != nil {
		return markCost{}, err
	}
	for i := range markCostCalls {
		if err := set(i); err != nil {
			return markCost{}, err
		}
	}
	u, err := sp.end(ctx)
	if err != nil {
		return markCost{}, err
	}
	n := float64(markCostCalls)
	return markCost{
		serverCPU: u.cpu / markCostCalls,
		clientCPU: u.clientCPU / markCostCalls,
		usec:      float64(u.usecBy["set"]) / n,
		bytesIn:   float64(u.bytesIn) / n,
		bytesOut:  float64(u.bytesOut) / n,
	}, nil
}

// subtractMarks takes marks marks at mc's price out of u: Redis CPU,
// the children's CPU, the SET commands and their execution time, the
// bytes, and the mark key.
func (u *usage) subtractMarks(marks int64, mc markCost) {
	if marks <= 0 {
		return
	}
	k := float64(marks)
	u.cpu = max(0, u.cpu-time.Duration(marks)*mc.serverCPU)
	u.childCPU = max(0, u.childCPU-time.Duration(marks)*mc.clientCPU)
	u.commands -= marks
	u.bytesIn -= int64(math.Round(k * mc.bytesIn))
	u.bytesOut -= int64(math.Round(k * mc.bytesOut))
	u.keys--
	if u.byCommand["set"] -= marks; u.byCommand["set"] <= 0 {
		delete(u.byCommand, "set")
		delete(u.usecBy, "set")
	} else {
		u.usecBy["set"] = max(0, u.usecBy["set"]-int64(math.Round(k*mc.usec)))
	}
}

// child is a child worker the parent runs.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	close func()
}

// startChildren starts n child workers of spec (this binary, re-executed
// with spec in childEnv, each with its ID: 0 … n-1) and waits until each
// says it is ready. It returns the children started, also with an error.
func (b *bench) startChildren(ctx context.Context, spec childSpec, n int) ([]child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	stderr := &lockedWriter{w: b.log} // the children write at once
	var children []child
	for i := range n {
		spec.ID = i
		raw, err := json.Marshal(spec)
		if err != nil {
			return children, err
		}
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
		cmd.Stderr = stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return children, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return children, err
		}
		if err := cmd.Start(); err != nil {
			return children, fmt.Errorf("start a child worker: %w", err)
		}
		children = append(children, child{cmd: cmd, in: in, out: bufio.NewReader(out), close: func() {
			_ = in.Close()
			_ = cmd.Wait()
		}})
	}
	for _, c := range children {
		line, err := c.out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			return children, fmt.Errorf("a child worker did not get ready: %q %v", line, err)
		}
	}
	return children, nil
}

// merged is the sum of the children's reports, and each one's figures
// on the one lock.
type merged struct {
	pairs, reqs  int64
	cross, marks int64
	cpu          time.Duration
	lat          []time.Duration
	fl           failures
	procs        []ProcessFigures
}

// onLock records in r the figures of a row on the one lock (or
// semaphore) of n processes over d: cross-process handoffs per second and
// their share of the acquisitions; the fewest and most acquisitions of a
// process, the fair share (acquisitions / n) and each as a multiple of
// it, and the processes that made none; the longest wait of any process;
// and each process's figures (r.Processes).
func (m *merged) onLock(r *Result, n int, d time.Duration) {
	r.Processes = m.procs
	r.Extra["cross_process_handoffs"] = float64(m.cross)
	r.Extra["cross_process_handoffs_per_s"] = round4(float64(m.cross) / d.Seconds())
	if m.pairs > 0 {
		r.Extra["cross_process_share"] = round4(float64(m.cross) / float64(m.pairs))
	}
	if len(m.procs) == 0 {
		return
	}
	least, most, idle, longest := m.procs[0].Acquisitions, m.procs[0].Acquisitions, 0, 0.0
	for _, p := range m.procs {
		least, most = min(least, p.Acquisitions), max(most, p.Acquisitions)
		longest = max(longest, p.LongestWaitMs)
		if p.Acquisitions == 0 {
			idle++
		}
	}
	fair := float64(m.pairs) / float64(n)
	r.Extra["min_acquisitions_per_process"] = float64(least)
	r.Extra["max_acquisitions_per_process"] = float64(most)
	r.Extra["fair_share_per_process"] = round4(fair)
	if fair > 0 {
		r.Extra["min_to_fair_share"] = round4(float64(least) / fair)
		r.Extra["max_to_fair_share"] = round4(float64(most) / fair)
	}
	r.Extra["processes_without_acquisition"] = float64(idle)
	r.Extra["longest_wait_ms"] = longest
	if idle > 0 {
		msg := fmt.Sprintf("%d of %d processes took none", idle, n)
		if r.Note != "" {
			msg = r.Note + "; " + msg
		}
		r.Note = msg
	}
}

// mergeReports reads every child's report and sums them.
func mergeReports(children []child) (*merged, error) {
	m := &merged{}
	var errs []string
	for _, c := range children {
		line, err := c.out.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("a child worker's report: %w", err)
		}
		var rep childReport
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			return nil, fmt.Errorf("a child worker's report %q: %w", line, err)
		}
		if rep.Err != "" {
			errs = append(errs, rep.Err)
		}
		m.pairs += rep.Pairs
		m.reqs += rep.Requests
		m.cross += rep.Cross
		m.marks += rep.Marks
		m.procs = append(m.procs, ProcessFigures{Acquisitions: rep.Pairs, CrossProcessHandoffs: rep.Cross,
			LongestWaitMs: round4(float64(rep.MaxWaitUs) / 1000)})
		m.cpu += time.Duration(rep.CPUNs)
		m.fl.lock.Add(rep.FailedLocks)
		m.fl.unlock.Add(rep.FailedUnlocks)
		for _, us := range rep.LatUs {
			m.lat = append(m.lat, time.Duration(us)*time.Microsecond)
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return m, nil
}

// connections returns how many connections the server has, less the
// meter's own.
func (b *bench) connections(ctx context.Context) (int, error) {
	list, err := b.meter.ClientList(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("CLIENT LIST: %w", err)
	}
	return max(len(strings.Split(strings.TrimSpace(list), "\n"))-1, 0), nil
}

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
