package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisync/redisync"

	"github.com/redisync/redisync/internal/redistest"
)

// The foreign client (Config.Foreign, make chaos FOREIGN=1; single
// topology): node-redisson 1.0.4 (npm), a Node.js implementation of
// Redisson's lock protocol written by others, takes the workload's two
// plain locks beside the Go workers, each acquisition with a fixed lease
// (no watchdog: a hold is believed until the lease ends or its unlock is
// called, whichever comes first). Its calls go into the history as
// workers foreignWorker and foreignWorker+1, so the lock model and the
// belief check count its holds; it has no fencing token and writes no
// register. It reaches the server through a proxy of its own that takes
// client 0's faults. testdata/foreign holds its program and its pinned
// dependencies (npm install there on first use; Node.js 16 or later).
// node-redisson has a lock and nothing else: no semaphore, latch or
// read-write lock to share.

// foreignWorker is the first worker number of the foreign client's calls.
const foreignWorker = 1000

// foreignLocks are the locks the foreign client takes.
var foreignLocks = []string{"chaos:lock:0", "chaos:lock:2"}

// isForeign reports whether op is the foreign client's.
func isForeign(op Op) bool { return op.Worker >= foreignWorker }

// foreignProc is the running foreign client.
type foreignProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	calls int
	mu    sync.Mutex
	open  map[int]Op // per worker, its last acquisition that succeeded
	// stopping is set once stopForeign closes the client's input; early,
	// when its output ended before that: it exited during the run.
	stopping, early bool
}

// startForeign starts the foreign client on the single server, through a
// proxy added to client 0's (so client 0's faults act on it too). Its
// calls are recorded from now on.
func (r *run) startForeign(t testing.TB) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "foreign"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("chaos: the foreign client needs Node.js (node on the PATH): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-redisson")); err != nil {
		install := exec.Command("npm", "install", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("chaos: npm install in %s: %v\n%s", dir, err, out)
		}
	}
	p := redistest.NewProxy(t, r.srv.Addr())
	r.proxies[0] = append(r.proxies[0], p)
	host, port, _ := strings.Cut(p.Addr(), ":")
	args := append([]string{"foreign.js", host, port, strconv.FormatInt(r.cfg.Lease.Milliseconds(), 10),
		strconv.FormatInt(r.cfg.Seed, 10)}, foreignLocks...)
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("chaos: start the foreign client: %v", err)
	}
	f := &foreignProc{cmd: cmd, stdin: stdin, done: make(chan struct{}), open: map[int]Op{}}
	go func() {
		defer close(f.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.foreignLine(f, sc.Bytes())
		}
		f.mu.Lock()
		if !f.stopping {
			f.early = true
			r.logf("foreign client: exited during the run, after %d calls", f.calls)
		}
		f.mu.Unlock()
	}()
	r.foreign = f
	t.Cleanup(func() {
		r.stopForeign()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.early {
			// Its locks were not shared with a foreign client for the rest
			// of the run: the run did not test what it says.
			t.Errorf("chaos: the foreign client (node-redisson) exited during the run, after %d calls (its stderr is above)", f.calls)
		}
	})
	r.logf("foreign client: node-redisson (pid %d) on %v through %s", cmd.Process.Pid, foreignLocks, p.Addr())
}

// stopForeign ends the foreign client (its standard input closed: it
// stops after its calls under way) and waits for it, at most 15 s.
func (r *run) stopForeign() {
	f := r.foreign
	if f == nil {
		return
	}
	r.foreign = nil
	f.mu.Lock()
	f.stopping = true
	f.mu.Unlock()
	_ = f.stdin.Close()
	select {
	case <-f.done:
	case <-time.After(15 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
	_ = f.cmd.Wait()
	r.logf("foreign client: %d calls recorded", f.calls)
}

// foreignCall is one line of the foreign client.
type foreignCall struct {
	Op     string `json:"op"`
	Worker int    `json:"worker"`
	Name   string `json:"name"`
	Call   string `json:"call"`
	Ret    string `json:"ret"`
	OK     bool   `json:"ok"`
	Err    string `json:"err"`
}

// foreignLine records one line of the foreign client: an acquisition, or
// an unlock with the belief of the hold it ends.
func (r *run) foreignLine(f *foreignProc, line []byte) {
	var c foreignCall
	if err := json.Unmarshal(line, &c); err != nil {
		r.logf("foreign client: %q: %v", line, err)
		return
	}
	at := func(s string) int64 {
		ns, _ := strconv.ParseInt(s, 10, 64)
		return r.h.At(time.Unix(0, ns))
	}
	op := Op{Worker: foreignWorker + c.Worker, Object: c.Name, Call: at(c.Call), Return: at(c.Ret), Err: c.Err}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch c.Op {
	case "lock":
		op.Kind = LockAcquire
		op.Outcome = Refused
		switch {
		case c.Err != "":
			op.Outcome = Unknown
		case c.OK:
			op.Outcome = OK
			f.open[op.Worker] = op
		}
		r.h.Add(op)
	case "unlock":
		acq := f.open[op.Worker]
		delete(f.open, op.Worker)
		op.Kind, op.AcqCall = LockRelease, acq.Call
		switch {
		case c.OK:
			op.Outcome = OK
		case strings.Contains(c.Err, "not locked by current client"):
			op.Outcome = NotHeld
		default:
			op.Outcome = Unknown
		}
		r.h.Add(op)
		// Believed from the acquisition's return until the unlock was
		// called or the fixed lease ran out from the acquisition's call.
		end := min(op.Call, acq.Call+int64(r.cfg.Lease))
		r.beliefs.add(belief{worker: op.Worker, object: c.Name, mode: beliefExclusive, from: acq.Return, to: end, acqCall: acq.Call})
		if op.Outcome == NotHeld {
			// No margin: node-redisson's hold lasts its whole lease.
			r.addLoss(Op{Worker: op.Worker, Object: c.Name, Kind: LockLoss, Return: op.Return}, acq.Call+int64(r.cfg.Lease))
		}
	default:
		r.logf("foreign client: unknown call %q", fmt.Sprint(c.Op))
	}
}

// goCalls counts the Go workers' calls on the foreign client's locks (with
// or without it), and those that found a lock "of another type"
// (ErrWrongType): node-redisson's owner field, "<uuid>:<uuid>", must be
// taken for a holder's.
type goCalls struct {
	calls, wrongType atomic.Int64
}

// call counts a call on lock name.
func (g *goCalls) call(name string) {
	if slices.Contains(foreignLocks, name) {
		g.calls.Add(1)
	}
}

// returned notes the error of a call on lock name.
func (g *goCalls) returned(name string, err error) {
	if slices.Contains(foreignLocks, name) && errors.Is(err, redisync.ErrWrongType) {
		g.wrongType.Add(1)
	}
}

// checkForeign checks, with the foreign client, that the history accounts
// for every Go call on its locks and that none found its holds "of
// another type"; it returns the summary line ("" without it).
func (r *run) checkForeign(ops []Op) string {
	if !r.cfg.Foreign || r.cfg.Topology != Single {
		return ""
	}
	var goOps, foreign, waited int
	var beliefs []belief
	for _, b := range r.beliefs.list() {
		if b.worker >= foreignWorker {
			beliefs = append(beliefs, b)
		}
	}
	for _, op := range ops {
		if !slices.Contains(foreignLocks, op.Object) {
			continue
		}
		switch {
		case isForeign(op):
			foreign++
		case op.Kind == LockAcquire || op.Kind == LockRelease:
			goOps++
			if op.Kind == LockAcquire && op.Outcome == Refused && heldByForeign(beliefs, op) {
				waited++
			}
		}
	}
	calls, wrong := r.goCall.calls.Load(), r.goCall.wrongType.Load()
	if int64(goOps) != calls {
		r.violate(Violation{Check: "foreign client", Detail: fmt.Sprintf("the Go workers made %d calls on %v, the history records %d", calls, foreignLocks, goOps)})
	}
	if wrong > 0 {
		r.violate(Violation{Check: "foreign client", Detail: fmt.Sprintf("%d Go calls on %v found node-redisson's hold of another type (ErrWrongType)", wrong, foreignLocks)})
	}
	return fmt.Sprintf("foreign client: %d node-redisson calls; %d Go calls on its locks, all in the history: %v; %d Go acquisitions refused while node-redisson held the lock (waited on it as a holder); %d answered ErrWrongType",
		foreign, calls, int64(goOps) == calls, waited, wrong)
}

// heldByForeign tells whether the foreign client believed it held op's
// lock for the whole of op's call.
func heldByForeign(bs []belief, op Op) bool {
	for _, b := range bs {
		if b.object == op.Object && b.from <= op.Call && b.to >= op.Return {
			return true
		}
	}
	return false
}
