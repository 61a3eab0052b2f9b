package redistest

import (
	"bufio"
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
)

// binDirs are searched after PATH: Debian installs redis-server in
// /usr/bin, some images only have /usr/sbin or /usr/local/bin, and PATH in
// IDEs and CI steps is often minimal. Tests replace it.
var binDirs = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/homebrew/bin"}

// redisServerPath returns the redis-server binary to use, or "".
func redisServerPath() string { return findBinary("redis-server") }

// redisSentinelPath returns the redis-sentinel binary, or "" (then
// sentinels run as "redis-server <conf> --sentinel").
func redisSentinelPath() string { return findBinary("redis-sentinel") }

func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range binDirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// dockerReachable reports whether "docker info" succeeds within 5 seconds.
// It is asked once per test binary. Tests replace it.
var dockerReachable = sync.OnceValue(func() bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "info")
	cmd.WaitDelay = time.Second
	return cmd.Run() == nil
})

// containerStartTimeout bounds building the helper, pulling the image and
// starting the container.
const containerStartTimeout = 5 * time.Minute

// startContainer starts Redis in Docker through the rediscontainer command
// of the testtools module, which keeps testcontainers-go out of the library
// module. The helper prints "host:port" and removes the container when its
// stdin closes; closing stdin is how the server is stopped, and the OS
// closes it for us if the test binary dies.
func startContainer(cfg config) (*Server, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("redistest: Docker is reachable but the go command is not on PATH to run testtools/cmd/rediscontainer: %w", err)
	}
	args := append([]string{"run", "./cmd/rediscontainer"}, cfg.args...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = filepath.Join(root, "testtools")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	stdout := &tailBuffer{}
	stderr := &tailBuffer{}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redistest: go run ./cmd/rediscontainer in %s: %w", cmd.Dir, err)
	}
	p := &process{cmd: cmd, out: stderr, done: make(chan struct{}), stdin: stdin}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	fail := func(err error) (*Server, error) {
		p.stopContainer()
		return nil, fmt.Errorf("redistest: Redis in Docker (testtools/cmd/rediscontainer): %w\noutput:\n%s", err, stderr.String())
	}
	deadline := time.Now().Add(containerStartTimeout)
	var addr string
	for addr == "" {
		if line, ok := firstLine(stdout.String()); ok {
			addr = line
			break
		}
		if p.exited() {
			return fail(fmt.Errorf("exited before printing an address: %v", p.err))
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("no address within %v", containerStartTimeout))
		}
		time.Sleep(100 * time.Millisecond)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(fmt.Errorf("bad address %q: %w", addr, err))
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fail(fmt.Errorf("bad address %q: %w", addr, err))
	}
	// The helper is not the server (that runs in the container): no pid check.
	if err := waitReady(p, addr, 0); err != nil {
		return fail(err)
	}
	return &Server{spec: spec{cfg: cfg, host: host, port: port}, container: p}, nil
}

// stopContainer closes the helper's stdin, so it removes the container,
// and waits for it; it kills the helper if that takes over a minute.
func (p *process) stopContainer() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
	}
}

// firstLine returns the first complete line of s, trimmed.
func firstLine(s string) (string, bool) {
	line, _, ok := strings.Cut(s, "\n")
	return strings.TrimSpace(line), ok
}

// libraryModule is the module line that marks the repository root.
const libraryModule = "module github.com/redisync/redisync"

// repoRoot walks up from the working directory (go test runs tests in the
// package directory) to the directory whose go.mod declares the library
// module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("redistest: %w", err)
	}
	for {
		if isLibraryRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("redistest: cannot find the repository root (a go.mod with \"" + libraryModule + "\") above the working directory")
		}
		dir = parent
	}
}

func isLibraryRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == libraryModule {
			return true
		}
	}
	return false
}
