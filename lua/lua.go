package lua

//go:generate go run ./internal/bindgen/cmd/bindgen

import (
	"context"
	"embed"
	"hash/fnv"
	"io/fs"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua/internal/compose"
)

//go:embed *.lua
var files embed.FS

// registry maps file names to the scripts built from them (their composed
// source: boxedScripts).
var (
	registry = map[string]*redis.Script{}
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
	// wake: the lock's queue of waiting Clients, by which a release wakes
	// one of them (prelude_wake.lua), for the lock's scripts.
	wake = "prelude_wake.lua"
	// types: checks that a string key holds a number (prelude_types.lua),
	// for the semaphores' and the latch's scripts; it comes first.
	types = "prelude_types.lua"
)

// preludes lists the prelude files, for tests.
var preludes = []string{request, rwlockHelpers, permits, fairHelpers, lockHelpers, types, ledger, wake}

// load wraps an embedded file once as a *redis.Script, after the
// definitions of the given preludes that it uses (see compose). A missing
// file is a programming error caught by every test run.
//
// The script's SHA-1 digest is the one the generator recorded (digests):
// the library computes no SHA-1 at run time, which FIPS 140-3 mode
// (GODEBUG=fips140=only) forbids. A digest recorded for another source (a
// script changed without `go generate ./lua`, which TestBindingsUpToDate
// reports) is not used: the script gets one no server has, so that every
// call falls back to EVAL of the source it really has.
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
	src := compose.Compose(parts, with, read(name))
	s := withDigest(src, digestOf(name, src))
	registry[name] = s
	composedWith[name] = with
	boxedScripts[s] = boxedScript{sha: s.Hash(), src: src}
	return s
}

// digest is a script's SHA-1 digest, hex, and the FNV-1a hash of the
// composed source it was computed from (bindings_gen.go).
type digest struct {
	sha1 string
	fnv  uint64
}

// staleDigest names a script whose recorded digest is missing or not its
// source's: no server has a script by it, so its calls run with EVAL.
const staleDigest = "0000000000000000000000000000000000000000"

// digestOf returns the recorded digest of the named script if it is
// src's, else staleDigest.
func digestOf(name, src string) string {
	d, ok := digests[name]
	h := fnv.New64a()
	_, _ = h.Write([]byte(src))
	if !ok || h.Sum64() != d.fnv {
		return staleDigest
	}
	return d.sha1
}

// withDigest returns the *redis.Script of src named by the given digest.
// go-redis computes a script's digest with SHA-1 in NewScript; a script
// from NewScriptServerSHA computes none and takes the digest its Load
// gets from SCRIPT LOAD, which presetDigest answers without a server.
func withDigest(src, sha string) *redis.Script {
	s := redis.NewScriptServerSHA(src)
	_ = s.Load(context.Background(), presetDigest{sha: sha})
	return s
}

// presetDigest is a redis.Scripter whose only method called, ScriptLoad,
// answers a digest known beforehand (see withDigest).
type presetDigest struct {
	redis.Scripter // nil: no other method is called
	sha            string
}

// ScriptLoad answers the preset digest.
func (p presetDigest) ScriptLoad(context.Context, string) *redis.StringCmd {
	return redis.NewStringResult(p.sha, nil)
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

// Source returns the Lua source of the named file (a script's own text,
// without its preludes).
func Source(name string) (string, bool) {
	b, err := files.ReadFile(name)
	return string(b), err == nil
}

// Script returns the script built from the named file, or nil.
func Script(name string) *redis.Script { return registry[name] }

// FS returns the embedded script files.
func FS() fs.FS { return files }
