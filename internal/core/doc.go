// Package core is the machinery shared by every redisync primitive: the
// client state behind redisync.Client, owners, holds and their watchdog, the
// waiting algorithm, request deadlines and undos for exactly-once scripts,
// and replica acknowledgement. Users do not import it; the primitives'
// packages do. The engine's design (owners, exactly once, fresh holds) is
// written at the top of lock.go.
//
// # A tour: one contended rlock.Lock.Lock
//
// A caller without a context owner locks a lock that another process holds.
// Follow it with "go to definition" from rlock's Lock.Lock:
//
//  1. rlock/lock.go: Lock.Lock calls the engine, Lock.Acquire (lock.go),
//     with lockSide: the lock's Side, whose Acquire, Release and Handoff
//     are the calls of its scripts through the typed bindings of package
//     lua (lua.LockAcquireFreshArgs and the others, generated from the
//     scripts' headers).
//  2. lock.go, Acquire: the owner (owner.go: none in ctx, so a fresh hold),
//     the handle's gate (gate.go: one caller through a handle at a time),
//     then acquire: the client's local line for this lock (line.go,
//     JoinLine and Turn.Await: only its head asks Redis), and
//     Client.Wait (wait.go) with the side's WaitSpec and the attempt
//     Lock.try.
//  3. wait.go, Wait: firstTry runs the attempt. Lock.try (lock.go) builds
//     an Op and calls Side.Acquire, which runs lock_acquire_fresh.lua
//     through Client.Eval (replicas.go). Redis receives, on one
//     connection: EVALSHA lock_acquire_fresh (EVAL if the server lacks
//     it), and WAIT when the primary has replicas. The script answers
//     "held by another" with the holder's PTTL.
//  4. Wait subscribes to the lock's channel through the client's pub/sub
//     multiplexer (package pubsub: SUBSCRIBE, or SSUBSCRIBE on a Cluster;
//     one connection per client), tries once more (a release may have come
//     before the subscription), and sleeps until a message, the PTTL (the
//     retry hint, capped by the re-check interval), a handoff from a
//     releaser of this client (handoff.go), ctx or Close. Then it tries
//     again: step 3.
//  5. Success: Lock.try records the hold (hold.go, acquiredAs), which the
//     watchdog (watchdog.go) renews every third of the lease until the
//     release, in one pipeline for every hold of the client.
//  6. The reply lost (ctx ended, the connection broke): the acquisition
//     may still take place. Lock.undo sends the side's release in undo
//     mode in the background, re-sent until Redis answers (undo.go); it
//     marks the acquisition cancelled if it has not run, so a late copy
//     does nothing (lua/prelude_request.lua), and the caller waits for it
//     at most a second. An acquisition its replicas did not acknowledge
//     (errs.ErrNotReplicated) is undone the same way before the error returns.
//
// # Glossary
//
//   - acceptor: a waiter's side of an in-process handoff (handoff.go): a
//     releaser of this client may hand it the lock instead of publishing.
//   - chain: the handoffs that followed one hold taken from Redis; a chain
//     ends after a bound so that other processes get their turn.
//   - deadline: the time by the Redis server's clock after which a copy of
//     a request is refused (deadline.go, RequestDeadline).
//   - fresh hold: the hold of a caller without a context owner: a new
//     owner for one hold, whose field in the hash is its record (lock.go).
//   - gate: a handle's local lock, which makes callers without a context
//     owner exclude each other as sync.Mutex's do (gate.go).
//   - hold: one owner's hold of a lock or side, from hold count 0 → 1 to
//     its release or loss (hold.go); redisync.Hold shows it to users.
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
//     next operation (resend.go, Settle).
//   - side: one kind of hold the engine drives: the lock's, the fair
//     lock's, the spin lock's, an rwlock's read or write side (lock.go).
//   - sync: a call's replica acknowledgement (replicas.go, Sync).
//   - undo: the release, in undo mode, of an acquisition whose reply was
//     lost (undo.go, lock.go).
package core
