// Package multilock takes several locks as one, the counterpart of
// Redisson's MultiLock and RedLock.
//
// Members are any redisync.Locker: rlock.Lock, rwlock.RWLock (its write
// side), the views of rwlock.RWLock.ReadLocker and WriteLocker, even another
// MultiLock; on one Redis server or on several, through one
// redisync.Client or several. A MultiLock works only through the Locker
// methods: it has no key, script or lease of its own, so it writes nothing
// to Redis beyond what its members write, and Redisson clients see each
// member as the plain lock it is.
//
// # MultiLock: all members or none
//
// New returns a lock held when every member is held, e.g. both accounts of
// a transfer:
//
//	ml := multilock.New(rlock.New(c, "account:"+from), rlock.New(c, "account:"+to))
//	if err := ml.Lock(ctx); err != nil {
//		return err
//	}
//	defer ml.Unlock(ctx)
//
// Lock tries the members in order, each without waiting. When one is busy,
// it releases those it took and waits for the busy one alone, through that
// member's own wait (woken by pub/sub when it is released, never polling);
// once it holds that one, it tries the others again. It never waits for a
// member while holding another, so MultiLocks over overlapping members, in
// whatever order, cannot deadlock one another. The wait for the busy
// member is not cut into slices (Redisson gives each member a slice of the
// wait): every member is needed, so nothing else is worth trying
// meanwhile, and the member's own wait re-checks on its fallback timer. A
// member's error other than "busy" (Redis unreachable, a bad argument)
// ends the call with that error, after releasing what was taken: every
// member is needed, so there is nothing to gain by going on.
// TryLock(ctx, 0) is one pass over the members. Unlock releases every
// member and joins their errors.
//
// # RedLock: a majority of independent masters
//
// NewRedLock returns a lock held when a majority (n/2+1) of its members is
// held: the Redlock algorithm. Each member should be a lock of the same
// name on its own independent Redis master (no replication between them),
// each through its own redisync.Client, and every process should list the
// masters in the same order. The lock survives the loss of a minority of
// masters: a stopped, paused or partitioned server costs only its member.
//
// Acquisition runs in steps; no step runs past ctx's deadline or the end
// of the wait.
//
//   - An attempt tries every member not yet held at once, each with
//     TryLock(ctx, 0), and waits for their answers, at most 1.5 s. Once a
//     majority has answered, it waits for the others only as long again as
//     that took (at least 20 ms), or, in the single attempt of
//     TryLock(ctx, 0), until the answers decide the outcome. It succeeds
//     when a majority is held, and then keeps every member it got. A member
//     that has not answered in time counts as failed; so does a member's
//     error (Redis unreachable), except redisync.ErrInvalidArgument,
//     ErrUpgrade and ErrClosed, which end the call.
//   - After an attempt that failed on busy members, the RedLock keeps the
//     members it took before the first busy one, releases the others, and
//     waits for that busy member through the member's own pub/sub wait, for
//     at most a share of the wait: wait/n for TryLock(ctx, wait), 1.5 s for
//     Lock (Redisson gives each member the same slice), and as long again
//     for the member's last answer if its server stops answering meanwhile.
//     If it gets it, the next attempt tries the remaining members at once;
//     if not, it releases what it kept and starts over after a short random
//     pause (12 to 25 ms). A contender waiting for member k holds only
//     members before k, so contenders that list the masters in the same
//     order queue in that order and never split the masters between them;
//     with different orders, a share bounds how long they can hold each
//     other up.
//   - After an attempt that failed because too many members failed for a
//     majority, nothing will be published: the RedLock releases what it
//     took, pauses (25 ms, doubling up to 1 s, with jitter) and tries again.
//
// TryLock returns (false, nil) when members stayed busy for the whole wait,
// and an error naming the failed members when too many failed for a
// majority. Lock goes on until ctx ends. Either way nothing is held after
// a failure, except, for a moment, a member that answered too late (see
// below).
//
// # Unresponsive servers
//
// A member whose try has not answered in time is abandoned, not waited
// for: its context is cancelled and it finishes in the background within
// the member's own timeouts, and if it acquired the member after all, it
// releases it (so a member can stay held for a moment after a failed
// attempt returned). Waiting for it would not do: go-redis does not
// interrupt a socket read when a context is merely cancelled, and a lock
// that gave up on a reply undoes the acquisition it may have made, which
// waits for the server again (rlock bounds that undo at 10 s). So a stopped
// or paused master costs an uncontended Lock about twice the round trip to
// the others (at least 20 ms), and no step more than its bound, whatever
// the go-redis options. Still, set redis.Options{ContextTimeoutEnabled:
// true} on the members' go-redis clients (without it go-redis ignores
// context deadlines for socket I/O) and a ReadTimeout suited to the
// network, so that abandoned tries give up at their deadline rather than
// at the read timeout, and fewer of them linger.
//
// Unlock releases the members the latest acquisition of the caller's owner
// took, at once, and ignores those no longer held; it reports
// redisync.ErrNotHeld when fewer than a majority could still have been
// held. It waits for every member it releases, so a master that stops
// answering while the RedLock holds its member delays Unlock by that
// member's own timeouts.
//
// A MultiLock from New, which needs every member, waits for each member's
// answer instead: an unresponsive server holds it up for as long as that
// member's client allows, which ctx's deadline bounds with
// ContextTimeoutEnabled.
//
// # The limits of RedLock
//
// Redlock is only as safe as its timing assumptions, and they can fail.
// Martin Kleppmann's critique ("How to do distributed locking", 2016)
// shows how:
//
//   - A holder can be paused (a garbage collection, a stopped VM, a swapped
//     page, a slow network) for longer than its lease. The masters let the
//     lease expire, another client takes the lock, and the first one then
//     resumes and writes, believing it still holds the lock. A majority of
//     masters does not help.
//   - Expiry depends on the masters' clocks and on a master remembering its
//     keys: a clock jump, or a master restarted without persistence (or with
//     fsync only every second) that forgets a lock, lets a second client
//     assemble a majority while the first still holds one. The Redlock
//     author's answer is to keep a crashed master down for longer than the
//     longest lease before it rejoins. With watchdog-renewed members a hold
//     has no longest lease: it lasts as long as its holder, so prefer
//     masters with persistence (appendfsync always), and watch the members'
//     Done channels, which close when the watchdog finds a member gone from
//     a restarted master.
//
// Redisson deprecated its RedLock: the algorithm exists to survive the
// loss of a lock in an asynchronous-replication failover, which Redisson
// now addresses by propagating lock operations to replicas, and its safety
// remains disputed, for the reasons above.
//
// redisync keeps RedLock for users who run independent masters and accept
// those limits: it is a good way to make sure the work is usually done
// once (efficiency). When a second holder would corrupt data
// (correctness), use a fencing token: rlock.WithFencing gives every
// acquisition a number that only grows, and the guarded resource rejects a
// write carrying a number lower than one it has seen, which stops the
// paused holder above. A fencing token needs a single source of order, so
// use a fenced rlock.Lock on one Redis deployment rather than a RedLock
// (the counter is then as durable as that deployment's writes).
//
// Validity: the Redlock paper subtracts the acquisition time from the lease
// to get how long the lock is valid. redisync's members are renewed by the
// watchdog by default: each member's lease starts when it is taken and is
// renewed while held, so the time spent acquiring does not shorten the
// hold, and a RedLock has no validity to report; Lock returns once a
// majority is held. With fixed leases (rlock.WithLease) the first member
// can be taken up to three steps before the last (an attempt, a wait for a
// busy member, the next attempt), so give members leases far longer than
// that; the RedLock does not know its members' leases and does not check
// them.
//
// # Losing a member
//
// Each member keeps its own lease and watchdog. A member lost while the
// MultiLock is held (its lease ran out, it was force-unlocked) closes that
// member's own Done channel (rlock.Lock.Done, rwlock.RWLock.Done); the
// MultiLock adds no signal of its own, because members' Done channels
// report the latest hold of their handle, which the MultiLock cannot tie
// to its own acquisition when handles are shared. Watch the members' Done
// channels when the guarded work is long.
//
// # Owners and concurrency
//
// A MultiLock takes all its members for one owner, as a Java thread is one
// owner for every member of a Redisson MultiLock: the owner ctx carries
// (redisync.WithOwner), or else an owner of the MultiLock's own, new for
// each hold. So a member listed twice (New(l, l), two handles on one name,
// or the same lock in a nested MultiLock) is re-entered rather than waited
// for, and Unlock releases each member as many times as it was taken. The
// same holds for a RedLock, whose members on one server are the same lock.
//
// A MultiLock is safe for concurrent use. Without an owner in ctx it is a
// distributed sync.Mutex, as an rlock.Lock handle is: goroutines that share
// it exclude each other (each hold has an owner of its own), a second Lock
// waits for the first hold's Unlock, and Unlock releases the hold taken
// without an owner, from any goroutine. With an owner in ctx it re-enters
// what that owner holds, through the MultiLock or through the member
// handles directly, and Unlock gives back only what the MultiLock took.
//
// # Layout and Redis versions
//
// None of its own: the members' layouts (see rlock and rwlock), and the
// Redis versions the members support (6.2 and later; 7.x is tested).
package multilock
