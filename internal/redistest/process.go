package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Local server processes: the command line of a spec, starting it and
// waiting until it answers, and the child processes' output.

// process is a started child process and the output it has written.
type process struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{} // closed when cmd.Wait has returned
	err  error         // cmd.Wait's result; read only after done

	stdin io.WriteCloser // the rediscontainer helper's stdin; nil otherwise
}

// launch starts the process on s.port and waits until it answers PING. On
// failure the process has exited and the returned process (non-nil if it
// was started at all) holds its output.
func (s *spec) launch() (*process, error) {
	args, err := s.args()
	if err != nil {
		return nil, err
	}
	p, err := startProcess(s.bin, "", args...)
	if err != nil {
		return nil, err
	}
	if err := waitReady(p, s.Addr(), p.cmd.Process.Pid); err != nil {
		p.kill()
		return p, fmt.Errorf("%w\ncommand: %s %s\noutput:\n%s", err, s.bin, strings.Join(quoteArgs(args), " "), p.out.String())
	}
	return p, nil
}

// args returns the command line for s, writing the sentinel config file
// first if s is a sentinel.
func (s *spec) args() ([]string, error) {
	var args []string
	if s.cfg.sentinelOf != "" {
		conf := filepath.Join(s.dir, "sentinel.conf")
		if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
			host, port, err := net.SplitHostPort(s.cfg.sentinelOf)
			if err != nil {
				return nil, err
			}
			// The sentinel rewrites this file; it is written only once so
			// that a restarted sentinel keeps what it learned.
			text := fmt.Sprintf("sentinel monitor %s %s %s 1\n"+
				"sentinel down-after-milliseconds %[1]s 5000\n"+
				"sentinel failover-timeout %[1]s 60000\n", SentinelMasterName, host, port)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				return nil, err
			}
		}
		args = append(args, conf)
		if filepath.Base(s.bin) != "redis-sentinel" {
			args = append(args, "--sentinel")
		}
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	)
	if s.cfg.sentinelOf == "" {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	if s.cfg.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.bus),
			"--cluster-announce-ip", "127.0.0.1",
			"--cluster-node-timeout", "5000",
		)
	}
	return append(args, s.cfg.args...), nil
}

// startProcess starts bin with args in dir (the current directory if
// empty), capturing its stdout and stderr.
func startProcess(bin, dir string, args ...string) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out := &tailBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	// A forked child (a BGSAVE, say) could keep the output pipe open after
	// the server died; do not let Wait hang on it.
	cmd.WaitDelay = time.Second
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL (which also ends a SIGSTOPped process) and waits.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls addr until the server answers, the process exits, or
// readyTimeout passes. When pid is not 0 the answer must come from that
// process: another test process may have taken the port between freePorts
// and the bind, and then its server answers while ours exits with "Address
// already in use" (taking a foreign server for ours would let two tests
// drive one server, or join one node to two clusters).
func waitReady(p *process, addr string, pid int) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if p.exited() {
			return fmt.Errorf("exited before answering: %v", p.err)
		}
		got, err := serverPID(addr, time.Second)
		if err == nil && pid != 0 && got != pid {
			err = fmt.Errorf("%s is served by another process (pid %d, ours is %d)", addr, got, pid)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s within %v: %w", addr, readyTimeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serverPID sends INFO server on a new connection and returns the
// process_id it reports. It speaks RESP directly so that readiness checks
// need no client.
func serverPID(addr string, timeout time.Duration) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := conn.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO answered %q", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("INFO answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// isAddrInUse reports whether p exited because its port was taken.
func isAddrInUse(p *process) bool {
	return p != nil && p.exited() && strings.Contains(p.out.String(), "Address already in use")
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago. All listeners are open at once so the kernel hands out distinct
// ports; another process may still take one before redis-server binds it,
// which startLocal handles by retrying.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// quoteArgs quotes empty arguments so a logged command line can be pasted.
func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return q
}

// tailBuffer is an io.Writer that keeps the last tailMax bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 64 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = append(b.buf[:0:0], b.buf[len(b.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
