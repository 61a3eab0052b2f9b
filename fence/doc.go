// Package fence keeps a value in Redis that only the newest lock holder
// may write: a fencing token checked at the resource.
//
// A lock in Redis is a lease (docs/guarantees.md): a holder paused longer
// than its lease may still believe it holds the lock after another process
// took it, and its late write then overwrites the newer holder's. A fencing
// token (rlock.WithFencing: every hold gets a larger number than every
// earlier hold) stops that only where the resource compares it. A [Value] is
// such a resource: it stores the value with the highest token that wrote it,
// and [Value.Set] with a lower token is refused, in one script, so no
// check-then-write race is left between two writers.
//
//	l := rlock.New(c, "orders:7", rlock.WithFencing())
//	if err := l.Lock(ctx); err != nil { ... }
//	defer l.Unlock(ctx)
//	ok, err := fence.New(c, "orders:7:state").Set(ctx, l.FencingToken(), "shipped")
//	// ok false: a newer holder wrote first; this holder lost the lock
//
// For a value kept elsewhere, the same check is a conditional write there:
// module github.com/redisync/redisync/extra/fencesql does it for SQL
// databases, and docs/fencing.md explains the recipe for others.
//
// # Layout
//
// A Value called name is the hash name with the fields token (the highest
// fencing token that wrote, a decimal integer) and value. One key, so one
// Cluster slot: the script reads and writes both at once. Tokens are
// compared as Lua numbers, exact up to 2^53 (a counter incremented a
// million times a second reaches that in 285 years).
package fence
