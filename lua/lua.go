package lua

import (
	"embed"
	"io/fs"
	"sort"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

// registry maps file names to the scripts built from them.
var registry = map[string]*redis.Script{}

// load wraps an embedded file once as a *redis.Script. A missing file is a
// programming error caught by every test run.
func load(name string) *redis.Script {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("redisync/lua: " + err.Error())
	}
	s := redis.NewScript(string(b))
	registry[name] = s
	return s
}

// Names returns the file names of every script, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Source returns the Lua source of the named script file.
func Source(name string) (string, bool) {
	b, err := files.ReadFile(name)
	return string(b), err == nil
}

// Script returns the script built from the named file, or nil.
func Script(name string) *redis.Script { return registry[name] }

// FS returns the embedded script files.
func FS() fs.FS { return files }
