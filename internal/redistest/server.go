package redistest

import (
	"bufio"
	"context"
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
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// readyTimeout bounds how long a starting server may take to answer
	// PING. Generous: CI machines are small and busy.
	readyTimeout = 10 * time.Second

	// bindAttempts is how many fresh ports Start tries when another process
	// grabbed the port between our probe and redis-server's bind.
	bindAttempts = 5

	// doTimeout bounds one Server.Do call.
	doTimeout = 30 * time.Second
)

// Server is one redis-server (or redis-sentinel) process started by Start,
// Shared, StartCluster or StartSentinel. Its methods are safe for
// concurrent use, but only the test that owns it should stop, pause or
// restart it.
type Server struct {
	cfg  config
	host string
	port int
	bus  int    // cluster bus port; 0 unless cfg.cluster
	dir  string // --dir; removed when the server is closed
	bin  string // redis-server or redis-sentinel; "" for a container

	mu        sync.Mutex
	proc      *process // nil while stopped
	container *process // the rediscontainer helper; nil for local servers
	closed    bool
}

// process is a started child process and the output it has written.
type process struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{} // closed when cmd.Wait has returned
	err  error         // cmd.Wait's result; read only after done

	stdin io.WriteCloser // the rediscontainer helper's stdin; nil otherwise
}

// Start starts a new redis-server on a free 127.0.0.1 port and returns when
// it answers PING. The server is killed and its directory removed when the
// test and its subtests finish (t.Cleanup). If the server cannot be
// started, Start fails the test with the server's output; if no
// redis-server binary is installed and no Docker engine is reachable, it
// fails the test saying how to install Redis. It never skips.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := start(newConfig(opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out := s.output(); out != "" {
				t.Logf("redistest: output of the server at %s:\n%s", s.Addr(), out)
			}
		}
		s.close()
	})
	return s
}

var shared struct {
	mu sync.Mutex
	s  *Server
}

// Shared returns the package-wide server, starting it on first use. It is
// stopped by Main after all tests ran, so a package that calls Shared must
// have TestMain call Main. Tests share its keyspace: they must name their
// keys with Key and must not stop, pause, restart or flush it. If the
// server cannot be started, Shared fails the test like Start, and the next
// call tries again.
func Shared(t testing.TB) *Server {
	t.Helper()
	s, err := startShared()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startShared returns the package-wide server, starting it on first use.
func startShared() (*Server, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.s == nil {
		s, err := start(config{})
		if err != nil {
			return nil, err
		}
		shared.s = s
	}
	return shared.s, nil
}

// stopShared stops the server Shared started, if any.
func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.s != nil {
		shared.s.close()
		shared.s = nil
	}
}

// Addr returns the server's address, "127.0.0.1:port" for a local server.
func (s *Server) Addr() string {
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Port returns the server's TCP port. It does not change across Restart.
func (s *Server) Port() int { return s.port }

// Client returns a new go-redis client for the server with go-redis's
// default options, changed by mods in order. The client is closed when the
// test finishes.
func (s *Server) Client(t testing.TB, mods ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: s.Addr()}
	for _, m := range mods {
		m(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Do runs one command on a new private connection and returns its reply
// decoded by go-redis with RESP2 (strings, int64, []any, nil for a nil
// reply). Any other error, including an error reply, fails the test. Do
// does not retry, so a command runs at most once.
func (s *Server) Do(t testing.TB, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	v, err := s.do(ctx, args...)
	if err != nil {
		t.Fatalf("redistest: %v on %s: %v", args, s.Addr(), err)
	}
	return v
}

// do is Do without the test: it returns the error.
func (s *Server) do(ctx context.Context, args ...any) (any, error) {
	c := s.rawClient()
	defer c.Close()
	v, err := c.Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// rawClient returns a one-connection client on s for the harness's own
// commands: RESP2, no CLIENT SETINFO, no retries. It is the caller's to
// close.
func (s *Server) rawClient() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            s.Addr(),
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        1,
		ReadTimeout:     doTimeout,
	})
}

// Stop kills the server with SIGKILL and waits until it has exited, so its
// port is free. Stopping a stopped server does nothing. Stop fails the test
// for a server that runs in a Docker container.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.needLocal(t, "Stop")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

// Restart stops the server if it is running, starts it again on the same
// port and directory, and returns when it answers PING. Data written
// before is lost (nothing is persisted), but a cluster node keeps its
// identity. Restart fails the test if the server does not come back within
// 10 seconds, or for a server that runs in a Docker container.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.needLocal(t, "Restart")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		t.Fatalf("redistest: Restart of %s after the server was closed", s.Addr())
	}
	s.kill()
	// The port was ours a moment ago; retry briefly in case the kernel or a
	// racing dialer still holds it.
	deadline := time.Now().Add(readyTimeout)
	for {
		p, err := s.launch()
		if err == nil {
			s.proc = p
			return
		}
		if !isAddrInUse(p) || time.Now().After(deadline) {
			t.Fatalf("redistest: Restart on %s: %v", s.Addr(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wipe deletes what a stopped local server persisted in its directory
// (the RDB file and the append-only files), so that its next start is
// empty. It keeps a cluster node's nodes.conf and a sentinel's config.
func (s *Server) wipe(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		t.Fatalf("redistest: wipe of %s while it runs", s.Addr())
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatalf("redistest: wipe of %s: %v", s.Addr(), err)
	}
	for _, e := range entries {
		n := e.Name()
		if n == "dump.rdb" || n == "appendonlydir" || strings.HasPrefix(n, "appendonly") || strings.HasPrefix(n, "temp-") {
			if err := os.RemoveAll(filepath.Join(s.dir, n)); err != nil {
				t.Fatalf("redistest: wipe of %s: %v", s.Addr(), err)
			}
		}
	}
}

// Pause stops the server process with SIGSTOP: it keeps its connections
// and port but answers nothing until Resume. Pause fails the test if the
// server is not running or runs in a Docker container.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, "Pause", sigStop)
}

// Resume continues a server stopped by Pause with SIGCONT. Resume fails the
// test if the server is not running or runs in a Docker container.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, "Resume", sigCont)
}

func (s *Server) signal(t testing.TB, op string, sig os.Signal) {
	t.Helper()
	s.needLocal(t, op)
	if sig == nil {
		t.Fatalf("redistest: %s needs SIGSTOP/SIGCONT, which this OS does not have", op)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		t.Fatalf("redistest: %s: the server at %s is not running", op, s.Addr())
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: %s of %s: %v", op, s.Addr(), err)
	}
}

// needLocal fails the test if s runs in a container, where the harness
// cannot send signals to the process.
func (s *Server) needLocal(t testing.TB, op string) {
	t.Helper()
	if s.bin == "" {
		t.Fatalf("redistest: %s needs a local redis-server, but the server at %s runs in a Docker container; "+
			"install Redis (\"apt-get install -y redis-server\") or run \"make test\", which installs it", op, s.Addr())
	}
}

// start starts a server for cfg with whichever backend is available. On
// failure it leaves nothing behind.
func start(cfg config) (*Server, error) {
	if bin := redisServerPath(); bin != "" {
		return startLocal(cfg, bin)
	}
	if cfg.cluster || cfg.sentinelOf != "" {
		return nil, errors.New("redistest: clusters and sentinels need a local redis-server binary, and none was found on PATH. " +
			"Install Redis with \"apt-get install -y redis-server redis-sentinel\" (Debian/Ubuntu) or run \"make test\", which installs it.")
	}
	if dockerReachable() {
		return startContainer(cfg)
	}
	return nil, errNoBackend
}

// errNoBackend is the failure when neither a redis-server binary nor a
// Docker engine is available.
var errNoBackend = errors.New(`redistest: no redis-server found on PATH and no Docker engine reachable. ` +
	`Install Redis with "apt-get install -y redis-server" (Debian/Ubuntu) or run "make test", which installs it.`)

// startLocal starts bin on a fresh port, trying new ports when the bind
// races with another process.
func startLocal(cfg config, bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{cfg: cfg, host: "127.0.0.1", dir: dir, bin: bin}
	if cfg.sentinelOf != "" {
		if sb := redisSentinelPath(); sb != "" {
			s.bin = sb
		}
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: %w", err)
		}
		s.port = ports[0]
		if cfg.cluster {
			s.bus = ports[1]
		}
		p, err := s.launch()
		if err == nil {
			s.proc = p
			return s, nil
		}
		if !isAddrInUse(p) || attempt == bindAttempts {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: start %s: %w", s.bin, err)
		}
	}
}

// launch starts the process on s.port and waits until it answers PING. On
// failure the process has exited and the returned process (non-nil if it
// was started at all) holds its output.
func (s *Server) launch() (*process, error) {
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
func (s *Server) args() ([]string, error) {
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

// kill stops the process, if running, and waits for it. s.mu must be held.
func (s *Server) kill() {
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// close stops the server for good and removes its directory. Closing twice
// does nothing.
func (s *Server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.kill()
	if s.container != nil {
		s.container.stopContainer()
		s.container = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// output returns the tail of what the server process wrote.
func (s *Server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.proc != nil:
		return s.proc.out.String()
	case s.container != nil:
		return s.container.out.String()
	}
	return ""
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

// running reports whether the server's process runs (it was not stopped).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil || s.container != nil
}
