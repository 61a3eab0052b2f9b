package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// runMainEnv set to "1" in the environment makes this test binary run the
// command's main with its arguments instead of the tests, so a test can
// run the command as a process (see runProcess).
const runMainEnv = "REDISYNC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // exits
	}
	// The tests name their server with -redis; a REDIS_URL of the machine
	// running them must not leak in. TestRedisURLEnv sets its own.
	env = func(string) string { return "" }
	redistest.Main(m)
}

// processBound is how long a command run as a process may take on a busy
// machine.
const processBound = 60 * time.Second

// runProcess runs the command line args as a process (this test binary
// running main, see TestMain), for what run cannot show: what main does
// to the process, and what libraries print to the process's stderr.
func runProcess(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "REDIS_URL=")
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("redisync %s did not finish within %v", strings.Join(args, " "), processBound)
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run redisync %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("process redisync %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{code, out.String(), errOut.String()}
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
		{"help sentinel URL", []string{"help"}, 0, "redis-sentinel://[user:password@]host:port[,host:port...]/master[/db]"},
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
		// Regression: said `bad Redis URL "(unparsable URL)": parse "redis://…": …`.
		{"bad URL port", []string{"inspect", "-redis", "redis://127.0.0.1:notaport", "x"}, 2, `redisync: inspect: bad Redis URL "redis://127.0.0.1:notaport": invalid port ":notaport" after host` + "\n"},
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
	for _, tc := range []struct {
		url    string
		code   int
		secret string // must not show
		show   string // must show
	}{
		{"redis://user:s3cret@127.0.0.1:1/0", 1, "s3cret", "cannot reach Redis at redis://user:xxxxx@127.0.0.1:1/0: "},
		// A URL that does not parse: url.Parse's error quotes it whole.
		{"redis://user:s3cret@127.0.0.1:notaport", 2, "s3cret", `bad Redis URL "redis://user:xxxxx@127.0.0.1:notaport": invalid port ":notaport"`},
		// An unencoded "/" makes url.Parse take the password's start for a port.
		{"redis://user:s3/cret@127.0.0.1:1", 2, "s3", `bad Redis URL "redis://user:xxxxx@127.0.0.1:1": it does not parse; percent-encode`},
		{"redis://127.0.0.1:1?password=s3cret&frob=1", 2, "s3cret", `bad Redis URL "redis://127.0.0.1:1?password=xxxxx&frob=1": unexpected option`},
	} {
		res := runCmd(t, nil, "inspect", "-redis", tc.url, "x")
		if res.code != tc.code || strings.Contains(res.stderr, tc.secret) || !strings.Contains(res.stderr, tc.show) {
			t.Errorf("%s: exit %d, stderr %q: want exit %d, %q shown and %q hidden", tc.url, res.code, res.stderr, tc.code, tc.show, tc.secret)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"redis://127.0.0.1:6379/2":                     "redis://127.0.0.1:6379/2",
		"redis://user@h:1":                             "redis://user@h:1",
		"redis://user:pw@h:1/0":                        "redis://user:xxxxx@h:1/0",
		"redis://:pw@h":                                "redis://:xxxxx@h",
		"rediss://u:p@ss@h:1":                          "rediss://u:xxxxx@h:1",
		"redis://u:p/w@h:1?dial_timeout=1":             "redis://u:xxxxx@h:1?dial_timeout=1",
		"redis://h:1?password=pw&sentinel_password=sp": "redis://h:1?password=xxxxx&sentinel_password=xxxxx",
		"redis-sentinel://u:pw@a:1,b:2/mymaster/3":     "redis-sentinel://u:xxxxx@a:1,b:2/mymaster/3",
		"unix://u:pw@/run/redis.sock":                  "unix://u:xxxxx@/run/redis.sock",
	} {
		if got := redactURL(raw); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", raw, got, want)
		}
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

// TestNoGoRedisLog: on an unreachable server the command printed four
// go-redis log lines ("redis: <date> pool.go:762: ... failed to dial after
// 5 attempts") before its own message. Only its own message remains.
func TestNoGoRedisLog(t *testing.T) {
	t.Parallel()
	res := runProcess(t, "inspect", "-redis", "redis://127.0.0.1:1", "x")
	if res.code != exitError {
		t.Errorf("exit %d, want %d", res.code, exitError)
	}
	if strings.Contains(res.stderr, "pool.go") {
		t.Errorf("stderr has go-redis's log lines:\n%s", res.stderr)
	}
	const want = "redisync: inspect: cannot reach Redis at redis://127.0.0.1:1: "
	if lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("stderr is not one line starting with %q:\n%s", want, res.stderr)
	}
}

// TestRedisRefused: a server that answers with an error (here: a database
// it does not have, a user it does not know) was reported as "cannot reach
// Redis". It is reported as refusing, with its error.
func TestRedisRefused(t *testing.T) {
	t.Parallel()
	addr := redistest.Shared(t).Addr()
	for url, reply := range map[string]string{
		"redis://" + addr + "/99":              "ERR DB index is out of range",
		"redis://nobody:s3cret@" + addr + "/0": "WRONGPASS",
	} {
		res := runCmd(t, nil, "inspect", "-redis", url, "x")
		want := "redisync: inspect: connected to Redis at " + redactURL(url) + ", but it refused: " + reply
		if res.code != exitError || !strings.HasPrefix(res.stderr, want) || strings.Contains(res.stderr, "cannot reach") {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", url, res.code, res.stderr, exitError, want)
		}
	}
}

// TestVersion: "redisync version" prints the module, its version and the
// Go version and platform it was built with.
func TestVersion(t *testing.T) {
	t.Parallel()
	res := runCmd(t, nil, "version")
	if res.code != exitOK || res.stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	v := readVersion()
	for _, s := range []string{"redisync " + v.version + "\n", "module:   " + v.module + "\n", "go:       " + v.goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("output %q does not contain %q", res.stdout, s)
		}
	}
	if v.goVersion != runtime.Version() {
		t.Errorf("go version %q, want the runtime's %q", v.goVersion, runtime.Version())
	}
	var b strings.Builder
	writeVersion(&b, buildVersion{module: modulePath, version: "v1.2.3", revision: "abc123", time: "2026-11-25T12:00:00Z", modified: true, goVersion: "go1.24.1"})
	if want := "revision: abc123 (2026-11-25T12:00:00Z), with uncommitted changes\n"; !strings.Contains(b.String(), want) {
		t.Errorf("output %q does not contain %q", b.String(), want)
	}
	if res := runCmd(t, nil, "version", "extra"); res.code != exitUsage || !strings.Contains(res.stderr, "version takes no arguments") {
		t.Errorf("version extra: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := runCmd(t, nil, "help", "version"); res.code != exitOK || !strings.HasPrefix(res.stdout, "usage: redisync version") {
		t.Errorf("help version: exit %d, stdout %q", res.code, res.stdout)
	}
}
