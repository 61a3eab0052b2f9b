// Package rlock provides a reentrant distributed lock on Redis, compatible
// with Redisson's RLock and, with WithFencing, RFencedLock; and two ways of
// waiting for it: the fair lock (RFairLock) and the spin lock (RSpinLock).
//
// A Lock is held by an owner ("<client id>:<token>"). Without an owner in
// the context, a handle is a distributed sync.Mutex: any number of
// goroutines may share it (a struct field, a package variable) and they
// exclude each other, waiting locally in arrival order; it is not
// reentrant, and Unlock may come from any goroutine. Each of its holds has
// an owner of its own (a new token), which Unlock releases and which never
// holds the lock again: that spares the retry records (9 commands in Redis
// per Lock and Unlock instead of 14). A FairLock's handle acts for one
// owner of its own instead, which keeps its place in the queue. With an owner
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
// A Redis lock is a lease, not a mutex (docs/guarantees.md). Watch Done
// (closed when the hold ends: released, expired, or found gone by the
// watchdog, which notices a force unlock at its next renewal, up to a third
// of the watchdog timeout later) and stop the guarded work when it closes;
// Err says why. When the server publishes keyspace notifications
// (notify-keyspace-events Kgx), a watched hold (Done or Context asked for)
// learns within a round trip that its key was deleted or expired: see "Lock
// events" below. For correctness under pauses and partitions, use
// WithFencing and have the guarded resource reject stale tokens.
//
// Fencing tokens never go backwards, also when their counter is lost (a
// restart of a server without persistence, an eviction, a failover to a
// replica that missed the last increments): each acquisition INCRs
// Redisson's counter and raises it to the server's clock in microseconds
// when it is below, so a token is the server's clock when it was issued
// (about 1.8e15; not consecutive) and a lost counter starts again above
// every earlier token. The guarantee holds as long as the server's clock
// has not been stepped back across the loss (and, across a failover, the
// servers' clocks agree to within the failover's duration). A Redisson
// (Java) client that acquires first after a loss INCRs the missing key and
// gets 1, which a resource that rejects stale tokens refuses until a Go
// client takes the lock again. See docs/fencing.md.
//
// A handle's Done, Err and FencingToken describe the latest hold taken
// through the handle, by whichever owner. Hold(ctx) returns the caller's
// owner's hold itself (a redisync.Hold), which re-entries through any handle
// extend and which keeps the fencing token of the acquisition that took it:
// use it when a handle is shared by several owners, and run the guarded work
// under Hold(ctx).Context(), which is cancelled when the hold is lost.
//
// # Waiting
//
// Lock and TryLock wait on the lock's pub/sub channel through the Client's
// shared connection: a release wakes the longest-waiting local waiter, which
// then tries to take the lock (one script). End to end, from Unlock in one
// process to Lock returning in another, that took 0.88 ms (p50) on a
// 2-vCPU VM, about 24 PING round trips and 1.40× the least bare pub/sub
// takes there (the handoff rows of the repository's bench/results.json,
// shown in docs/benchmarks.md). A waiter also re-checks when the holder's
// lease would end and at least every redisync.WithRecheckInterval, since
// messages can be lost. Once waiting, a
// re-check that fails on the way to Redis (a connection lost or refused, a
// Cluster node failing over) is made again after a short, growing pause
// for as long as the wait lasts; only the first attempt's error, or an
// error answer, ends the call at once. (The same holds for every waiting
// primitive.)
//
// The callers of one Client waiting for a Lock line up in the Client in
// arrival order, and only the first asks Redis and is subscribed. When the
// lock is released while the next caller in that line waits (a caller
// without a context owner), Unlock hands it over in one script: the release
// and the next caller's acquisition (a fresh hold of its own, with its own
// fencing token), with no PUBLISH and no waiter woken to try, so a busy
// process pays one round trip per acquisition. Other processes, Redisson's
// included, see the lock held all along; so that they get their turn, a
// chain of handoffs serves only the callers already waiting when it began,
// or lasts about a millisecond (as sync.Mutex's fast path is bounded), and
// then the lock is freed in Redis and published. A Client that took the
// lock from Redis moves to the end of the channel's subscribers, so the
// next release reaches the other processes first. The Lock is still not
// fair across processes: NewFair is.
//
// # Fair lock
//
// NewFair returns a FairLock (Redisson's RFairLock): the same lock, whose
// waiters get it in the order they asked for it, across processes. They
// line up in a queue in Redis, and a release wakes only the waiter at its
// head, on that waiter's own channel, so a release costs one message
// whatever the number of waiters. An owner that holds the lock re-enters it
// without queueing; goroutines sharing one handle without a context owner
// line up at the handle first, and the handle takes one place in the queue.
//
// Each queued waiter has a deadline on Redis's clock. A live waiter pushes
// it further at each re-check, which comes at least every third of the
// waiter timeout (WithWaiterTimeout, 5s by default) even when no message
// does, so it keeps its place however long it waits. A waiter whose process
// died stops holding up the queue once its deadline passes, and the next
// one is woken; a waiter that gives up (TryLock's wait ran out, ctx ended,
// Close) leaves the queue at once. The head of the queue also gets in at its
// next re-check when the lock key disappears without a message (deleted
// from outside, expired). Redisson's own fair lock does none of this: it
// uses each client's clock, drops a live waiter that waited past its
// timeout, and lets a crashed waiter hold up the queue for 5 minutes.
//
// # Spin lock
//
// NewSpin returns a SpinLock (Redisson's RSpinLock): the same lock, waited
// for without pub/sub. A release publishes nothing and a waiter re-tries
// with an exponential backoff and jitter (WithBackoff, 1ms to 128ms by
// default). It subscribes nothing, so it suits very many locks, and
// Redis-compatible servers without pub/sub, at the cost of a slower
// hand-over and more commands under contention. A SpinLock, a Lock and a
// FairLock of one name exclude each other.
//
// # Layout
//
// Hash <name>, field <client id>:<token> = hold count, PEXPIRE = lease;
// channel redisson_lock__channel:{name}, on which a release that frees the
// lock publishes "0"; fencing counter redisson_lock_token:{name}, which only
// grows (INCR, raised to the server's clock in microseconds). The fair lock adds the list redisson_lock_queue:{name} of waiting
// owners in arrival order, the zset redisson_lock_timeout:{name} of their
// deadlines (epoch milliseconds on the server's clock), and one channel per
// waiter, redisson_lock__channel:{name}:<owner>, on which a release
// publishes "0" to the head of the queue only. Java services using Redisson
// contend for the same lock, and their fair-lock waiters queue in the same
// line.
//
// A key under a lock's name laid out otherwise (another Redis type, or a
// hash whose fields are not owners holding hold counts, such as an
// application's hash) is no lock: every call on it, ForceUnlock included,
// returns an error wrapping redisync.ErrWrongType and leaves it unchanged.
// [Lock.Inspect] reads who holds a lock, for how long, and its fencing
// counter, in one round trip; the redisync CLI's inspect command shows
// what it returns.
//
// # Lock events
//
// Events (on Lock, FairLock and SpinLock) reports each deletion, expiry
// and eviction of the lock's key in Redis, whoever causes it, as
// redisync.KeyEvent values: Redisson 3.43's lock listeners. They come
// from Redis keyspace notifications on the node that holds the key (on a
// Cluster, the master of its slot, followed when the slot moves), which
// Redis publishes only with notify-keyspace-events set to include K, g and
// x (or K and A): Events says so with redisync.ErrKeyspaceEventsOff,
// naming the CONFIG SET to run, rather than return a channel that never
// fires.
//
//	events, err := l.Events(ctx) // closed when ctx ends
//	for ev := range events {
//		log.Printf("%s %s", ev.Key, ev.Kind) // "orders:42 deleted"
//	}
//
// The same notifications serve the holder: with the flags on (and
// redisync.WithKeyspaceEvents left at KeyspaceEventsAuto), a
// watchdog-renewed hold whose Done or Context is watched subscribes to
// its key, and a deletion or expiry has the watchdog re-check that hold at
// once with the renewal script, which says whether it is still the
// owner's: an outside DEL, a redisync unlock -force or an expiry ends the
// hold (ErrLockLost, "renewal found the hold gone") within a round trip
// (0.24 ms after a DEL on a local single node, 0.65 ms on a Cluster;
// an expiry when Redis expires the key, within about 100 ms) instead of
// at the next renewal, up to 10 s later with the default lease. The
// periodic renewal stays as the fallback. A hold with a fixed lease
// (WithLease) is not watched: it ends when its lease does. See
// docs/lock-events.md.
package rlock
