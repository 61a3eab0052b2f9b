package lua_test

import (
	"context"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/lua/internal/bindgen"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// header returns the leading comment block of a script.
func header(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Every .lua file is wired to a script and opens with a header naming what
// it does, its KEYS, its ARGV and what it returns.
func TestEveryScriptHasHeaderAndIsWired(t *testing.T) {
	files, err := fs.Glob(lua.FS(), "*.lua")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	assert.ElementsMatch(t, files, append(lua.Names(), lua.Preludes()...), "every .lua file must be a prelude or loaded by a package-level script, and only those")
	for _, f := range files {
		src, ok := lua.Source(f)
		require.True(t, ok)
		h := header(src)
		name := strings.TrimSuffix(path.Base(f), ".lua")
		assert.True(t, strings.HasPrefix(h, "-- "+name+":"), "%s: header must start with %q", f, "-- "+name+":")
		for _, word := range []string{"KEYS", "ARGV", "Returns"} {
			assert.Contains(t, h, word, "%s: header must say %s", f, word)
		}
	}
}

// A script composed with a prelude starts with the prelude's definitions
// it uses, directly or through another one, in the prelude's order, and
// ends with its own text; the prelude's header and the definitions it does
// not use are left out.
func TestPreludeComposed(t *testing.T) {
	own, ok := lua.Source("latch_delete.lua")
	require.True(t, ok)
	src, ok := lua.Composed("latch_delete.lua")
	require.True(t, ok)
	require.True(t, strings.HasSuffix(src, own))
	defined := regexp.MustCompile(`(?m)^local (?:function )?(\w+)`)
	var names []string
	for _, m := range defined.FindAllStringSubmatch(strings.TrimSuffix(src, own), -1) {
		names = append(names, m[1])
	}
	// latch_delete calls number_at (prelude_types, first), which uses
	// wrong_type, then count_replay and record; count_replay uses replay,
	// which uses recorded and refuse_late; these share request_now and the
	// deadline's figures.
	assert.Equal(t, []string{"wrong_type", "number_at", "request_now", "request_deadline", "request_left", "recorded", "refuse_late", "record", "replay", "count_replay"}, names)
	prelude, ok := lua.Source("prelude_request.lua")
	require.True(t, ok)
	assert.NotContains(t, src, header(prelude))
}

// Every script compiles on a real redis-server and on miniredis, the demo's
// embedded server, and its digest, recorded when the bindings were
// generated (the library computes no SHA-1 at run time), is the one the
// server gives its composed source.
func TestScriptsCompile(t *testing.T) {
	ctx := context.Background()
	real := redistest.Shared(t).Client(t)
	mr := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = mini.Close() })
	for _, name := range lua.Names() {
		s := lua.Script(name)
		require.NotNil(t, s, name)
		src, ok := lua.Composed(name)
		require.True(t, ok, name)
		for server, rdb := range map[string]*redis.Client{"redis-server": real, "miniredis": mini} {
			sha, err := rdb.ScriptLoad(ctx, src).Result()
			if assert.NoError(t, err, "%s on %s", name, server) {
				assert.Equal(t, sha, s.Hash(), "%s: the recorded digest is not the one %s gives (run go generate ./lua)", name, server)
			}
		}
	}
}

// The committed bindings are what the headers generate: a header changed
// without `go generate ./lua` fails here. Generating also checks every
// loaded script's header against the syntax (package lua's documentation):
// each KEYS and ARGV entry named (and ARGV typed), numbered in order, and a
// Reply line.
func TestBindingsUpToDate(t *testing.T) {
	want, err := bindgen.Generate(os.DirFS("."))
	require.NoError(t, err)
	got, err := os.ReadFile(bindgen.OutputName)
	require.NoError(t, err)
	for _, name := range lua.Names() {
		assert.Contains(t, string(want), " of "+name+" (script ", "%s: no binding generated (the generator finds scripts by `Name = load(\"file.lua\", ...)`)", name)
	}
	if string(want) == string(got) {
		return
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; ; i++ {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			var wl, gl string
			if i < len(w) {
				wl = w[i]
			}
			if i < len(g) {
				gl = g[i]
			}
			t.Fatalf("%s is stale (run go generate ./lua): line %d is\n\t%s\nwant\n\t%s", bindgen.OutputName, i+1, gl, wl)
		}
	}
}

// Every KEYS and ARGV entry of a script's header is in the machine-readable
// form, and the header has a Reply line; preludes declare none.
func TestHeaderEntriesNamed(t *testing.T) {
	for _, name := range lua.Names() {
		src, ok := lua.Source(name)
		require.True(t, ok)
		h := header(src)
		assert.Contains(t, h, "\n-- Reply ", "%s: header must have a Reply line", name)
		for _, line := range strings.Split(h, "\n") {
			if strings.HasPrefix(line, "-- KEYS[") || strings.HasPrefix(line, "-- ARGV[") {
				assert.Regexp(t, `^-- (KEYS|ARGV)\[\d+(\.\.)?\]\s+[a-z]\w*\??( (string|int64|bool|any))?: `, line, name)
			}
		}
	}
	for _, name := range lua.Preludes() {
		src, ok := lua.Source(name)
		require.True(t, ok)
		assert.NotRegexp(t, `(?m)^-- (KEYS|ARGV)\[`, header(src), "%s: a prelude has no entries of its own", name)
	}
}

// A binding sends what the header says, in order: optional entries are
// left out from the first empty one, variadic ones spread, flags as "1"
// and "0".
func TestBindingKeysAndArgs(t *testing.T) {
	a := lua.LatchCountDownArgs{Latch: "l", Request: "r", Deadline: 7, Message: "0", Publish: "publish", ChannelArg: "c"}
	assert.Equal(t, []string{"l", "r"}, a.Keys())
	assert.Equal(t, []any{int64(7), "0", "publish", "c"}, a.Args())
	a.Channel, a.ChannelArg = "c", ""
	assert.Equal(t, []string{"l", "r", "c"}, a.Keys())
	assert.Equal(t, []any{int64(7), "0", "publish"}, a.Args())

	d := lua.SemaphoreDeleteArgs{Request: "r", Deleted: []string{"a", "b"}, Deadline: 1}
	assert.Equal(t, []string{"r", "a", "b"}, d.Keys())
	p := lua.SemaphorePermitReleaseArgs{Semaphore: "s", Timeouts: "t", Channel: "c", Request: "r", UndoRequest: "u",
		Deadline: 2, Undo: true, Publish: "spublish", Permits: []string{"x", "y"}}
	assert.Equal(t, []string{"s", "t", "c", "r", "u", "", ""}, p.Keys())
	assert.Equal(t, []any{int64(2), "1", "spublish", "", "0", "x", "y"}, p.Args())
	p.Waiters, p.WaitState, p.WakePrefix, p.Probe = "w", "ws", "wake:", true
	assert.Equal(t, []string{"s", "t", "c", "r", "u", "w", "ws"}, p.Keys())
	assert.Equal(t, []any{int64(2), "1", "spublish", "wake:", "1", "x", "y"}, p.Args())
}

// Both runners run a binding: Direct on a go-redis client.
func TestDirectRunner(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := lua.Direct{Client: rdb}
	a := lua.ClientRegisterArgs{Registration: "reg", Value: "v1", TTLMillis: 10000}
	code, err := a.Run(ctx, r)
	require.NoError(t, err)
	assert.EqualValues(t, lua.ClientRegisterRegistered, code)
	code, err = lua.ClientRegisterArgs{Registration: "reg", Value: "v2", TTLMillis: 10000}.Run(ctx, r)
	require.NoError(t, err)
	assert.EqualValues(t, lua.ClientRegisterTaken, code)
}

// A renewal batch is the common encoding: every hold's keys, then the
// lease, the number of holds and, per hold, its numbers of keys and args,
// its args and its count.
func TestRenewalBatch(t *testing.T) {
	script, ks, args := lua.RenewReadHold{Lock: "rw", Field: "c:1", TimeoutPrefix: "{rw}:c:1:rwlock_timeout"}.Renewal()
	assert.Same(t, lua.RenewRead, script)
	b := lua.NewRenewalBatch(30000, 2)
	b.Add(ks, args, 2)
	script, ks, args = lua.RenewLockHold{Lock: "l", Field: "c:2"}.Renewal()
	assert.Same(t, lua.RenewLock, script)
	b.Add(ks, args, 1)
	assert.Equal(t, []string{"rw", "l"}, b.Keys())
	assert.Equal(t, []any{int64(30000), 2, 1, 3, "c:1", "{rw}:c:1:rwlock_timeout", int64(2), 1, 2, "c:2", int64(1)}, b.Args())
}
