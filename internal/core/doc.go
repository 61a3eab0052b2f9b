// Package core is the lock engine every redisync primitive shares, and the
// client state behind redisync.Client. Users do not import it; the
// primitives' packages do. The engine's design (owners, exactly once,
// fresh holds) is written at the top of lock.go.
//
// # Where things live
//
// core is one package, whose parts call each other both ways, in files by
// job: the Client (client.go), the id's registration (register.go), a
// handle's checks and the lease rule (handle.go), the lock engine with its
// Side and its Request (lock.go), what the process decides alone: owner
// tokens, owner locks and a handle's gate (local.go), acquisition
// (acquire.go), release (release.go), the client's local lines
// (line.go), the in-process handoff (handoff.go), waiting (wait.go), live
// holds (hold.go) and their watchdog (watchdog.go), and observation
// (observe.go). Beside it, packages with a narrow contract and no call
// back into the engine: request (ids, deadlines by the server's clock,
// re-sends, settles, undos, the ledger), pipeline (the script
// pipeline: the runner of state-changing scripts and replica
// acknowledgement), bg (background work that
// Close waits for, detached contexts) and errs (the sentinel errors).
//
// # A tour: one contended rlock.Lock.Lock
//
// A caller without a context owner locks, with the default options, a lock
// that another process holds. Follow it with "go to definition" from
// rlock's handle.Lock; the files of the walk, in order:
//
//  1. rlock/lock.go: handle.Lock calls [Lock.Acquire] with the lock's
//     [Side]: Fresh, lined up locally (Line), its Scripts and Handoff the
//     named type lockScripts, which runs the lock's scripts with what the
//     engine put in the [Request].
//  2. lock.go: Lock.token (no owner in ctx: the handle's own) and
//     Lock.baseRequest, a fresh hold's request with no owner yet.
//  3. acquire.go: [Lock.Acquire] passes the handle's gate; the call's
//     steps are then the methods of its acquisition (one allocation):
//     acquisition.inLine joins the client's local line and waits for its
//     turn; at the head, acquisition.inRedis runs the side's Waiting (the
//     lock's channel) as a [Lined] wait, with the acquisition as the
//     attempt. Each attempt (acquisition.Try, acquisition.attempt) takes
//     a new fresh owner (Lock.withFreshOwner), the owner's lock, the
//     request (acquisition.request) and acquisition.run, which sets the
//     request's runner and calls lockScripts.RunAcquire (rlock/lock.go):
//     lua/lock_acquire_fresh.lua through its typed binding. With a wait,
//     each attempt is cut at the end of the wait.
//  4. local.go: [Gate.Enter] (one caller through a handle at a time),
//     [Client.freshToken], ownerLocks (one operation per owner).
//  5. line.go: [Lines.Join], [Turn.Await], [Turn.Leave]; the subscription
//     a head passes on to the next (Turn.passOn, Turn.passedOn).
//  6. handoff.go: the caller's acceptor: a releaser of this client may
//     hand the lock off to it between attempts instead of publishing.
//  7. wait.go: [Waits.Until] and [Lined]: try; subscribe and try again;
//     then sleep until a message, the retry hint ([RetryAfterPTTL] of the
//     holder's PTTL, capped by the re-check interval), a handoff, ctx or
//     Close, and try again.
//  8. hold.go: on success acquisition.record (acquire.go) records the hold
//     with [Holds.acquiredAs], which registers it with the watchdog
//     (watchdog.go: a renewal every third of the hold's own lease, the
//     holds due together in one round, through the script pipeline; the
//     hold ends when its acknowledged lease runs out), and begins a chain
//     of handoffs.
//
// Read by contract, not opened: the checks and the lease rule
// ([Handle.Check], [Handle.Lease] in handle.go), the observed wait
// ([Client.BeginWait] in observe.go), the request's deadline
// ([request.Requests.FreshDeadline]), the script pipeline's runner
// ([pipeline.Replicas.Runner]), the pub/sub subscription
// ([pubsub.Mux.Subscribe]) and the generated binding
// ([lua.LockAcquireFreshArgs]).
//
// What Lock sends to Redis, in order, on a single node without replicas:
// INFO replication, once per primary for the client's life, before its first batch
// that waits for replicas (the script pipeline counts them; with none it
// waits for nothing); EVALSHA
// lock_acquire_fresh (EVAL when the server lacks the script); on the
// client's one pub/sub connection SUBSCRIBE redisson_lock__channel:{name}
// (SSUBSCRIBE on a sharded Cluster), waited for until confirmed; EVALSHA
// lock_acquire_fresh again, for a new fresh owner; then, after each
// message or retry hint, EVALSHA lock_acquire_fresh until it answers
// "acquired". The first request of a client also reads the server's clock
// (TIME) in the background, for the deadlines. The subscription stays for
// the next caller in the line, and goes (UNSUBSCRIBE) when the line
// empties or the caller took the lock from Redis. Each EVALSHA goes
// through the client's script pipeline for the primary
// ([pipeline.Replicas.Runner]): sent at once when nothing is in flight,
// else with the other calls that arrived meanwhile, in one batch; when
// the primary has replicas, one WAIT ends the batch.
//
// When a reply is lost (ctx ended, the connection broke), the acquisition
// may still take place: acquisition.interrupted sends the side's release
// in undo mode in the background (Lock.undo), re-sent until Redis answers
// for as long as the acquisition's record lives; it marks the acquisition
// cancelled if it has not run, so a late copy does nothing
// (lua/lock_release_fresh.lua), and gives back the hold if it has. The
// caller waits for it at most a second ([request.UndoWait]), holding the
// owner's lock meanwhile; a caller whose attempt the end of its wait cut
// does not wait for it (the owner's next operation does). An acquisition
// its replicas did not acknowledge ([errs.ErrNotReplicated]) is undone the
// same way before the error returns.
//
// # Glossary
//
//   - hold: one owner's hold of a lock or side, from hold count 0 → 1 to
//     its release or loss ([Hold]); redisync.Hold shows it to users.
//   - fresh hold: the hold of a caller without a context owner on a Fresh
//     side: a new owner for one hold, whose field in the hash is its record
//     (see "Fresh holds" in lock.go).
//   - side: one kind of hold the engine drives ([Side]): the lock's, the
//     fair lock's, the spin lock's, an rwlock's read or write side.
//   - request: one script call for one owner ([Request]): an acquisition,
//     a release, an undo or a handoff; its deadline, by the Redis
//     server's clock, is when a late copy of it is refused
//     ([request.Requests.Deadline]).
//   - line: a client's callers waiting for one lock or semaphore, in
//     arrival order; only the head (its [Turn]) asks Redis ([Lines]).
//   - handoff: a release that hands the lock off to the head of the line
//     in the same script that acquires it for that caller (handoff.go).
//   - chain: the handoffs that followed one hold taken from Redis,
//     bounded so that other processes get their turn ([Chain]).
//   - undo: the release, in undo mode, of an acquisition whose reply was
//     lost (Lock.undo; [request.Requests.Undo] for the semaphores).
package core
