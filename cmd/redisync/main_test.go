package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	// The tests name their server with -redis; a REDIS_URL of the machine
	// running them must not leak in. TestRedisURLEnv sets its own.
	env = func(string) string { return "" }
	redistest.Main(m)
}

// result is what one run of the command produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs the command line args with stdin and returns its exit status
// and output.
func runCmd(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	code := run(args, stdin, &out, &errOut)
	t.Logf("redisync %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{code, out.String(), errOut.String()}
}

// testURL returns the redis:// URL of the shared test server.
func testURL(t *testing.T) string {
	return "redis://" + redistest.Shared(t).Addr()
}

// newClient returns a redisync Client (a simulated process) on the shared
// server, closed at the end of the test.
func newClient(t *testing.T, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	c := redisync.New(redistest.Shared(t).Client(t), opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// inspectJSON runs inspect -json on name and decodes the report.
func inspectJSON(t *testing.T, name string, extra ...string) Report {
	t.Helper()
	args := append([]string{"inspect", "-redis", testURL(t), "-json"}, extra...)
	res := runCmd(t, nil, append(args, name)...)
	if res.code != 0 {
		t.Fatalf("inspect %s: exit %d: %s", name, res.code, res.stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("inspect -json output does not parse: %v\n%s", err, res.stdout)
	}
	return r
}

// waitSubscribers waits until channel has n subscribers.
func waitSubscribers(t *testing.T, channel string, n int64) {
	t.Helper()
	rdb := redistest.Shared(t).Client(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := rdb.PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if m[channel] == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d subscribers after 10s, want %d", channel, m[channel], n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rdb returns a go-redis client on the shared server.
func rdb(t *testing.T) *redis.Client { return redistest.Shared(t).Client(t) }

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{"no command", nil, 2, "Usage:"},
		{"help", []string{"help"}, 0, "The commands are"},
		{"help command", []string{"help", "inspect"}, 0, "usage: redisync inspect"},
		{"help unknown", []string{"help", "frob"}, 2, `redisync: help: unknown command "frob"`},
		{"unknown command", []string{"frob"}, 2, `redisync: unknown command "frob"`},
		{"-h", []string{"-h"}, 0, "The commands are"},
		{"demo -h", []string{"demo", "-h"}, 0, "usage: redisync demo"},
		{"inspect -h", []string{"inspect", "-h"}, 0, "-type TYPE"},
		{"unlock --help", []string{"unlock", "--help"}, 0, "-force"},
		{"bad flag", []string{"inspect", "-frob", "x"}, 2, "redisync: inspect: flag provided but not defined: -frob\nRun 'redisync inspect -h' for usage."},
		{"bad type", []string{"inspect", "-type", "mutex", "x"}, 2, `redisync: inspect: invalid value "mutex" for flag -type: unknown type "mutex"`},
		{"bad flag value", []string{"unlock", "-yes=maybe", "x"}, 2, "redisync: unlock: invalid boolean value"},
		{"inspect without name", []string{"inspect", "-redis", "redis://127.0.0.1:1"}, 2, "want exactly one NAME"},
		{"inspect two names", []string{"inspect", "a", "b"}, 2, "want exactly one NAME"},
		{"inspect without server", []string{"inspect", "x"}, 2, "pass -redis URL or set REDIS_URL"},
		{"unlock without server", []string{"unlock", "-force", "-yes", "x"}, 2, "pass -redis URL or set REDIS_URL"},
		{"unlock without -force", []string{"unlock", "-yes", "-redis", "redis://127.0.0.1:1", "x"}, 2, "-force is required"},
		{"bad URL scheme", []string{"inspect", "-redis", "http://x", "x"}, 2, "invalid URL scheme"},
		{"bad URL db", []string{"inspect", "-redis", "redis://localhost/x", "x"}, 2, "invalid database number"},
		{"demo argument", []string{"demo", "now"}, 2, "unexpected arguments"},
		{"unreachable server", []string{"inspect", "-redis", "redis://127.0.0.1:1", "x"}, 1, "redisync: inspect: cannot reach Redis at redis://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCmd(t, nil, tc.args...)
			if res.code != tc.code {
				t.Errorf("exit %d, want %d", res.code, tc.code)
			}
			if !strings.Contains(res.stdout+res.stderr, tc.out) {
				t.Errorf("output does not contain %q", tc.out)
			}
			if tc.code != 0 && res.stdout != "" {
				t.Errorf("a failure printed to stdout: %q", res.stdout)
			}
			if tc.code != 0 && len(tc.args) > 0 && !strings.HasPrefix(res.stderr, "redisync: ") {
				t.Errorf("error message not prefixed with %q: %q", "redisync: ", res.stderr)
			}
			if tc.code == 0 && (res.stdout == "" || res.stderr != "") {
				t.Errorf("help went to stderr, or nowhere")
			}
		})
	}
}

func TestRedactedURL(t *testing.T) {
	t.Parallel()
	res := runCmd(t, nil, "inspect", "-redis", "redis://user:s3cret@127.0.0.1:1/0", "x")
	if res.code != 1 || strings.Contains(res.stderr, "s3cret") || !strings.Contains(res.stderr, "user:xxxxx@") {
		t.Errorf("exit %d, stderr %q: want exit 1 and the password hidden", res.code, res.stderr)
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		json bool
		pos  []string
	}{
		{[]string{"-json", "a"}, true, []string{"a"}},
		{[]string{"a", "-json"}, true, []string{"a"}},
		{[]string{"a", "--json", "b"}, true, []string{"a", "b"}},
		{[]string{"--", "-json"}, false, []string{"-json"}},
		{[]string{"a", "--", "-json"}, false, []string{"a", "-json"}},
		{nil, false, nil},
	} {
		fs, o := inspectFlags()
		pos, err := parseFlags(fs, tc.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if o.json != tc.json || strings.Join(pos, ",") != strings.Join(tc.pos, ",") {
			t.Errorf("%q: json %v, positional %q; want %v, %q", tc.args, o.json, pos, tc.json, tc.pos)
		}
	}
}

// TestRedisURLEnv checks that REDIS_URL names the server, that a bare
// host:port is accepted, and that -redis wins over REDIS_URL. It changes
// the env hook, so it does not run in parallel.
func TestRedisURLEnv(t *testing.T) {
	name := redistest.Key(t, "lock")
	rdb(t).HSet(context.Background(), name, "id:1", 1)
	defer func(old func(string) string) { env = old }(env)

	env = func(k string) string {
		if k == "REDIS_URL" {
			return testURL(t)
		}
		return ""
	}
	if res := runCmd(t, nil, "inspect", name); res.code != 0 || !strings.Contains(res.stdout, "lock") {
		t.Errorf("with REDIS_URL: exit %d", res.code)
	}
	if res := runCmd(t, nil, "inspect", "-redis", "redis://127.0.0.1:1", name); res.code != 1 || !strings.Contains(res.stderr, "127.0.0.1:1") {
		t.Errorf("-redis did not win over REDIS_URL: exit %d", res.code)
	}
	env = func(k string) string {
		if k == "REDIS_URL" {
			return "redis://127.0.0.1:1"
		}
		return ""
	}
	if res := runCmd(t, nil, "inspect", "-redis", redistest.Shared(t).Addr(), name); res.code != 0 {
		t.Errorf("-redis host:port over a bad REDIS_URL: exit %d", res.code)
	}
}
