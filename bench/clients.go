package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// childEnv, when set in the environment, makes the bench binary (or its
// test binary) a child worker of the clients-* scenarios: it reads its
// task (childSpec, JSON) from the variable, and talks with its parent on
// stdin and stdout.
const childEnv = "REDISYNC_BENCH_CHILD"

// childSpec is a child worker's task: goroutines goroutines of library
// lib, over one client to addr, lock and unlock key (mode "one") or each
// a lock of its own under key (mode "many").
type childSpec struct {
	Addr       string `json:"addr"`
	Lib        string `json:"lib"`
	Mode       string `json:"mode"`
	Key        string `json:"key"`
	Goroutines int    `json:"goroutines"`
	DurationNs int64  `json:"duration_ns"`
}

// childReport is what a child worker prints when its window ends.
type childReport struct {
	Pairs    int64   `json:"pairs"`
	LatUs    []int64 `json:"lat_us"` // up to 2,000 of its pair durations, evenly spread over the sorted list
	CPUNs    int64   `json:"cpu_ns"` // its CPU time (getrusage) over the window
	Requests int64   `json:"requests"`
	Err      string  `json:"err,omitempty"`
	// FailedLocks and FailedUnlocks count the calls that failed (see
	// tolerant).
	FailedLocks   int64 `json:"failed_locks"`
	FailedUnlocks int64 `json:"failed_unlocks"`
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
	for _, l := range clientsLibraries(scClientsOne) {
		if l.name == spec.Lib {
			lib = &l
		}
	}
	if lib == nil {
		return childReport{Err: "unknown library " + spec.Lib}
	}
	rdb, cnt := newClient(spec.Addr)
	defer rdb.Close()
	s, err := lib.open(conn{addr: spec.Addr, rdb: rdb, cnt: cnt}, nil)
	if err != nil {
		return childReport{Err: err.Error()}
	}
	defer s.close()
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
	pairs, lat, err := lockPairs(ctx, mutexes, time.Duration(spec.DurationNs))
	rep := childReport{Pairs: pairs, CPUNs: int64(processCPU() - cpu0), Requests: cnt.started.Load() - req0,
		FailedLocks: fl.lock.Load(), FailedUnlocks: fl.unlock.Load()}
	if err != nil {
		rep.Err = err.Error()
	}
	step := max(1, len(lat)/2000)
	for i := 0; i < len(lat); i += step {
		rep.LatUs = append(rep.LatUs, lat[i].Microseconds())
	}
	return rep
}

// clientsLibraries returns the libraries of scenario sc: the scale
// libraries, and on one lock (clients-one-lock) redisson-floor too —
// Redisson's protocol waiting as Redisson does, so that the row shows
// what a release costs across processes with the protocol Java waiters
// rely on (every subscribed process is woken and tries).
func clientsLibraries(sc string) []library {
	libs := scaleLibraries()
	if sc == scClientsOne {
		libs = append(libs, redissonFloorLib())
	}
	return libs
}

// clientsCurve runs scenario sc (one lock, or locks of their own) with
// every count of -scale-clients child processes, for every scale library:
// each child is this binary re-executed as a worker with one client of the
// library, 1 goroutine on the shared lock (clients-one-lock) or 4 each on
// a lock of its own (clients-many-locks), for -duration. The row gives the
// acquisitions per second of all of them, the connections the server had
// (CLIENT LIST, mid-window, less the meter's), the Redis CPU and the
// children's CPU (their own getrusage) per acquisition.
func (b *bench) clientsCurve(ctx context.Context, sc string) ([]Result, error) {
	mode, perChild := "one", 1
	if sc == scClientsMany {
		mode, perChild = "many", 4
	}
	var rows []Result
	for _, n := range b.cfg.ScaleClients {
		for _, lib := range clientsLibraries(sc) {
			if !b.cfg.library(lib.name) {
				continue
			}
			spec := childSpec{Addr: b.addr, Lib: lib.name, Mode: mode, Key: b.key(lib.name, sc, strconv.Itoa(n)),
				Goroutines: perChild, DurationNs: int64(b.cfg.Duration)}
			r, err := b.clientsRun(ctx, sc, lib, spec, n)
			if err != nil {
				return rows, fmt.Errorf("%s %s C=%d: %w", sc, lib.name, n, err)
			}
			fmt.Fprintf(b.log, "bench: %-18s %-21s C=%-4d %s ops/s, %s connections, client CPU %s µs/op, Redis CPU %s µs/op\n",
				sc, lib.name, n, num(r.OpsPerSec, 0), num(f(r.Extra["connections"]), 0), num(r.ClientCPUusPerOp, 0), num(r.ServerCPUusPerOp, 0))
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// clientsRun runs n child workers of spec and merges their reports.
func (b *bench) clientsRun(ctx context.Context, sc string, lib library, spec childSpec, n int) (Result, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, err := b.startChildren(runCtx, spec, n)
	defer func() {
		for _, c := range children {
			c.close()
		}
	}()
	if err != nil {
		return Result{}, err
	}
	sp, err := beginSpan(ctx, b.meter, nil)
	if err != nil {
		return Result{}, err
	}
	for _, c := range children {
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			return Result{}, err
		}
	}
	_ = sleepCtx(ctx, b.cfg.Duration/2)
	conns, err := b.connections(ctx)
	if err != nil {
		return Result{}, err
	}
	m, err := mergeReports(children)
	if err != nil {
		return Result{}, err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	// The children's requests and CPU, not the parent's.
	u.requests += m.reqs
	u.clientCPU, u.childCPU = 0, m.cpu
	what := "1 goroutine on the one lock"
	if spec.Mode == "many" {
		what = fmt.Sprintf("%d goroutines, each on a lock of its own", spec.Goroutines)
	}
	d := time.Duration(spec.DurationNs)
	r := curveRow(lib.name, sc, n,
		fmt.Sprintf("one acquisition (Lock+Unlock): %d client processes, each with one client of the library and %s", n, what),
		"Lock call to Unlock return (up to 2,000 samples per process)")
	r.Wait = lib.wait
	r.OpsPerSec = f(float64(m.pairs) / d.Seconds())
	r.Ops, r.Seconds = m.pairs, round4(d.Seconds())
	slices.Sort(m.lat)
	r.quantiles(m.lat)
	r.perOp(u, m.pairs)
	r.Extra["clients"] = float64(n)
	r.Extra["connections"] = float64(conns)
	r.Extra["connections_per_client"] = round4(float64(conns) / float64(n))
	m.fl.note(&r)
	return r, nil
}

// child is a child worker the parent runs.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	close func()
}

// startChildren starts n child workers of spec (this binary, re-executed
// with spec in childEnv) and waits until each says it is ready. It
// returns the children started, also with an error.
func (b *bench) startChildren(ctx context.Context, spec childSpec, n int) ([]child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	stderr := &lockedWriter{w: b.log} // the children write at once
	var children []child
	for range n {
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

// merged is the sum of the children's reports.
type merged struct {
	pairs, reqs int64
	cpu         time.Duration
	lat         []time.Duration
	fl          failures
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
