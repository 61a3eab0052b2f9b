// Package core is the lock engine every redisync primitive shares, and the
// client state behind redisync.Client. Users do not import it; the
// primitives' packages do. The engine's design (owners, exactly once,
// fresh holds) is written at the top of lock.go.
//
// # Where things live
//
// core is split by job into packages whose imports run one way, down this
// list (each imports only packages below it, and none imports core):
//
//   - core: the Client (its state and accessors: client.go), the lock
//     engine (Lock, Side and its Scripts, sideCall: lock.go, side.go,
//     op.go, acquire.go, release.go), the client's local lines and
//     in-process handoffs (line.go, handoff.go), owner tokens and owner
//     locks (owner.go), observation (hooks.go, observe.go), the id's
//     registration (register.go), the sharded mode (publish.go), a
//     handle's checks and the lease rule (handle.go, lease.go);
//   - core/hold: live holds (Holds, Hold) and the watchdog that renews
//     them;
//   - core/gate: a handle's local gate (Gate);
//   - core/wait: the waiting algorithm (Waits.Until) and its strategies
//     (PubSub, Lined, Spin);
//   - core/request: exactly-once requests: ids, deadlines by the server's
//     clock, re-sends, settles, undos and the completion of lost releases
//     (Requests), and the counted semaphores' ledger (Ledger);
//   - core/replica: replica acknowledgement (Replicas, Sync, runners);
//   - core/bg: background work that Close waits for, detached contexts;
//   - core/errs: the sentinel errors and what is asked of an error.
//
// A Client reaches each part through one accessor (Requests, Replicas,
// Holds, Lines, Waits, Background), so that "go to definition" leads from
// a primitive to the part that does the work.
//
// # A tour: one contended rlock.Lock.Lock
//
// A caller without a context owner locks, with the default options, a lock
// that another process holds. Follow it with "go to definition" from
// rlock's handle.Lock; the files of the walk, in order:
//
//  1. rlock/lock.go: handle.Lock calls the engine, Lock.Acquire, with the
//     lock's Side: Fresh, lined up locally (Line), its Scripts and
//     Handoff the named type lockScripts, whose methods run the lock's
//     scripts through the typed bindings of package lua.
//  2. acquire.go, Lock.Acquire: the owner (lock.go, owner.go: none in
//     ctx, so a fresh hold), one observed wait (observe.go, BeginWait),
//     the handle's gate (gate/gate.go: one caller through a handle at a
//     time), then sideCall.acquire.
//  3. acquire.go, sideCall.acquireInLine: the client's local line for the
//     lock (line.go, Lines.Join and Turn.Await: only its head asks Redis),
//     ready to be handed the lock by a releaser of this client
//     (handoff.go, acceptor); at the head, sideCall.waitInRedis runs
//     the side's Waiting (PubSub on the lock's channel, made
//     Lined) with the attempt lockAttempt.
//  4. wait/wait.go and wait/pubsub.go, Waits.Until and Lined.wait: the
//     first attempt, lockAttempt.Try → sideCall.try (acquire.go): the
//     owner's lock (owner.go), the op of a new fresh owner (Lock.attempt:
//     FreshToken, request.Requests.FreshDeadline), and
//     Scripts.RunAcquire (rlock/lock.go), which runs lock_acquire_fresh
//     through replica.Replicas.Runner (replica/replica.go).
//  5. The script answers "held by another" with the holder's PTTL (the
//     retry hint, RetryAfterPTTL). Lined.wait subscribes to the
//     lock's channel through the client's multiplexer (package pubsub),
//     tries once more (a release may have come before the subscription),
//     and sleeps until a message, the retry hint (capped by the re-check
//     interval), a handoff from a releaser of this client, ctx or Close;
//     then it tries again (step 4).
//  6. Success: sideCall.hold records the hold (hold/hold.go,
//     Holds.AcquiredAs), which the watchdog (hold/watchdog.go) renews
//     every third of the lease, in one pipeline for every hold of the
//     client; the hold begins a chain of handoffs (handoff.go).
//
// What Lock sends to Redis, in order, on a single node without replicas:
// EVALSHA lock_acquire_fresh (EVAL when the server lacks the script); on
// the client's one pub/sub connection SUBSCRIBE
// redisson_lock__channel:{name} (SSUBSCRIBE on a sharded Cluster), waited
// for until confirmed; EVALSHA lock_acquire_fresh again, for a new fresh
// owner; then, after each message or retry hint, EVALSHA
// lock_acquire_fresh until it answers "acquired". The subscription stays
// for the next caller in the line, and goes (UNSUBSCRIBE) when the line
// empties or the caller took the lock from Redis. When the primary has
// replicas, each EVALSHA goes with WAIT in one pipeline (the replicas
// counted once with INFO replication); the first request of a client also
// reads the server's clock (TIME) in the background.
//
// When a reply is lost (ctx ended, the connection broke), the acquisition
// may still take place: sideCall.interrupted sends the side's release in
// undo mode in the background (acquire.go, sideCall.undo), re-sent until
// Redis answers for as long as the acquisition's record lives; it marks
// the acquisition cancelled if it has not run, so a late copy does nothing
// (lua/prelude_request.lua), and gives back the hold if it has. The caller
// waits for it at most a second (request.UndoWait), holding the owner's
// lock meanwhile. An acquisition its replicas did not acknowledge
// (ErrNotReplicated) is undone the same way before the error returns.
//
// # Glossary
//
//   - acceptor: a waiter's side of an in-process handoff (handoff.go): a
//     releaser of this client may hand it the lock instead of publishing.
//   - chain: the handoffs that followed one hold taken from Redis; a chain
//     ends after a bound so that other processes get their turn
//     (Chain, handoff.go).
//   - deadline: the time by the Redis server's clock after which a copy of
//     a request is refused (request.Requests.Deadline).
//   - fresh hold: the hold of a caller without a context owner: a new
//     owner for one hold, whose field in the hash is its record (lock.go).
//   - gate: a handle's local lock, which makes callers without a context
//     owner exclude each other as sync.Mutex's do (Gate).
//   - hold: one owner's hold of a lock or side, from hold count 0 → 1 to
//     its release or loss (Hold); redisync.Hold shows it to users.
//   - ledger: a client's numbered requests on a counted semaphore, whose
//     outcomes Redis keeps while the client may still ask, so that an undo
//     or a re-sent release works after any outage (request.Ledger,
//     lua/prelude_ledger.lua).
//   - line, turn: a client's callers waiting for one lock or semaphore,
//     in arrival order; only the head (its turn) asks Redis (line.go).
//   - mark: what a fresh hold's release or undo leaves on its request key,
//     so that a late copy of its acquisition does nothing.
//   - offer: a waiter at the head of a line ready to be handed the lock.
//   - record: a request's result kept under its request key until a second
//     past its deadline; a copy of the request returns it (replay).
//   - replay: the start of a recorded script, answering a copy of a request
//     with the record (lua/prelude_request.lua).
//   - settle: marking an owner's lost release cancelled before the owner's
//     next operation (request.Requests.Settle).
//   - side: one kind of hold the engine drives: the lock's, the fair
//     lock's, the spin lock's, an rwlock's read or write side (side.go);
//     its Scripts are named types in rlock and rwlock.
//   - side call: one acquisition or release through a handle of one of its
//     sides (sideCall): the engine's steps past the checks.
//   - sync: a call's replica acknowledgement (replica.Sync).
//   - undo: the release, in undo mode, of an acquisition whose reply was
//     lost (acquire.go, sideCall.undo; request.Requests.Undo for the
//     semaphores).
package core
