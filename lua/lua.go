package lua

//go:generate go run ./internal/bindgen/cmd/bindgen

import (
	"embed"
	"io/fs"
	"sort"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

// registry maps file names to the scripts built from them, composed to
// their composed source.
var (
	registry = map[string]*redis.Script{}
	composed = map[string]string{}
	// composedWith maps file names to the preludes they were composed
	// with, for tests.
	composedWith = map[string][]string{}
)

// Preludes: files of helper functions that scripts share. Redis scripts
// cannot include one another, so a script that needs them is composed when
// it is loaded: the preludes' definitions it uses, then its own text (see
// compose).
const (
	// request records and undo (prelude_request.lua): every script that
	// records its result for retries.
	request = "prelude_request.lua"
	// rwlockHelpers: live read holds (prelude_rwlock.lua), for the
	// read-write lock's scripts.
	rwlockHelpers = "prelude_rwlock.lua"
	// permits: expired permits given back (prelude_permits.lua), for the
	// permit-expirable semaphore's scripts.
	permits = "prelude_permits.lua"
	// fairHelpers: the server's clock, dropping dead waiters and waking the
	// head of the queue (prelude_fair.lua), for the fair lock's scripts.
	fairHelpers = "prelude_fair.lua"
	// lockHelpers: the steps the lock's kinds share (prelude_lock.lua).
	lockHelpers = "prelude_lock.lua"
	// ledger: a client's ledger of its requests on a counted semaphore
	// (prelude_ledger.lua), after request (it calls refuse_late).
	ledger = "prelude_ledger.lua"
	// types: checks that a string key holds a number (prelude_types.lua),
	// for the semaphores' and the latch's scripts; it comes first.
	types = "prelude_types.lua"
)

// preludes lists the prelude files, for tests.
var preludes = []string{request, rwlockHelpers, permits, fairHelpers, lockHelpers, types, ledger}

// load wraps an embedded file once as a *redis.Script, after the
// definitions of the given preludes that it uses (see compose). A missing
// file is a programming error caught by every test run.
func load(name string, with ...string) *redis.Script {
	read := func(f string) string {
		b, err := files.ReadFile(f)
		if err != nil {
			panic("redisync/lua: " + err.Error())
		}
		return string(b)
	}
	parts := map[string]string{}
	for _, f := range with {
		parts[f] = read(f)
	}
	src := compose(parts, with, read(name))
	s := redis.NewScript(src)
	registry[name] = s
	composed[name] = src
	composedWith[name] = with
	boxedScripts[s] = boxedScript{sha: s.Hash(), src: src}
	return s
}

// Preludes returns the file names of the preludes scripts are composed
// with.
func Preludes() []string { return append([]string(nil), preludes...) }

// Names returns the file names of every script, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Source returns the Lua source of the named file (a script's own text,
// without its preludes).
func Source(name string) (string, bool) {
	b, err := files.ReadFile(name)
	return string(b), err == nil
}

// Composed returns the source the named script runs: the definitions of
// its preludes that it uses, then its own text (see compose).
func Composed(name string) (string, bool) {
	src, ok := composed[name]
	return src, ok
}

// Script returns the script built from the named file, or nil.
func Script(name string) *redis.Script { return registry[name] }

// FS returns the embedded script files.
func FS() fs.FS { return files }
