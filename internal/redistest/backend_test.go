package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fatalTB records how a harness function ended the test, without ending
// the real one.
type fatalTB struct {
	testing.TB
	fatal, skip string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...); runtime.Goexit() }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) Skip(args ...any) { f.skip = fmt.Sprint(args...); runtime.Goexit() }

func (f *fatalTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) SkipNow() { f.skip = "SkipNow"; runtime.Goexit() }

// run calls fn with f in a goroutine of its own, so that Fatal can end it.
func (f *fatalTB) run(fn func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
}

// TestNoRedisFails checks that a machine without redis-server and without
// Docker fails the test with install instructions instead of skipping it.
// Not parallel: it changes PATH and package variables.
func TestNoRedisFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	oldDirs, oldDocker := binDirs, dockerReachable
	binDirs, dockerReachable = nil, func() bool { return false }
	t.Cleanup(func() { binDirs, dockerReachable = oldDirs, oldDocker })
	// Hide a shared server left by an earlier -count iteration.
	shared.mu.Lock()
	oldShared := shared.s
	shared.s = nil
	shared.mu.Unlock()
	t.Cleanup(func() {
		shared.mu.Lock()
		shared.s = oldShared
		shared.mu.Unlock()
	})

	for name, fn := range map[string]func(testing.TB){
		"Start":  func(tb testing.TB) { Start(tb) },
		"Shared": func(tb testing.TB) { Shared(tb) },
	} {
		f := &fatalTB{TB: t}
		f.run(fn)
		assert.Empty(t, f.skip, "%s skipped; it must fail", name)
		want := `redistest: no redis-server found on PATH and no Docker engine reachable. Install Redis with "apt-get install -y redis-server" (Debian/Ubuntu) or run "make test", which installs it.`
		assert.Equal(t, want, f.fatal, "%s failed with another message", name)
	}

	f := &fatalTB{TB: t}
	f.run(func(tb testing.TB) { StartCluster(tb, 3) })
	assert.NotEmpty(t, f.fatal, "StartCluster without redis-server did not fail")
	assert.Empty(t, f.skip, "StartCluster without redis-server skipped")
}

func TestStartClusterTooSmall(t *testing.T) {
	t.Parallel()
	f := &fatalTB{TB: t}
	f.run(func(tb testing.TB) { StartCluster(tb, 2) })
	assert.NotEmpty(t, f.fatal, "StartCluster(2) did not fail the test")
}

// TestRepoRoot checks that the Docker fallback finds the testtools module.
func TestRepoRoot(t *testing.T) {
	t.Parallel()
	root, err := repoRoot()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "testtools", "cmd", "rediscontainer", "main.go"))
	require.NoError(t, err, "repoRoot() = %s, which has no testtools/cmd/rediscontainer", root)
}

// TestAddrInUseDetected checks that a lost bind race is recognised, which
// is what makes Start retry on a new port and Restart retry on its own.
func TestAddrInUseDetected(t *testing.T) {
	t.Parallel()
	bin := redisServerPath()
	require.NotEmpty(t, bin, errNoBackend.Error())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := &Server{spec: spec{host: "127.0.0.1", port: ln.Addr().(*net.TCPAddr).Port, dir: t.TempDir(), bin: bin}}
	p, err := s.launch()
	if err == nil {
		p.kill()
		require.FailNowf(t, "started on a port in use", "redis-server started on port %d, which we hold", s.port)
	}
	require.True(t, isAddrInUse(p), "not recognised as a bind race: %v", err)
}

// TestForeignServerNotTakenForOurs checks the other side of a lost bind
// race: when another test process's redis-server holds the port, its
// answers must not be taken for those of ours, which exits with "Address
// already in use" and is retried on a new port.
func TestForeignServerNotTakenForOurs(t *testing.T) {
	t.Parallel()
	other := Start(t)
	s := &Server{spec: spec{host: "127.0.0.1", port: other.Port(), dir: t.TempDir(), bin: redisServerPath()}}
	p, err := s.launch()
	if err == nil {
		p.kill()
		require.FailNowf(t, "started on a port in use", "launch on %s, which another redis-server holds, succeeded", other.Addr())
	}
	require.True(t, isAddrInUse(p), "not recognised as a bind race: %v", err)
	pid, err := serverPID(other.Addr(), time.Second)
	require.NoError(t, err, "serverPID(%s)", other.Addr())
	require.Equal(t, other.proc.cmd.Process.Pid, pid, "serverPID(%s)", other.Addr())
}

// TestClusterProbeNoticesMissingLink checks that the PUBLISH probe of the
// readiness check fails while a node does not forward to another: after
// CLUSTER FORGET, node 0 has no bus link to node 2 for a minute.
func TestClusterProbeNoticesMissingLink(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Servers[0].Do(t, "CLUSTER", "FORGET", c.Servers[2].Do(t, "CLUSTER", "MYID"))
	err := c.carriesPublish(ctx, c.Servers)
	require.Error(t, err, "the probe passed while node 0 knows no node 2")
	require.ErrorContains(t, err, "did not reach", "want a message that did not reach a node")
}

// TestStartConcurrently starts servers at once, as parallel tests and test
// binaries do, and checks that while all of them run each has its own port
// and is the process that answers there.
func TestStartConcurrently(t *testing.T) {
	t.Parallel()
	const n = 4
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = start(newConfig(nil))
		}()
	}
	wg.Wait()
	ports := map[int]bool{}
	for i, s := range servers {
		if !assert.NoError(t, errs[i], "start %d", i) {
			continue
		}
		defer s.close()
		assert.False(t, ports[s.Port()], "port %d used twice", s.Port())
		ports[s.Port()] = true
		pid, err := serverPID(s.Addr(), 5*time.Second)
		if assert.NoError(t, err, "serverPID(%s)", s.Addr()) {
			assert.Equal(t, s.proc.cmd.Process.Pid, pid, "%s answered as another process", s.Addr())
		}
	}
}
