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
)

// Preludes: files of helper functions that scripts share. Redis scripts
// cannot include one another, so a script that needs them is composed when
// it is loaded: the preludes' text, then its own.
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

// load wraps an embedded file once as a *redis.Script, after the given
// preludes. A missing file is a programming error caught by every test run.
func load(name string, with ...string) *redis.Script {
	var src []byte
	for _, f := range append(with, name) {
		b, err := files.ReadFile(f)
		if err != nil {
			panic("redisync/lua: " + err.Error())
		}
		src = append(src, b...)
	}
	s := redis.NewScript(string(src))
	registry[name] = s
	composed[name] = string(src)
	boxedScripts[s] = boxedScript{sha: s.Hash(), src: string(src)}
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

// Composed returns the source the named script runs: its preludes' text,
// then its own.
func Composed(name string) (string, bool) {
	src, ok := composed[name]
	return src, ok
}

// Script returns the script built from the named file, or nil.
func Script(name string) *redis.Script { return registry[name] }

// FS returns the embedded script files.
func FS() fs.FS { return files }
