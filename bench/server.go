package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// binDirs are searched for redis-server after PATH, as the test harness of
// the library module does: Debian installs it in /usr/bin, some images only
// have /usr/sbin or /usr/local/bin, and PATH under make or an IDE is often
// minimal.
var binDirs = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/homebrew/bin"}

// findRedisServer returns the redis-server binary to start, or an error
// saying how to install one.
func findRedisServer() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, dir := range binDirs {
		p := filepath.Join(dir, "redis-server")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("redis-server not found on PATH or in " + strings.Join(binDirs, ", ") +
		"; install Redis 7 (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis; " +
		"\"make test\" installs it) or point the tool at a running server with -redis host:port")
}

// server is a redis-server process started by the tool: on a free loopback
// port, without persistence, in a temporary directory, killed by stop (and,
// on Linux, by the kernel if the tool dies).
type server struct {
	addr string
	cmd  *exec.Cmd
	dir  string
	out  *tailBuffer
	done chan struct{}
	err  error // the process's exit status, once done is closed

	stopOnce sync.Once
}

// startServer starts redis-server from bin. A port taken by another process
// between probing and binding is retried on a new port.
func startServer(bin string, extra ...string) (*server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := startServerOnce(bin, extra...)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startServerOnce(bin string, extra ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startServerOn(bin, port, extra...)
}

// startServerOn starts redis-server from bin on port, with the extra
// arguments, and returns once it, and not some other process on that
// port, answers.
func startServerOn(bin string, port int, extra ...string) (*server, error) {
	dir, err := os.MkdirTemp("", "redisync-bench-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory for redis-server: %w", err)
	}
	s := &server{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  dir,
		out:  &tailBuffer{},
		done: make(chan struct{}),
	}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "no",
		"--loglevel", "warning",
	)
	s.cmd.Args = append(s.cmd.Args, extra...)
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	s.cmd.SysProcAttr = serverProcAttr()
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("redis-server on %s: %w\noutput:\n%s", s.addr, err, s.out.String())
	}
	return s, nil
}

// waitReady waits until the server answers, and checks that the answer
// comes from the process it started: when another process took the port
// first, that process's server answers while ours exits with "Address
// already in use", and benchmarking the foreign server would be wrong.
func (s *server) waitReady(timeout time.Duration) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("exited at start: %v", s.err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := rdb.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			if pid := infoField(info, "process_id"); pid != strconv.Itoa(s.cmd.Process.Pid) {
				err = fmt.Errorf("%s is served by another process (pid %s, ours is %d)", s.addr, pid, s.cmd.Process.Pid)
			} else {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// infoField returns the value of field in an INFO reply, or "".
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// stop kills the server, waits for it and removes its directory. It is
// safe to call more than once and from several goroutines.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
		_ = os.RemoveAll(s.dir)
	})
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("probe a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last 8 KiB written to it: enough of redis-server's
// output to explain a failed start.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailSize {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// startReplica starts a redis-server replicating the one at primary and
// waits until the primary reports it online.
func startReplica(ctx context.Context, bin, primary string) (*server, error) {
	rep, err := startServer(bin)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(primary)
	rdb := redis.NewClient(&redis.Options{Addr: rep.addr})
	defer rdb.Close()
	if err := rdb.Do(ctx, "replicaof", host, port).Err(); err != nil {
		rep.stop()
		return nil, fmt.Errorf("replica on %s: %w", rep.addr, err)
	}
	prim := redis.NewClient(&redis.Options{Addr: primary})
	defer prim.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := prim.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "state=online") {
			return rep, nil
		}
		if time.Now().After(deadline) {
			rep.stop()
			return nil, fmt.Errorf("replica on %s: not online within 30 s (%v)", rep.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
