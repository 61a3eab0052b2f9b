// Package redisync provides Redisson's distributed synchronization
// primitives for Go, on Redis: a reentrant lock that renews itself while held
// (package rlock), a read-write lock (rwlock), semaphores with and without
// permit leases (semaphore), a count-down latch (countdown), MultiLock and
// RedLock (multilock), and rate limiters (ratelimit: Redisson's
// RRateLimiter, and a GCRA limiter). They keep Redisson 3.x's data layout,
// so a Go service and a Java service using Redisson on the same Redis
// contend for the same lock, semaphore, latch or rate limit.
//
// # The Client
//
// Every primitive is built on a *Client, created once per process over a
// go-redis client (single node, Sentinel failover or Cluster):
//
//	c := redisync.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}))
//	defer c.Close()
//	l := rlock.New(c, "orders:42")
//	if err := l.Lock(ctx); err != nil { ... }
//	defer l.Unlock(ctx)
//
// The Client owns what all its primitives share: the client id that names
// this process's owners, one pub/sub connection that wakes every waiter, one
// watchdog goroutine that renews every hold, and the Lua scripts. Handles
// (rlock.New, semaphore.New, ...) are cheap, do no I/O and are safe for
// concurrent use.
//
// # A Redis lock is a lease, not a mutex
//
// A lock held in Redis lasts as long as its lease, which the Client's
// watchdog renews while the process lives: a process that stops for longer
// than the lease loses the lock while it may still think it holds it
// (docs/guarantees.md says it fully, docs/leases.md what a failover can
// lose). redisync gives the tools to live with that:
//
//   - With replica acknowledgement on (WithReplicaSync, the default), a
//     hold is only as long as what its replicas have: its lease runs, on
//     the Client's monotonic clock, from when its last write the replicas
//     acknowledged (the acquisition or a renewal) was sent, less a margin
//     of 1% of the lease plus 2 ms for the servers' clocks. A renewal not
//     acknowledged extends nothing; when the acknowledged lease runs out,
//     the hold ends as lost (its cause wraps ErrNotReplicated) before a
//     promoted replica could let another owner in. docs/leases.md says
//     what a failover can still lose.
//   - Done and Err on every lock handle report the loss when the watchdog
//     sees it, at its next renewal (every third of the watchdog timeout, so
//     up to 10s after a force unlock with the default 30s) or when the
//     acknowledged lease runs out, and when a fixed lease runs out:
//     stop the guarded work when Done closes. When the servers publish
//     keyspace notifications (notify-keyspace-events Kgx), a watched
//     hold learns of a deletion or expiry of its key within a round trip
//     instead (WithKeyspaceEvents; docs/lock-events.md), and the lock
//     kinds' Events report them as KeyEvent values. A Hold (rlock's Lock.Hold,
//     rwlock's ReadHold and WriteHold) is one owner's hold itself: its
//     Context is cancelled when the hold ends, so work run under it stops
//     by itself.
//   - Fencing tokens (rlock.WithFencing): every hold gets a number larger
//     than all before it, kept by its re-entries. A resource that remembers
//     the largest token it has seen and rejects smaller ones is safe even
//     against a holder that lost its lock without knowing. Tokens keep
//     growing when their counter is lost (a restart without persistence,
//     eviction, a failover): docs/fencing.md.
//
// Only maxmemory-policy noeviction is safe. Every lock's hash has a TTL
// (its lease), so every other policy (volatile-* included) may evict a
// lock while it is held: another owner takes it while its holder learns at
// its next renewal, with an ErrLockLost whose text names eviction. The keys
// that hold a primitive's state between holds have no TTL, on purpose (the
// fencing counter, a fair lock's queue, a semaphore's permits, a latch's
// count, a rate limiter's state without keepAliveTime, a fenced value, an
// election's records): "Key layout" below marks them, and
// docs/fencing.md says why for each. The Client reads
// each primary's policy when it first connects to it and warns (a log
// record at Warn, Stats.EvictingPrimaries, Observer.Eviction) when it is
// not noeviction.
//
// Use locks for efficiency (avoiding duplicate work) freely; for correctness,
// pair them with fencing tokens.
//
// # Owners
//
// An owner is "<client id>:<token>". Without an owner in the context, a lock
// handle is a distributed sync.Mutex: the goroutines calling through it
// exclude each other, as they exclude other handles, and it is never
// reentrant; a lock's or spin lock's every hold then has an owner of its
// own (a new token), which Unlock releases. WithOwner puts an owner into a
// context instead: every handle used with that context acts for it and
// re-enters what it holds (hold counts, as with Redisson), which is the Go
// counterpart of a Java thread re-entering its locks down a call chain.
// WithOwnerToken hands an owner over to another goroutine or process.
//
// # Waiting
//
// Waiters subscribe to the primitive's channel through the Client's single
// pub/sub connection, re-check after Redis confirms the subscription, and are
// then woken by the release message, never by polling. Messages can be lost,
// so each wait also re-checks when the holder's lease or the next permit
// expiry says it may have changed, and at least every WithRecheckInterval. A
// wait that ends because ctx is done returns an error wrapping ctx.Err() and
// leaves nothing behind: no hold, no permit, no subscription, no goroutine.
//
// # Wait bounds
//
// The wait of a TryX(ctx, wait) call with a wait above 0 bounds the whole
// call, the requests to Redis included: rlock's TryLock (Lock, FairLock,
// SpinLock), rwlock's TryRLock and TryLock, the semaphores' TryAcquire and
// TryAcquireN, ratelimit.Limiter.TryAcquire and countdown's TryWait end
// every request by the end of the wait. A request cut that way while ctx
// lasts has its acquisition, which Redis may still run, undone in the
// background (the caller does not wait for the undo; the owner's next
// operation does). The call reports false when Redis answered an earlier
// attempt of the wait that the primitive was taken, and otherwise an
// error: an outage is an error, never "busy", so (false, nil) always
// means the primitive was seen taken. Cutting a stalled
// socket read needs the go-redis client's
// redis.Options.ContextTimeoutEnabled; without it a request on its way
// lasts until Redis answers or go-redis gives up on it (its ReadTimeout,
// 3 s by default; against a server that is down, its DialTimeout, 5 s, per
// dial, and its MaxRetries re-sends with back-off). Measured before the
// locks cut their requests: under CLIENT PAUSE 3000, TryLock(ctx, 500ms)
// returned true after 3.04 s; it now returns false at the end of its wait.
//
// What the wait does not bound: the single request of TryX(ctx, 0) (and a
// first attempt that the local line of waiters held up until the wait had
// ended), bounded by ctx and go-redis as above; a first subscription to
// the primitive's channel on a server that stopped answering, which waits
// for the Client's pub/sub connection; and calls without a wait (Lock,
// Acquire, Wait, releases). Against a dead Redis, Lock with a background
// context failed after 7.7 s, and GCRA AllowN after 1.7 s. A call that
// must end by a time limit needs a ctx with that deadline and
// ContextTimeoutEnabled; a request cut by ctx is an error like any other
// (see Errors and retries: an acquisition is undone). multilock's
// MultiLock makes its passes over the members with single attempts and
// waits for a busy member with that member's TryLock (cut as above);
// RedLock cuts its members' requests at its own step bounds (see package
// multilock).
//
// # Retries
//
// go-redis re-sends a command whose reply was lost to a dropped connection,
// so a script can run twice in Redis. Every state-changing script records its
// result under a short-lived request key and returns the record when run
// again: an acquisition, a release, a count-down is applied once. A lock hold
// taken without a context owner needs no record: its owner serves that hold
// only, so its field in the lock is the record while the hold lasts, and the
// release leaves a short-lived mark under the hold's request key.
//
// # Errors and retries
//
// Invalid arguments (an empty name, a negative wait or lease, n ≤ 0 permits,
// a nil context.Context) are reported before anything is sent, wrapping
// ErrInvalidArgument;
// constructors never fail. Releasing what the caller does not hold returns
// ErrNotHeld and changes nothing. Releases (Unlock, RUnlock, Release,
// CountDown) still run when ctx is already cancelled, on a detached context
// with a bounded timeout, so a deferred Unlock after a cancelled request does
// not leave the lock held. Calls after Close return ErrClosed. Match the
// sentinel errors with errors.Is.
//
// Zero values are invalid arguments, never panics: a handle declared
// rather than made by its constructor (var l rlock.Lock), a handle on a
// nil Client or a zero one (&redisync.Client{}), and a zero MultiLock
// return an error wrapping ErrInvalidArgument from every operation and
// send nothing (a zero Client's Close too). So is a nil context.Context
// ("Do not pass a nil Context", package context): every method that takes
// one returns an error wrapping ErrInvalidArgument that says "nil
// context", and sends nothing; those without an error (a lock's Hold)
// return what they would for an owner that holds nothing.
// (redisync.WithOwner, a context.WithValue, panics on a nil parent as the
// standard library does.)
//
// A key that holds another type than the primitive's layout (a list where a
// lock's hash belongs, a hash or a string that is not a number where a
// semaphore's or a latch's count or a fenced lock's counter belongs) gives
// an error wrapping ErrWrongType, never a raw script error, and the call
// changes nothing: queries (IsLocked, TTL, ...), ForceUnlock and Delete
// included, which neither report such a key as a lock nor delete it. A
// Client whose id (WithID) another live Client uses fails with
// ErrDuplicateID.
//
// Whether to call again after an error is one rule for every call that
// changes state (acquisitions, releases, Unlock, RUnlock, CountDown,
// ForceUnlock, Delete, TrySetCount, TrySetPermits, SetPermits, AddPermits,
// DrainPermits, UpdateLease, the rate limiters' calls); each call's
// documentation refers here. Errors fall into three kinds, told apart with
// errors.Is:
//
//   - Nothing happened: ErrInvalidArgument, ErrClosed, ErrWrongType,
//     ErrDuplicateID, ErrUpgrade, ErrNotHeld, ratelimit.ErrExceedsRate and
//     ratelimit.ErrNotInitialized, an error reply that is Redis's or the
//     script's own answer (a command refused by an ACL, a script refused
//     under maxmemory), and any error of an acquisition of a lock, a
//     read-write lock, a semaphore or a ratelimit.Limiter (Lock, TryLock,
//     RLock, TryRLock, Acquire, TryAcquire, AcquireN, TryAcquireN), ctx's
//     end and ErrNotReplicated included: an acquisition that may have
//     taken effect is undone before the error returns (and the undo goes
//     on in the background until Redis answers), so the caller holds
//     nothing. Calling again is safe; for the sentinels it fails the same
//     way until the cause is fixed. A GCRA call (Allow, AllowN, Reserve,
//     WaitN) that got no reply may have taken its events, and nothing
//     gives them back: calling again is safe, and at worst limits more.
//   - It happened, and must not be repeated: ErrNotReplicated from a
//     release (Unlock, RUnlock, Release). The release took effect on the
//     primary and its waiters were woken; only the replicas' acknowledgement
//     is missing (see WithReplicaSync). A second release would release
//     what someone else took meanwhile: never retry it.
//   - It may have happened (no reply came: a network error, a timeout,
//     ctx's deadline while the request was on its way; none of the
//     sentinels above). The call re-sent the same request while it could,
//     and a request applies at most once however often it is sent, so
//     what it did, it did once. After the call returns:
//     a lock's Unlock or RUnlock is finished by the lease: the hold ended
//     in this Client all the same and is no longer renewed, so Redis frees
//     it when its lease runs out, and a context owner's lost release is
//     settled before that owner's next call on the lock. A semaphore's or
//     an expirable permit's Release goes on in the background until Redis
//     answers (only an outage of over an hour, or Close, gives up on it,
//     counted in Stats.ReleasesFailed). Never retry these: the library
//     finishes them. Any other call is not finished after it returns: it
//     may or may not have happened. Calls whose repetition changes nothing
//     more (ForceUnlock, Delete, TrySetCount, TrySetPermits, SetPermits,
//     UpdateLease, SetRate, TrySetRate, UpdateRate, GCRA.Reset,
//     Reservation.Cancel) may be called again. Calls that would apply
//     twice (CountDown, AddPermits, DrainPermits, Limiter.Release) must
//     not be repeated blindly: a second CountDown may open a latch early,
//     a lost one keeps it closed until waiters' deadlines; read the state
//     (Count, AvailablePermits) when the application can tell from it.
//
// A call that fails before sending anything (the first kind, bar the
// error replies) leaves no trace in Redis.
//
// # Durations
//
// A lease (rlock's and rwlock's WithLease, WithWatchdogTimeout, an
// expirable permit's lease, UpdateLease) is at least 1 ms and at most 2^43
// ms (about 278 years), and is rounded up to whole milliseconds; outside
// that range it is an error wrapping ErrInvalidArgument, reported before
// anything is sent. An expirable permit's lease 0 means it never expires; a
// negative one is invalid. WithWatchdogTimeout also needs at least 30 ms, so
// that renewals every third of it can keep up.
//
// # Observability
//
// Client.Stats returns a Client's counters at any time: acquisitions by
// result, lost holds, renewals and their failures, pub/sub reconnects, and
// the holds, waits and subscribed channels of the moment. WithObserver
// hands the same events, with durations and a context for spans, to an
// Observer; the module github.com/redisync/redisync/extra/redisyncotel
// reports them as OpenTelemetry metrics and spans, so this module depends
// on no telemetry package.
//
// # Key layout (Redisson 3.x)
//
// {name} below is the name in braces, or the name itself when it already
// contains "{"; every key of one primitive shares its cluster slot. On a
// Redis Cluster, a name whose braces form no hash tag ("a}b", "a{}b",
// "a{b") breaks that rule: the keys built with {name} land in another
// slot, where a script could fail part-way (the read-write lock's builds
// its timeout keys in Lua). So on a Cluster client every primitive whose
// scripts use such keys (the locks, read-write locks, semaphores and the
// rate limiter) refuses such a name before sending anything, with an
// error wrapping ErrInvalidArgument that says why. A latch and a GCRA
// limiter work with such names (their scripts use only the name and
// redisync's request records, which keep the name's slot); for the others
// use plain names or a proper {tag}.
//
//	lock            hash name: field "<client id>:<token>" = hold count; PEXPIRE = lease
//	                channel redisson_lock__channel:{name} (release publishes "0")
//	fenced lock     as lock, plus counter redisson_lock_token:{name} (no TTL)
//	fair lock       as lock, plus list redisson_lock_queue:{name} of waiting
//	                owners and zset redisson_lock_timeout:{name} of their
//	                deadlines (epoch ms) (no TTL); a waiter's channel
//	                redisson_lock__channel:{name}:<owner>
//	read-write lock hash name: "mode" = read|write, reader fields "<owner>",
//	                writer field "<owner>:write"; per read hold a key
//	                {name}:<owner>:rwlock_timeout:<n>; channel redisson_rwlock:{name}
//	semaphore       string name = available permits (no TTL); channel redisson_sc:{name}
//	expirable sem.  as semaphore, plus zset {name}:timeout of 16-byte permit ids
//	                scored by expiry (epoch ms) (no TTL)
//	latch           string name = count, deleted at zero (no TTL);
//	                channel redisson_countdownlatch__channel__{name}
//	rate limiter    hash name: rate, interval (ms), type (0 overall,
//	                1 per client), keepAliveTime (ms); string {name}:value
//	                (permits left) and zset {name}:permits of grants (score:
//	                grant time, epoch ms); per client {name}:value:<client id>
//	                and {name}:permits:<client id>; redisync adds the set
//	                {name}:clients; no channel. Without keepAliveTime no TTL,
//	                with it every key has that TTL
//	GCRA limiter    string name = theoretical arrival time (epoch µs); no
//	                channel (redisync's own, not Redisson's)
//	fenced value    hash name: value, token (no TTL); package fence,
//	                redisync's own
//	election        fair lock name, fenced (the term is its token); hash
//	                {name}:leader (the latest leader record) and list
//	                {name}:leaders (the latest 64) (no TTL); channel
//	                redisync_election:{name}; package election, redisync's own
//
// redisync adds short-lived request keys redisync_request:{name}:<id> (see
// Retries); for a name longer than 256 bytes they hold its first 64 bytes
// (up to any brace), a digest of it and a short tag of its Cluster slot
// instead of the whole name, so that a long name does not leave a record
// as long behind each call. Names have no length limit of their own (a
// Redis key may have 512 MB), but the primitive's own keys and channels
// repeat the name, as in Redisson.
// Per Client there is a registration key and, for each counted semaphore
// it uses, a ledger, all with a TTL. Keys marked "no TTL" stay until
// their primitive's Delete (or, for a fencing counter, for good);
// docs/fencing.md says why each has none. Redis 6.2 or newer is
// supported; 7.x is tested.
package redisync
