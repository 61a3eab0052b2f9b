package redisync

import "github.com/redisync/redisync/internal/core/errs"

// Sentinel errors. Match them with errors.Is: redisync wraps them with
// context (the primitive, its name, the cause).
var (
	// ErrNotHeld reports a release by an owner that does not hold the lock
	// or permit: its lease expired, another owner holds it, or it was never
	// acquired. Nothing was changed.
	ErrNotHeld = errs.ErrNotHeld
	// ErrLockLost reports that a held lock ended without being released:
	// the watchdog found it gone from Redis (expired, force-unlocked,
	// deleted), no renewal succeeded within the lease, its fixed lease ran
	// out, or the Client was closed.
	ErrLockLost = errs.ErrLockLost
	// ErrClosed reports a call on a closed Client.
	ErrClosed = errs.ErrClosed
	// ErrInvalidArgument reports a bad argument (an empty name, a negative
	// duration, n ≤ 0 permits, a nil client, a nil context, ...). Nothing
	// was sent to Redis.
	ErrInvalidArgument = errs.ErrInvalidArgument
	// ErrUpgrade reports a request for a read-write lock's write side by an
	// owner that holds only its read side. Redisson deadlocks there;
	// redisync refuses at once.
	ErrUpgrade = errs.ErrUpgrade
	// ErrNotReplicated reports a write that fewer replicas than wanted
	// acknowledged within the timeout (WithReplicaSync). An acquisition
	// that returns it is undone: nothing is held. The undo has run on the
	// primary when the error returns, unless the Client has many writes to
	// that primary in flight at once waiting for the same replicas (they go
	// one batch at a time then, and the undo within seconds); a semaphore's
	// undo goes on until the replicas have it. A GCRA rate limiter's Allow, Reserve or Wait is not undone: what
	// it took stays taken on that primary, which only limits more. A
	// release that returns it took effect on the primary (its error text
	// says so) and must not be retried: a failover before a replica has it
	// may bring the hold back until its lease ends, nothing else; a
	// semaphore's release is re-sent in the background until acknowledged
	// (it applies once), since its permits would not come back. A write
	// that ran on another primary than the one counted (the old primary of
	// a split brain) returns it too, its reply not believed.
	ErrNotReplicated = errs.ErrNotReplicated
	// ErrWrongType reports that a primitive's key in Redis holds data of
	// another type or layout than the primitive's (an application's hash
	// under a semaphore's name, a string that is not a number, ...).
	// Nothing was changed.
	ErrWrongType = errs.ErrWrongType
	// ErrDuplicateID reports an operation of a Client whose id, given with
	// WithID, is in use by another live Client on the same Redis: both
	// would act for the same owners. Nothing was changed. The id is free
	// again once the other Client is closed (at once) or its process dies
	// (within its watchdog timeout).
	ErrDuplicateID = errs.ErrDuplicateID
	// ErrStateLost reports that a primitive's state vanished with its
	// server (a restart without persistence, a failover onto a server that
	// did not have it) rather than by the operations that end it: the call
	// did not act on the empty state. A count-down latch's Wait and
	// TryWait return it when the latch they saw set on one server is
	// missing on the server that answers now, instead of reporting the
	// latch open; a latch counted down to zero (by any client, Java
	// included) or deleted still opens with nil. docs/guarantees.md lists,
	// per primitive, what a restart, a failover and an eviction do.
	ErrStateLost = errs.ErrStateLost
	// ErrNoPermission reports a command, key or channel that the Redis
	// user (ACL) of the go-redis client may not use: Redis answered
	// NOPERM, or "ERR The user executing the script can't ..." from inside
	// a script. The error keeps Redis's text, which says what was refused;
	// SECURITY.md gives the ACL rule a redisync user needs. A script
	// refused for its keys did not run, and one refused its PUBLISH
	// changed nothing (the scripts publish before they write); a wait
	// whose subscription is refused fails with it at once. A user lacking
	// a command the scripts call only after writing (one the rule lists)
	// can fail a script part-way.
	ErrNoPermission = errs.ErrNoPermission
	// ErrNoAuth reports a connection that has not authenticated (Redis
	// answered NOAUTH): the go-redis client lacks the password, or the
	// server's was set after it connected. Nothing was changed. The error
	// keeps Redis's text.
	ErrNoAuth = errs.ErrNoAuth
	// ErrOutOfMemory reports a write refused because Redis is above its
	// maxmemory and may evict nothing (Redis answered OOM, also from
	// inside a script). The error keeps Redis's text. Redis refuses only
	// the commands that may use memory (SET, HSET, INCR, ...), not
	// deletions, so a script refused at a later write may have deleted
	// before: give Redis memory before relying on what the call left.
	ErrOutOfMemory = errs.ErrOutOfMemory
	// ErrNoScripting reports a server that cannot run scripts: EVALSHA or
	// EVAL is unknown to it (Valkey without its Lua module, the commands
	// renamed away with rename-command) or refused by the ACL user (then
	// the error also wraps ErrNoPermission) or by a proxy. Every redisync
	// operation is a Lua script, so the first call fails with it at once,
	// and nothing was written: no key, no subscription, no goroutine left.
	// The error keeps Redis's text and says what to do.
	ErrNoScripting = errs.ErrNoScripting
	// ErrKeyspaceEventsOff reports that the Redis node holding a key
	// publishes no keyspace notifications of its deletions and expiries,
	// so an Events call (rlock, rwlock) would never fire: the node's
	// notify-keyspace-events lacks K, g or x (A stands for g, x and the
	// rest), or the Client was built with
	// WithKeyspaceEvents(KeyspaceEventsOff). The error names the CONFIG
	// SET to run; see docs/lock-events.md. Nothing was subscribed.
	ErrKeyspaceEventsOff = errs.ErrKeyspaceEventsOff
)
