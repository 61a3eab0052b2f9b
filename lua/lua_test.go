package lua_test

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
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

// A script composed with a prelude starts with the prelude's text and ends
// with its own.
func TestPreludeComposed(t *testing.T) {
	prelude, ok := lua.Source("prelude_request.lua")
	require.True(t, ok)
	own, ok := lua.Source("latch_delete.lua")
	require.True(t, ok)
	src, ok := lua.Composed("latch_delete.lua")
	require.True(t, ok)
	assert.Equal(t, prelude+own, src)
}

// Every script compiles on a real redis-server and on miniredis, the demo's
// embedded server.
func TestScriptsCompile(t *testing.T) {
	ctx := context.Background()
	real := redistest.Shared(t).Client(t)
	mr := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = mini.Close() })
	for _, name := range lua.Names() {
		s := lua.Script(name)
		require.NotNil(t, s, name)
		for server, rdb := range map[string]*redis.Client{"redis-server": real, "miniredis": mini} {
			assert.NoError(t, s.Load(ctx, rdb).Err(), "%s on %s", name, server)
		}
	}
}
