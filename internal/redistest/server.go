package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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
	spec // what runs where; fixed once the server started

	mu        sync.Mutex
	proc      *process // nil while stopped
	container *process // the rediscontainer helper; nil for local servers
	closed    bool
}

// spec is what a Server runs and where: its configuration, address,
// directory and binary, and the command line they make.
type spec struct {
	cfg  config
	host string
	port int
	bus  int    // cluster bus port; 0 unless cfg.cluster
	dir  string // --dir; removed when the server is closed
	bin  string // redis-server or redis-sentinel; "" for a container
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
func (s *spec) Addr() string {
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Port returns the server's TCP port. It does not change across Restart.
func (s *spec) Port() int { return s.port }

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
func (s *spec) rawClient() *redis.Client {
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

// RestartEmpty kills the server (SIGKILL), deletes what it persisted (the
// RDB file and the append-only files) and starts it again on the same port
// and directory, empty: a restart without its data, whatever its
// persistence options. It returns when the server answers PING, and fails
// the test as Restart does.
func (s *Server) RestartEmpty(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.wipe(t)
	s.Restart(t)
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
	s := &Server{spec: spec{cfg: cfg, host: "127.0.0.1", dir: dir, bin: bin}}
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

// running reports whether the server's process runs (it was not stopped).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil || s.container != nil
}
