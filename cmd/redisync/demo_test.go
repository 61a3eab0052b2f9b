package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demoBound is how long the demo may take in a test on a busy machine; it
// takes about 13 s.
const demoBound = 60 * time.Second

// demoLines are lines (or parts of lines) every run of the demo prints.
var demoLines = []string{
	`== 1. lock: three workers contend`,
	`acquires "orders" at once (fencing token `,
	`re-enters "orders": hold count 2`,
	`wants "orders": it is held, so it waits`,
	`the watchdog renews the lease: `,
	`CRASHES: the process dies without unlocking`,
	`redisync inspect `,
	`| type:     lock (a hash of owner fields)`,
	`after the crash: the lease ran out`,
	`read-locks "config": 3 readers inside`,
	`wants to write "config": readers hold it, so it waits`,
	`| state:    read-locked, held by 3 owners`,
	`it writes alone`,
	`2 of 2 jobs running`,
	`wants a permit: none left, waits`,
	`returned by itself`,
	`| permit:   `,
	`counts down: 0 left`,
	`released: the latch is open`,
	`== summary`,
	`never two holders at once`,
	`up to 3 readers at once; the writer always wrote alone`,
	`5 jobs, at most 2 running at once with 2 permits`,
	`released 4 waiters`,
	`wants "account:1" and "account:2" together: "account:2" is busy, so it waits for it holding neither`,
	`holds "account:1" and "account:2" after `,
	`the transfer held both accounts after `,
	`demo finished in `,
}

// checkDemo runs the demo with args and checks its output.
func checkDemo(t *testing.T, args ...string) result {
	t.Helper()
	start := time.Now()
	res := runCmd(t, nil, append([]string{"demo"}, args...)...)
	took := time.Since(start)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if res.stderr != "" {
		t.Errorf("the demo wrote to stderr: %q", res.stderr)
	}
	if took > demoBound {
		t.Errorf("the demo took %v, want < %v", took, demoBound)
	}
	for _, s := range demoLines {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("the demo's output does not contain %q", s)
		}
	}
	// Every event line starts with the time since the start.
	event := regexp.MustCompile(`^\+\d+\.\d{3}s +`)
	for _, line := range strings.Split(res.stdout, "\n") {
		if line != "" && !strings.HasPrefix(line, "==") && !strings.HasPrefix(line, "  ") &&
			!strings.HasPrefix(line, "demo finished") && !strings.HasPrefix(strings.TrimSpace(line), "|") && !event.MatchString(line) {
			t.Errorf("line without a timestamp: %q", line)
		}
	}
	return res
}

// TestDemoEmbedded runs the demo as "go run ./cmd/redisync demo" does on a
// machine without Redis: on the embedded server.
func TestDemoEmbedded(t *testing.T) {
	t.Parallel()
	res := checkDemo(t)
	if !strings.Contains(res.stdout, "started an embedded in-process Redis (miniredis)") {
		t.Error("the demo does not say it started an embedded server")
	}
}

// TestDemoServer runs the demo on a real redis-server and checks that it
// leaves no key behind.
func TestDemoServer(t *testing.T) {
	t.Parallel()
	res := checkDemo(t, "-redis", testURL(t))
	m := regexp.MustCompile(`the demo's keys start with "([^"]+)"`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatal("the demo does not name its key prefix")
	}
	left, err := rdb(t).Keys(context.Background(), "*"+m[1]+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the demo left keys behind: %q", left)
	}
}
