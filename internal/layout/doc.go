// Package layout tells a lock's hash from any other hash: the rule by
// which the library (rlock, rwlock, their Inspect) and the redisync CLI
// (inspect, unlock) refuse an application's hash stored under a lock's
// name, instead of waiting on it forever or deleting it. The Lua scripts
// apply the same rule (lock_layout in lua/prelude_types.lua).
package layout
