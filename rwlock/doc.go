// Package rwlock provides a distributed read-write lock on Redis,
// compatible with Redisson's RReadWriteLock: many readers, or one writer.
//
// An RWLock is held by owners ("<client id>:<token>"). Without an owner in
// the context, a handle is a distributed sync.RWMutex: any number of
// goroutines may share it; read holds through it coexist, a write hold
// through it excludes everyone, a waiting Lock keeps later RLocks through
// it out, holds are not reentrant, and releases may come from any
// goroutine. The handles of one name on one Client are one such mutex: a
// hold taken without a context owner through one of them is released
// through any of them, and a handle that never acquired gives that hold's
// ReadHold, WriteHold, Done and Err. Its read holds are the handle's own
// owner's; each of its write
// holds has an owner of its own (a new token), which Unlock releases and
// which never holds the lock again: that spares the retry records (11
// commands in Redis per Lock and Unlock instead of 19). With an owner in
// the context (redisync.WithOwner), every handle used with it acts for that
// owner, and both sides are reentrant: each RLock or Lock adds one to the
// owner's read or write hold count, each RUnlock or Unlock takes one away.
//
//	rw := rwlock.New(c, "config")
//	if err := rw.RLock(ctx); err != nil {
//		return err
//	}
//	defer rw.RUnlock(ctx)
//
// # Readers and writers
//
// A read hold is granted when the lock is free or read-locked, and to the
// owner that holds the write side. The write side is granted when the lock
// is free, and again to the owner that holds it. So the writer may take read
// holds and then release the write side, which leaves the lock read-locked
// by it (a downgrade) and lets waiting readers in at once. The reverse, an
// upgrade, is refused: Lock by an owner that holds only read holds returns
// redisync.ErrUpgrade at once, where Redisson would wait for itself forever.
// Downgrade and ErrUpgrade concern context owners: without one, Lock waits
// for every read hold to go, those through the same handle included, as
// sync.RWMutex does.
// As with Redisson, readers that keep arriving can hold a writer off: there
// is no queue.
//
// # Leases
//
// Every hold is a lease. Without WithLease the lease is the Client's watchdog
// timeout and the watchdog renews it every third of that while the hold
// lasts; the renewal of an owner's read holds extends each of their timeout
// keys and the hash, batched with the Client's other renewals. Every read
// hold has its own timeout key, so the read holds of a crashed or closed
// client expire one lease after their last renewal and stop blocking
// writers then; other readers do not keep them alive. Watch Done and Err to
// learn when the latest hold taken through a handle ends or is lost; when
// several owners share a handle, each watches its own ReadHold(ctx) or
// WriteHold(ctx) (a redisync.Hold), which only that owner's release or a
// loss ends.
//
// # Waiting
//
// RLock and TryRLock wait on the lock's pub/sub channel through the
// Client's shared connection. Releasing the write side publishes "1",
// which wakes every local waiter (all readers may proceed); the read release
// that frees the lock publishes "0", which wakes the longest-waiting one.
// Writers (Lock, TryLock) wait in a queue of processes in Redis instead, as
// rlock.Lock's waiters do (docs/wake.md): a release that frees the lock
// (a write release, the last read release, ForceUnlock) wakes the first
// waiting process on a channel of its own, in the order the processes
// started waiting, not every process waiting to write; it publishes on the
// lock's channel too whenever anybody listens there (readers, Redisson
// clients), and the process first in the queue listens there while readers
// or a Redisson client hold the lock. A
// waiter also re-checks when the holders' lease would end and at least
// every redisync.WithRecheckInterval, since messages can be lost. A wait
// that ends with ctx returns an error wrapping ctx.Err() and leaves no hold
// and no subscription behind.
//
// The writers of one Client (Lock, TryLock) line up in the Client in
// arrival order, and only the first asks Redis and is subscribed; readers
// do not line up. When the write side is released while the next writer in
// that line waits (a writer without a context owner), Unlock hands it over
// in one script: the release and the next writer's acquisition (a fresh
// write hold of its own), with no PUBLISH and no waiter woken to try, so a
// busy process pays one round trip per write acquisition. Readers and
// writers of other processes, and this Client's readers, see the lock
// write-locked all along; so that they get their turn, a chain of handoffs
// serves only the writers already waiting when it began, or lasts about a
// millisecond, and then the lock is freed in Redis and "1" published, which
// lets every waiting reader in. A Client whose writers still wait when the
// chain ends goes back to the end of the queue, so the next release wakes
// the other processes first. An owner that holds read holds does
// not line up for the write side: it is refused at once (ErrUpgrade).
//
// # Layout
//
// Hash <name>: field "mode" = "read" or "write"; reader fields
// "<client id>:<token>" = read hold count; writer field
// "<client id>:<token>:write" = write hold count (1 for a write hold without
// a context owner, whose token is new for every hold). Read hold n of an owner
// has a string key {name}:<client id>:<token>:rwlock_timeout:<n> with its own
// PEXPIRE; the hash's TTL is the longest live read hold's (the writer's lease
// in write mode). Channel redisson_rwlock:{name}: "0" when a read release
// frees the lock, "1" when a write release ends the write mode. Java services
// using Redisson contend for the same lock. redisync differs from Redisson
// where Redisson misbehaves, without changing the layout:
//
//   - An upgrade returns ErrUpgrade instead of deadlocking.
//   - Releasing the write side while the owner keeps read holds publishes
//     "1" (Redisson publishes nothing, and waiting readers wait for their
//     timers).
//   - Re-entering the write side sets the TTL to the larger of what remains
//     and one lease (Redisson adds a lease to what remains).
//   - A read release drops reader fields whose timeout keys have all expired
//     and gives the releasing owner's remaining read holds a full lease.
//   - ForceUnlock clears either mode, with the read holds' timeout keys, and
//     publishes "1" (Redisson has one force unlock per side).
//   - A chain of in-process handoffs between the writers of one Client
//     publishes nothing until it ends (see Waiting).
//
// Scripts also use short-lived request keys redisync_request:{name}:<id>,
// so that a command re-sent by go-redis after a lost reply is applied once;
// a write hold without a context owner leaves a mark under
// redisync_request:{name}:<writer field> when it ends (and ForceUnlock
// under those of the writer fields it deletes), so that a late copy of its
// acquisition changes nothing.
// All keys share the cluster slot of {name}. Redis 6.2 or newer is
// supported; 7.x is tested.
//
// A key under the lock's name laid out otherwise (another Redis type, a
// hash without a mode field or with fields that are not owners, such as an
// application's hash) is no read-write lock: every call on it, ForceUnlock
// included, returns an error wrapping redisync.ErrWrongType and leaves it
// unchanged. [RWLock.Inspect] reads the mode, the writer, the readers and
// the remaining lease in one round trip.
//
// # Lock events
//
// Events reports each deletion, expiry and eviction of the lock's hash in
// Redis, whoever causes it (the last RUnlock or Unlock, a ForceUnlock, an
// expired lease), as redisync.KeyEvent values, from Redis keyspace
// notifications (notify-keyspace-events with K, g and x): see rlock's
// "Lock events" and docs/lock-events.md. A watched read or write hold
// (its Done or Context asked for) uses the same notifications: a deletion
// or expiry of the hash has the watchdog re-check it at once. Only the
// hash is watched, not the read holds' timeout keys.
package rwlock
