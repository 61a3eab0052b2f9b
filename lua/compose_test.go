package lua

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/lua/internal/compose"
)

// Every prelude definition that a composed script's code names (its own or
// a kept definition's, comments aside) is kept, and each kept one is a
// prelude's definition, word for word.
func TestComposeKeepsWhatIsNamed(t *testing.T) {
	for name, with := range composedWith {
		own, err := files.ReadFile(name)
		require.NoError(t, err)
		src, _ := Composed(name)
		require.True(t, strings.HasSuffix(src, string(own)), name)
		defined := map[string]string{}
		for _, f := range with {
			p, err := files.ReadFile(f)
			require.NoError(t, err)
			for _, d := range compose.Definitions(f, string(p)) {
				defined[d.Name] = d.Text
				require.Contains(t, string(p), strings.TrimSuffix(d.Text, "\n"), "%s: a definition is the prelude's text", f)
			}
		}
		kept := map[string]bool{}
		for _, d := range compose.Definitions(name, strings.TrimSuffix(src, string(own))) {
			kept[d.Name] = true
			assert.Equal(t, defined[d.Name], d.Text, "%s: %s", name, d.Name)
		}
		code := regexp.MustCompile(`--.*`).ReplaceAllString(src, "")
		for _, w := range compose.Word.FindAllString(code, -1) {
			if _, ok := defined[w]; ok {
				assert.True(t, kept[w], "%s: names %s, which is not kept", name, w)
			}
		}
	}
}

// A prelude is split at each definition in the first column, with the
// comment just above it; its header and blank lines are left out.
func TestDefinitions(t *testing.T) {
	src := "-- p: a prelude\n--\n-- Returns nothing\nlocal x -- a note\n\n-- about f\nlocal function f(a)\n  -- inside\n  return a\nend\n\nlocal function g()\n  return f(x)\nend\n"
	defs := compose.Definitions("p.lua", src)
	require.Len(t, defs, 3)
	assert.Equal(t, compose.Definition{Name: "x", Text: "local x -- a note\n"}, defs[0])
	assert.Equal(t, compose.Definition{Name: "f", Text: "-- about f\nlocal function f(a)\n  -- inside\n  return a\nend\n"}, defs[1])
	assert.Equal(t, compose.Definition{Name: "g", Text: "local function g()\n  return f(x)\nend\n"}, defs[2])
	assert.Equal(t, "local x -- a note\n-- about f\nlocal function f(a)\n  -- inside\n  return a\nend\nlocal function g()\n  return f(x)\nend\nreturn g()\n",
		compose.Compose(map[string]string{"p.lua": src}, []string{"p.lua"}, "return g()\n"))
	assert.Equal(t, "-- about f\nlocal function f(a)\n  -- inside\n  return a\nend\nreturn f(1)\n",
		compose.Compose(map[string]string{"p.lua": src}, []string{"p.lua"}, "return f(1)\n"))
	assert.Panics(t, func() { compose.Definitions("p.lua", "-- p\nlocal a, b = 1, 2\n") })
	assert.Panics(t, func() { compose.Definitions("p.lua", "-- p\nredis.call('get', 'k')\n") })
	assert.Regexp(t, regexp.MustCompile(`^local`), defs[0].Text)
}
