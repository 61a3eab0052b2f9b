// Package rlock provides a reentrant distributed lock on Redis, compatible
// with Redisson's RLock and, with WithFencing, RFencedLock.
//
// A Lock is held by an owner ("<client id>:<token>"). Without an owner in
// the context, a handle is a distributed sync.Mutex: it acts for its own
// owner, any number of goroutines may share it (a struct field, a package
// variable) and they exclude each other, waiting locally in arrival order;
// it is not reentrant, and Unlock may come from any goroutine. With an owner
// in the context (redisync.WithOwner), every handle used with that context
// acts for that owner, which may lock again what it holds: each Lock adds
// one to its hold count and each Unlock takes one away, and the lock is free
// when the count reaches zero. The client's own count is the authority: it
// is what every acquisition, release and renewal sets in Redis.
//
//	l := rlock.New(c, "orders:42")
//	if err := l.Lock(ctx); err != nil {
//		return err
//	}
//	defer l.Unlock(ctx)
//
// # Leases
//
// The lock lives in Redis as a hash with a TTL: the lease. By default the
// lease is the Client's watchdog timeout (30s) and the Client's watchdog
// renews it every third of that while the hold lasts, so the lock is held
// until Unlock, or until the process dies plus one lease. WithLease gives a
// fixed lease instead, with no renewal: the lock is gone when it runs out,
// whatever the holder is doing.
//
// A Redis lock is a lease, not a mutex. Watch Done (closed when the hold
// ends: released, expired, found gone by the watchdog, force-unlocked) and
// stop the guarded work when it closes; Err says why. For correctness under
// pauses and partitions, use WithFencing and have the guarded resource reject
// stale tokens.
//
// # Waiting
//
// Lock and TryLock wait on the lock's pub/sub channel through the Client's
// shared connection: a release wakes the longest-waiting local waiter, which
// takes the lock within about two round trips to Redis. A waiter also
// re-checks when the holder's lease would end and at least every
// redisync.WithRecheckInterval, since messages can be lost.
//
// # Layout
//
// Hash <name>, field <client id>:<token> = hold count, PEXPIRE = lease;
// channel redisson_lock__channel:{name}, on which a release that frees the
// lock publishes "0"; fencing counter redisson_lock_token:{name}, which only
// grows. Java services using Redisson contend for the same lock.
package rlock
