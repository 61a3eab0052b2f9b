package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestMixedFleet: node-redisson (npm), Redisson's lock protocol written by
// others, and redisync on one lock. Its owner field is "<uuid>:<uuid>",
// not "<uuid>:<n>", and a Go waiter once got ErrWrongType from it ("not a
// lock"): every Redisson-protocol holder is a holder. Each side waits for
// the other's hold and is woken by the other's release (not by the lease
// running out: the holds are taken with a 30 s lease).
func TestMixedFleet(t *testing.T) {
	dir := foreignDir(t)
	s := redistest.Shared(t)
	host, port, _ := strings.Cut(s.Addr(), ":")
	c := redisync.New(s.Client(t))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()

	t.Run("Go waits for node-redisson", func(t *testing.T) {
		name := redistest.Key(t)
		node := startNode(t, dir, host, port, "hold", name, "700")
		node.expect(t, "held")
		l := rlock.New(c, name)
		info, err := l.Inspect(ctx)
		require.NoError(t, err)
		require.Len(t, info.Holders, 1, "node-redisson's hold is a lock's")
		start := time.Now()
		ok, err := l.TryLock(ctx, 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Less(t, time.Since(start), 3*time.Second, "woken by node-redisson's release, not its 30 s lease")
		node.expect(t, "unlocked")
		require.NoError(t, l.Unlock(ctx))
	})

	t.Run("Go processes queued behind node-redisson", func(t *testing.T) {
		// Two Clients (processes) queue behind node-redisson's hold: the
		// first listens on Redisson's channel too (the holder is foreign)
		// and node-redisson's release wakes it; the second is woken by the
		// first's release, in its turn.
		name := redistest.Key(t)
		node := startNode(t, dir, host, port, "hold", name, "700")
		node.expect(t, "held")
		var got []chan time.Time
		var wg sync.WaitGroup
		defer wg.Wait() // before the Clients close
		for i := range 2 {
			gc := redisync.New(s.Client(t), redisync.WithRecheckInterval(time.Minute))
			t.Cleanup(func() { _ = gc.Close() })
			done := make(chan time.Time, 1)
			got = append(got, done)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := rlock.New(gc, name)
				if err := l.Lock(ctx); err != nil {
					t.Errorf("Go client %d: %v", i, err)
					return
				}
				done <- time.Now()
				time.Sleep(100 * time.Millisecond)
				assert.NoError(t, l.Unlock(ctx))
			}()
			require.Eventually(t, func() bool {
				n, err := s.Client(t).ZCard(ctx, "redisync_lock_waiters:{"+name+"}").Result()
				return err == nil && n == int64(i+1)
			}, 5*time.Second, 5*time.Millisecond, "Go client %d queued", i)
		}
		start := time.Now()
		first := <-got[0]
		assert.Less(t, first.Sub(start), 3*time.Second, "the first Go client woken by node-redisson's release")
		node.expect(t, "unlocked")
		select {
		case second := <-got[1]:
			assert.Less(t, second.Sub(first), 2*time.Second, "the second woken by the first's release")
		case <-time.After(5 * time.Second):
			t.Fatal("the second Go client not woken by the first's release")
		}
	})

	t.Run("node-redisson waits for Go", func(t *testing.T) {
		name := redistest.Key(t)
		l := rlock.New(c, name)
		require.NoError(t, l.Lock(ctx))
		node := startNode(t, dir, host, port, "wait", name, "8000")
		time.Sleep(700 * time.Millisecond)
		require.NoError(t, l.Unlock(ctx))
		var got struct {
			Got bool  `json:"got"`
			MS  int64 `json:"ms"`
		}
		node.decode(t, &got)
		assert.True(t, got.Got, "node-redisson took the lock Go released")
		assert.Less(t, got.MS, int64(3000), "woken by Go's release")
	})
}

// foreignDir returns the foreign client's folder, its npm dependencies
// installed (node-redisson, ioredis).
func foreignDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "foreign"))
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the mixed-fleet test needs Node.js (node on the PATH): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-redisson")); err != nil {
		install := exec.Command("npm", "install", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm install in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// nodeStep is one running mixed.js.
type nodeStep struct {
	lines *bufio.Scanner
	cmd   *exec.Cmd
}

func startNode(t *testing.T, dir string, args ...string) *nodeStep {
	t.Helper()
	cmd := exec.Command("node", append([]string{"mixed.js"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &nodeStep{lines: bufio.NewScanner(out), cmd: cmd}
}

// decode reads node's next line into v, within 15 s.
func (n *nodeStep) decode(t *testing.T, v any) {
	t.Helper()
	line := make(chan []byte, 1)
	go func() {
		if n.lines.Scan() {
			line <- append([]byte(nil), n.lines.Bytes()...)
		}
		close(line)
	}()
	select {
	case b, ok := <-line:
		require.True(t, ok, "node-redisson printed nothing (see its stderr)")
		require.NoError(t, json.Unmarshal(b, v), "%s", b)
	case <-time.After(15 * time.Second):
		t.Fatal("node-redisson did not answer within 15 s")
	}
}

// expect reads node's next line and requires the field key to be true.
func (n *nodeStep) expect(t *testing.T, key string) {
	t.Helper()
	var m map[string]bool
	n.decode(t, &m)
	require.True(t, m[key], "node-redisson: want %q, got %v", key, m)
}
