// Package core is the lock engine every redisync primitive shares, and the
// client state behind redisync.Client. Users do not import it; the
// primitives' packages do. The engine's design is written below ("The
// lock engine", "Ownerless holds"); docs/architecture.md draws the whole
// library, and how a call travels from a handle to Redis.
//
// # Where things live
//
// core is one package, in files by job, from the top down: the lock's
// acquisition (acquire.go); the waiting loop every wait shares, the lock's
// attempt it makes and the waiter's side of the in-process handoff
// (wait.go); Shutdown (shutdown.go); the release, with the releaser's
// side of the handoff (release.go); the lock engine with its Side, and
// the handles of one name as one mutex (lock.go); a handle's checks and
// the lease rule (handle.go); the Client with its options, checks and
// counters' readers (client.go); live holds (hold.go); the client's local
// lines (line.go); the lock's queue of waiting Clients in Redis
// (queue.go) and the subscriptions a queued wait that took the lock
// leaves for the Client's next wait (linger.go); the in-process handoff, one part with a waiter's side
// and a releaser's side, and the chains it goes on (handoff.go); the
// id's registration (register.go); a lock's script call (request.go); the
// watchdog (watchdog.go), which re-checks a watched hold at once when its
// key's keyspace notification says it was deleted or expired
// (events.go); the counters and hooks of observation (observe.go); the
// eviction watch (eviction.go); and what the process decides alone:
// owner tokens, owner locks and a handle's gate (local.go). Each file
// stands above those it uses, but for three uses running back up, each
// from a type that holds one declared above it (TestLayout lists them):
// the Client holds the registry of its handles (client.go to lock.go), a
// hold how Shutdown releases it (hold.go to release.go), and the holds
// their watchdog, which renews them (watchdog.go to hold.go). The holds,
// the waits and observation know no Client: they are given what they
// report to. Beside the package, packages with a narrow
// contract and no call back into the engine: request (ids, deadlines by
// the server's clock, re-sends, settles, undos, the ledger), pipeline
// (the script pipeline: the runner of state-changing scripts and replica
// acknowledgement), bg (background work that Close waits for, detached
// contexts) and errs (the sentinel errors).
//
// # A tour: one contended rlock.Lock.Lock, and the Unlock that hands off
//
// A caller without a context owner locks, with the default options, a lock
// that another caller holds. Follow it with "go to definition" from
// rlock's handle.Lock; the files of the walk, in order:
//
//  1. rlock/lock.go: handle.Lock calls [Lock.Acquire] with the lock's
//     [Side]: Fresh, lined up locally (Line), its Scripts and Handoff the
//     named type lockScripts, which runs the lock's scripts with what the
//     engine put in the [Request].
//  2. acquire.go: [Lock.Acquire] takes the owner token (Lock.token: no
//     owner in ctx, the handle's own) and the base of the requests
//     (Lock.baseRequest: a fresh hold's, with no owner yet), passes the
//     handle's gate ([Gate.Enter], local.go), and makes the call's
//     [acquisition] (wait.go; one allocation, its [Handoff] in it), whose
//     methods are its steps: acquisition.inLine joins the client's local
//     line ([Lines.Join], [Turn.Await], line.go), makes the caller one a
//     releaser may hand the lock to ([Turn.AcceptHandoffs]), and at the
//     head runs [acquisition.wait], the lock's one wait. It returns what
//     the wait came to ([verdict]: acquired, handed off, missed, cut off).
//  3. wait.go: the wait's loop: an attempt (loop.next, the
//     acquisition's [acquisition.attempt]); subscribe and attempt again;
//     then sleep (loop.sleep) until a message, the retry hint
//     ([RetryAfterPTTL] of the holder's PTTL, capped by the re-check
//     interval), a handoff ([acquisition.handed]: the first sleep opens
//     the caller's Handoff with the acquisition a releaser is to make for
//     it, made on the caller's goroutine), ctx or Close, and attempt
//     again. The subscription goes on to the next caller in the line
//     (Turn.passOn).
//  4. wait.go, below the loop: [acquisition.attempt] asks whether the
//     caller may ask Redis ([acquisition.ask]: not while the lock is held
//     here, nor once a releaser claimed its Handoff), takes a new fresh
//     owner ([Lock.withFreshOwner], lock.go) and, holding the owner's
//     lock (acquisition.asOwner, [ownerLocks]), prepares the request
//     (acquisition.prepare: its count, lease, request key, deadline and
//     runner) and sends it with the side's script:
//     lockScripts.RunAcquire (rlock/lock.go) sends
//     lua/lock_acquire_fresh.lua through its typed binding. With a wait,
//     each attempt is cut at the end of the wait. On success
//     [Lock.record] (release.go) records the hold with
//     [Holds.acquiredAs] (hold.go), which registers it with the watchdog
//     (watchdog.go: a renewal every third of the hold's own lease, the
//     holds due together in one round, through the script pipeline; the
//     hold ends when its acknowledged lease runs out), and begins a chain
//     of handoffs.
//
// The holder's Unlock, while the caller waits at the head of the line:
//
//  5. release.go: [Lock.Release] makes a [releaser]: releaser.release
//     takes the owner's lock, and [releaser.handoff], when the hold's
//     chain allows it, claims the Handoff of the caller at the head of
//     the line ([Lines.Claim], line.go), runs the side's handoff script
//     (lockScripts.RunHandoff: lua/lock_handoff.lua releases the hold and
//     acquires the lock for the caller's request in one script) and
//     finishes the Handoff ([Handoff.Finish], handoff.go).
//  6. wait.go, the caller's side: its sleep ends on [Handoff.Handed];
//     [acquisition.takeHanded] takes the outcome ([Handoff.take]) and
//     records the hold with [Lock.record], on the chain it goes on with.
//
// Read by contract, not opened: the checks and the lease rule
// ([Handle.Check], [Handle.Lease] in handle.go), the gate and the owner
// locks (local.go), the observed wait ([Client.BeginWait] in client.go),
// the local line's turns ([Lines.Join], [Turn.Await], [Turn.Leave] in
// line.go), the holds' records (hold.go), the request's deadline
// ([request.Requests.FreshDeadline]), the script pipeline
// ([pipeline.Pipeline.Runner]), the pub/sub subscription
// ([pubsub.Mux.Subscribe]) and the generated binding
// ([lua.LockAcquireFreshArgs]).
//
// What Lock sends to Redis, in order, on a single node without replicas:
// INFO replication, in a round trip of its own before the client's first
// batch that waits for replicas (the script pipeline counts them; with
// none it waits for nothing); EVALSHA lock_acquire_fresh (EVAL when the
// server lacks the script); on the client's one pub/sub connection
// SUBSCRIBE redisson_lock__channel:{name} (SSUBSCRIBE on a sharded
// Cluster), waited for until confirmed; EVALSHA lock_acquire_fresh again,
// for a new fresh owner; then, after each message or retry hint, EVALSHA
// lock_acquire_fresh until it answers "acquired". In the background, off
// the caller's path: INFO replication again at most once a second while
// batches go, since a primary without replicas may have one attached
// since (the pipeline's replicaProbe), and TIME, the server's clock for
// the deadlines, at the client's first request and then at most every
// 30 s while requests go (the request package's clockResample). The
// subscription stays for the next caller in the line, and goes
// (UNSUBSCRIBE) when the line empties or the caller took the lock from
// Redis. Each EVALSHA goes through the client's script pipeline for the
// primary
// ([pipeline.Pipeline.Runner]): sent at once when nothing is in flight,
// else with the other calls that arrived meanwhile, in one batch; when
// the primary has replicas, one WAIT ends the batch. The Unlock that
// hands the lock off to the head of the line sends one EVALSHA
// lock_handoff: the release and the head's acquisition in one script,
// with no PUBLISH.
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
// # The lock engine
//
// Every hold-based lock — rlock's Lock, FairLock and SpinLock, and both
// sides of rwlock's RWLock — is a Lock (a handle's state) driven through a
// Side (a kind of hold: its scripts, its owner field, how its waiters
// wait). The engine does the rest once: owners and the local gate, the
// request / undo / hold bookkeeping, waiting, release, renewal, Done and
// Err.
//
// Owners. A context carrying an owner (WithOwner) makes every handle act for
// that owner, which re-enters what it holds: hold counts, as Redisson's per
// thread. Without one, a handle acts for its own owner token, and its local
// gate makes the goroutines calling through it exclude each other as
// sync.Mutex's (sync.RWMutex's for an rwlock) callers do, waiting locally
// in arrival order; such a handle is never reentrant. On a side that takes
// fresh holds ([Side.Fresh]: the lock, the spin lock and the rwlock's write
// side), such a caller does not use the handle's token in Redis either: see
// Fresh holds.
//
// The client is the authority over its own owners' hold counts. Every
// acquisition and release tells Redis the count the owner has once it takes
// effect, as this client counts it, and the scripts set that count instead
// of adding to whatever Redis has. So a count left in Redis by a release
// whose reply was lost, or by a late copy of a request, is never adopted
// into a hold: the next acquisition or release overwrites it, and the
// watchdog renews exactly the holds this client believes in. Operations
// of one owner on one lock are serialized in the client, so the count they
// send is exact; a renewal is not serialized with them (one built before a
// re-entry may run after it), so it extends the lease and leaves the count
// alone.
//
// Exactly once. A copy of a request may reach Redis at any later time: a
// go-redis re-send after a lost reply, or a request held up in the network
// and delivered after the client gave up on it. Each state-changing script
// records its result under a request key ([keys.Request]) and returns the
// record when a copy of the same request runs again; and each request
// carries a deadline by the Redis server's clock ([request.Requests.Deadline]: the time
// go-redis may take to re-send, converted with a measured offset), checked
// in the script with TIME: a copy that finds no record after the deadline
// is refused and changes nothing. The record lives until just past the
// deadline, so a copy either finds it or is refused, and no record outlives
// its purpose (lua/prelude_request.lua). Owner-based locks have a second
// defence: the scripts set the count the client believes in, so a
// duplicate that slipped through would change nothing. An acquisition whose
// reply is lost is undone by a release in undo mode, which marks the
// acquisition cancelled if it has not run yet, so a later copy of it does
// nothing either. This is the record-based path, for context owners, the
// fair lock and the rwlock's read side; fresh holds take a cheaper one.
//
// Fresh holds. A caller without a context owner on a Fresh side holds the
// lock at most once at a time through its handle (the gate), so its hold
// count is always 1. Each of its acquisition attempts takes an owner of its
// own: a new token ([freshToken]), the owner "<client id>:<token>"
// in Redisson's layout as any other ([Lock.withFreshOwner]), whose field is
// the side's
// ([Scripts.Field]: the owner itself for a lock, "<owner>:write" for an
// rwlock's write side); the handle remembers the owner of the hold it took
// (the field fresh of [Lock]) and releases that one. As that owner's field in the hash
// serves one hold and no other, the field is the acquisition's record while
// the hold lasts, and the hold's request key, [keys.Request](name, field),
// shared by its acquisition, release and undo, carries the marks that
// outlive it (the rwlock's write side: lua/rwlock_write_acquire_fresh.lua and
// lua/rwlock_write_release_fresh.lua, the same steps with the field "mode"):
//
//   - acquisition (lua/lock_acquire_fresh.lua): when neither the hash nor
//     the request key exists, refuse a late copy (TIME), then HSET, PEXPIRE
//     (and INCR for fencing); no record. Otherwise it changes nothing: a
//     copy finding the field answers "acquired" (a re-send), one finding a
//     mark answers "cancelled", else "held by another";
//   - release (lua/lock_release_fresh.lua): HDEL of the field, PUBLISH, and
//     the mark "released" on the request key until a second past the later
//     of the acquisition's deadline and the release's own. A copy of the
//     acquisition in time finds the mark and changes nothing; a later one
//     is refused; a re-sent release finds the mark and answers 0 again; a
//     late release deletes a field nobody uses any more. No TIME needed;
//   - undo: the mark "cancelled" and HDEL of the field (a publish if that
//     freed the lock), the same however often it runs;
//   - a force unlock marks the request keys of every field it deletes.
//
// For the field to outlive every copy of the acquisition that could still
// be accepted, the acquisition's deadline comes at least two seconds
// before its lease ends ([request.Requests.FreshDeadline]); a lease too short for that makes
// the script record the acquisition as the record-based path does. So a
// fresh hold costs 9 commands in Redis per lock and unlock (8 for the spin
// lock, which publishes nothing; 11 for an rwlock's write side, which also
// deletes the field "mode"), against 14 on the record-based path (19 for
// the rwlock's write side), and is exactly once as that one is, save for a
// lock deleted from outside redisync (DEL, a Redisson forceUnlock), which
// leaves no mark.
//
// # Ownerless holds
//
// Without a context owner, a lock handle is a distributed sync.Mutex (an
// rwlock handle a sync.RWMutex), and the handles of one name on one
// client are one such mutex: what a caller without a context owner holds
// belongs to the client and the name, not only to the handle it called
// through, so any handle of the name releases it (Redisson's users call
// getLock(name) wherever they need it, and the handle made for the Unlock
// is not the one made for the Lock). Each handle keeps its gate and its
// fresh holds (they exclude each other in Redis as before, and a release
// hands the lock on to a waiter of another handle in the local line); the
// client's registry ([ownerlessRegistry]) lists, per kind and name, the
// handles whose gate has a holder. A handle that has never taken a hold
// without a context owner acts, when asked to release or for its Hold,
// Done, Err and FencingToken, for the latest such handle of the name.
// A handle that has taken one answers for the holds it took, and only
// for them: once they are released, a further Unlock through it is
// ErrNotHeld and changes nothing, even while another handle of the name
// holds, so a double Unlock (an Unlock and a deferred one) never frees
// another request's lock. So the handle's views of what
// it holds ([Lock.Owner], [Lock.Hold], [Lock.FencingToken], [Lock.Done],
// [Lock.Err]) are resolved through the registry (at the end of lock.go).
//
// The registry holds its handles strongly while they hold: a handle
// dropped (garbage-collected) while it holds stays reachable from the
// client, where a new handle of the name finds and releases its hold, so
// no hold is renewed that nothing can release. A handle leaves the
// registry when its gate empties.
//
// # Glossary
//
// The terms of the walk, one name each:
//
//   - hold: one owner's hold of a lock or side, from hold count 0 → 1 to
//     its release or loss ([Hold]); redisync.Hold shows it to users.
//   - owner: who holds, "<client id>:<token>": a context owner
//     (WithOwner), a handle's own, or a fresh hold's.
//   - fresh hold: the hold of a caller without a context owner on a Fresh
//     side: a new owner for one hold, whose field in the hash is its record
//     (see "Fresh holds" below).
//   - owner's lock: the client's lock that serializes one owner's
//     operations on one lock ([ownerLocks]), so the counts it sends are
//     exact.
//   - gate: a handle's local exclusion of the callers without a context
//     owner, as sync.Mutex's ([Gate]).
//   - side: one kind of hold the engine drives ([Side]): the lock's, the
//     fair lock's, the spin lock's, an rwlock's read or write side.
//   - request: one script call for one owner ([Request]): an acquisition,
//     a release, an undo or a handoff. Package request keeps what requests
//     share: their keys, deadlines, re-sends and settles.
//   - request key: where a script records its result, so that a copy of
//     the request finds it ([keys.Request]); a fresh hold's acquisition,
//     release and undo share one.
//   - deadline: when a late copy of a request is refused, by the Redis
//     server's clock ([request.Requests.Deadline]).
//   - acquisition: one caller's Lock or TryLock past the gate
//     ([acquisition]), and the request that takes a hold.
//   - attempt: one acquisition request sent to Redis
//     ([acquisition.attempt]); a semaphore's or latch's is an [Attempt].
//   - wait: the attempts of one acquisition and the pauses between them
//     ([acquisition.wait], [Waits.Until]); it ends as a [verdict].
//   - cut: an attempt on its way when the wait ended is cut: its request
//     stops, and the acquisition, if it took place, is undone.
//   - line: a client's callers waiting for one lock or semaphore, in
//     arrival order ([Lines]).
//   - turn: one caller's place in a line ([Turn]).
//   - head: the turn at the front of its line, the only one that asks
//     Redis.
//   - subscription passed on: the lock's channel, kept subscribed from one
//     head of the line to the next (Turn.passOn, Turn.passedOn).
//   - held here: a caller of the line holds the lock in this client
//     ([Lines.heldHere]); the head waits for its release instead of asking
//     Redis.
//   - handoff: a release that hands the lock off to the head of the line
//     in the same script that acquires it for that caller.
//   - Handoff: a waiting caller's readiness to be handed the lock: the
//     acquisition to make for it and where its outcome goes ([Handoff]),
//     with a waiter's side and a releaser's side (handoff.go).
//   - releaser: one Unlock's steps ([releaser]), a handoff's or not.
//   - chain: the handoffs that followed one hold taken from Redis,
//     bounded so that other processes get their turn ([Chain]).
//   - undo: the release, in undo mode, of an acquisition whose reply was
//     lost (Lock.undo; [request.Requests.Undo] for the rate limiter,
//     [request.Requests.UndoAnswered] for the semaphores).
//   - settle: making a release whose reply was lost final before the
//     owner's next request ([request.Requests.Settle]).
//   - pipeline: the client's script pipeline per primary, the one door of
//     state-changing scripts to Redis, which waits for replicas
//     ([pipeline.Pipeline]).
package core
