// Package lua holds every Lua script redisync runs, one operation per .lua
// file, embedded with go:embed and wrapped once as a package-level
// *redis.Script. It is the engine's: the primitives' packages run their
// scripts through its typed bindings and the Client's script pipeline;
// applications need not import it (docs/architecture.md draws where it
// sits).
//
// Each file starts with a header naming what it does, its KEYS, its ARGV and
// what it returns. Scripts are sent as (*redis.Script).Run sends them:
// EVALSHA, then EVAL when the server answers NOSCRIPT, so they keep working
// after SCRIPT FLUSH, a restart or a failover.
//
// The library computes no SHA-1 at run time, so it runs in FIPS 140-3 mode
// (GODEBUG=fips140=only, where crypto/sha1 panics): each script's digest,
// the SHA-1 of its composed source that EVALSHA names it by, is computed
// when the bindings are generated and recorded in bindings_gen.go with a
// FNV-1a hash of that source. At load, a digest whose hash is not the
// source's (a script changed without regenerating, which
// TestBindingsUpToDate reports) is replaced by one no server has, so such a
// script runs with EVAL and never as the old source a server may still
// have cached. TestScriptsCompile checks every recorded digest against the
// one SCRIPT LOAD answers.
//
// The scripts keep Redisson 3.x's data layout (see the root package's
// documentation), so Java services using Redisson contend for the same
// locks, semaphores and latches. They are our own: written from the layout
// and the behaviour, not from Redisson's source.
//
// State-changing scripts take a request key (internal/keys.Request) and
// record their result under it for a short while: when go-redis re-sends a
// script whose reply was lost on a dropped connection, the second run returns
// the recorded result instead of changing the hold count, the permits or the
// count a second time. A lock's fresh holds (lock_acquire_fresh.lua,
// lock_release_fresh.lua, lock_handoff.lua) and a read-write lock's fresh
// write holds (rwlock_write_acquire_fresh.lua,
// rwlock_write_release_fresh.lua, rwlock_write_handoff.lua), the holds of
// callers without a context owner, are the exception: their owner serves
// one hold, so its field in the hash is the record while the hold lasts,
// and the release leaves a mark under the request key instead. Pub/sub channels are passed in KEYS, so every name a
// script touches is declared and shares the primitive's cluster slot. The
// fair lock's per-waiter channels are the exception: whom a release wakes is
// decided in the script, so it gets the channel prefix in KEYS and appends
// the waiter, as Redisson does; the prefix's hash tag keeps them in the slot.
// So are the rate limiter's per-client keys in ratelimit_set_rate.lua and
// ratelimit_delete.lua: which clients have them is read from the registry
// set in the script, so they get the key prefixes in KEYS and append each
// client id.
//
// A key of another type never gives a raw error in the middle of a script
// after a write: Redis answers WRONGTYPE at the first command on such a key,
// which every script reads before it writes, and the semaphores' and the
// latch's scripts read their string through prelude_types.lua, which
// answers REDISYNC_WRONGTYPE for a string that is not a number. A fenced
// lock's acquisitions take their token (INCR of the counter) before they
// write the lock, or check the counter first where other writes come
// earlier (fair_acquire.lua, lock_handoff.lua). The client maps these
// replies, and INCR's "ERR value is not an integer", to
// redisync.ErrWrongType (internal/core/errs.ReplyError).
//
// # Permissions
//
// A script that publishes (a release, a force-unlock, a count-down, an
// acquisition that gives expired permits back or wakes the fair queue's
// next waiter) first asks Redis whether the ACL user may send that PUBLISH
// or SPUBLISH to its channel (redis.acl_check_cmd, Redis 7.0+) and, if not,
// answers "NOPERM ...: nothing was changed" before any write: a release
// either takes effect and tells its waiters or changes nothing and says
// why, never deletes a lock and then fails (a script is not rolled back).
// The client maps the reply to redisync.ErrNoPermission
// (internal/core/errs.Refused). Servers without acl_check_cmd (Redis 6,
// miniredis) skip the check. Keys are checked by Redis before a script
// runs (they are all in KEYS), and the commands a script calls are listed
// in SECURITY.md's rule.
//
// A re-entry of a lock (lock_acquire.lua, fair_acquire.lua; hold count
// above 1) never increments the fencing counter: it records and returns the
// token of the hold it re-enters, which the client sends, so the record
// "<count>:<token>" of any acquisition carries its hold's token.
//
// # What a script costs
//
// A script's run costs Redis about as much per redis.call as for the
// EVALSHA itself, so the scripts call as few commands as they can; the
// Lua around them is cheap except for a few things, which they avoid on
// their common paths. A prelude's local function makes a closure on every
// run, so a script is composed with only the definitions it uses
// (internal/compose), and the uncontended lock's fresh acquisitions write out
// the one check they need. A string-to-number conversion is a strtod,
// and Lua 5.1's tonumber does two (it tests, then converts): a string that
// is always a number (an int64 ARGV entry, TIME's fields) is converted by
// arithmetic instead (ARGV[1] + 0, t[1] * 1000), once; tonumber stays
// where a value may not be a number and nil is the answer wanted; the other
// way, Redis formats a number given to redis.call with snprintf, so a
// constant argument is written as a string ('1'). And a table reply costs
// Redis a dozen lookups (it tests for err, ok, map and so on before the
// array), which the reply shapes of the bindings fix.
//
// # Typed bindings
//
// Callers do not build positional KEYS and ARGV lists: each script has a
// generated binding in bindings_gen.go, named after its *redis.Script
// variable (LockAcquire: lock_acquire.lua). <Script>Args is a struct with
// one named, typed field per KEYS and ARGV entry; its Keys and Args methods
// return the lists in the script's order, and its Run method runs the
// script through a Runner and returns the reply: an int64 for an integer
// reply, <Script>Reply for an array. Named reply codes are constants,
// <Script><Code> (LockAcquireAcquired, LockReleaseNotHeld).
//
// A Runner sends the script: Direct runs it on a go-redis client
// ((*redis.Script).Run); internal/core/pipeline.Pipeline.Runner gives one
// that runs it through the client's script pipeline, which also waits for
// replicas when asked to.
//
// The bindings are generated from the headers by lua/internal/bindgen:
//
//	go generate ./lua
//
// TestBindingsUpToDate fails when bindings_gen.go is not what the headers
// generate, so a header changed without regenerating fails the tests.
//
// # Header syntax
//
// A script's header is its leading block of "--" comment lines. Besides
// prose, it holds these machine-readable lines (continuation lines, indented
// by three spaces or more, add to an entry's description):
//
//	-- KEYS[n]  name: description          a key: a string field
//	-- KEYS[n]  name?: description         an optional key: left out when
//	                                       empty, with every entry after it
//	-- KEYS[n..] name: description         the rest of KEYS: a []string field
//	-- ARGV[n]  name type: description     an argument of type string,
//	                                       int64, bool or any
//	-- ARGV[n]  name? string: description  an optional string argument
//	-- ARGV[n..] name type: description    the rest of ARGV: a slice field
//	-- Reply    name                       an integer reply
//	-- Reply    {a, b, [c], d string}      an array reply: its elements'
//	                                       names, int64 unless "string";
//	                                       [c]: may be missing (then zero)
//	-- Reply    {a, rest...}               rest: the remaining elements,
//	                                       a []int64
//	-- Code     Name = -1: description     a named reply code
//	-- Hold KEYS[n]  name: description     a batch renewal script's entries
//	-- Hold ARGV[n]  name type: description  for one hold: <Script>Hold,
//	                                       a lua.Renewal
//
// Entries are numbered 1, 2, ... in order; names are lowerCamelCase and
// become the exported field names (a leading "ttl", "tat" or "id" becomes
// upper case); variadic and optional entries come last. A bool argument is
// sent as "1" or "0", as the scripts take flags. Reply codes are the values
// of the reply (of its first element, Code, for most arrays) the caller
// tells apart; each Code line says which element it is a value of when it is
// not the first. Every script's header must have a Reply line and its
// entries in this form (TestHeaderEntriesNamed; the generator refuses
// anything else); preludes declare no entries.
package lua
