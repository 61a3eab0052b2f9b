package redistest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs the package's tests with m.Run, then stops the server Shared
// started (if any), then checks for leaked goroutines with goleak, and
// exits. The exit status is m.Run's, or 1 if the tests passed but
// goroutines were left running (goleak.VerifyTestMain semantics: the leak
// check is skipped when tests failed). Goroutines that already existed
// before the tests started are not counted. Call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M, opts ...MainOption) {
	var cfg mainConfig
	for _, o := range opts {
		o(&cfg)
	}
	logs := installQuietLogger()
	goleak.VerifyTestMain(runner{m, cfg, logs}, append(leakIgnores(), goleak.IgnoreCurrent())...)
}

// MainOption configures Main.
type MainOption func(*mainConfig)

type mainConfig struct {
	exampleAddr *string
}

// WithExampleAddr makes Main start the shared server before the tests and
// store its address in *addr, so that a package's Example functions, which
// get no *testing.T, can connect to a real Redis:
//
//	var exampleAddr = "localhost:6379" // what the docs show
//	func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }
//
// If the server cannot be started, Main fails the whole run with the
// harness's install instructions.
func WithExampleAddr(addr *string) MainOption {
	return func(c *mainConfig) { c.exampleAddr = addr }
}

// runner stops the shared server between the tests and the leak check, so
// the goroutine waiting for its process is gone before goleak looks.
type runner struct {
	m    *testing.M
	cfg  mainConfig
	logs *quietLogger
}

func (r runner) Run() int {
	if r.cfg.exampleAddr != nil {
		s, err := startShared()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		*r.cfg.exampleAddr = s.Addr()
	}
	code := r.m.Run()
	stopShared()
	r.logs.summary()
	return code
}

// leakIgnores lists goroutines that are not ours and may outlive a closed
// client for a moment. A client that was not closed still shows up as a
// leak (its pool, pub/sub or sentinel goroutines).
func leakIgnores() []goleak.Option {
	return []goleak.Option{
		// go-redis's ClusterClient reloads the slot map in the background
		// after MOVED/ASK or a node failure and then sleeps a 200 ms
		// cooldown, also after Close; it ends by itself.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*clusterStateHolder).LazyReload.func1"),
		// After as many failed dials as its pool size, go-redis re-dials a
		// dead server every second in the background and notices Close only
		// after its sleep; it ends by itself (tests that stop servers).
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	}
}
