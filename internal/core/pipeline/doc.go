// Package pipeline is a Client's one door to Redis for state-changing
// scripts: its script pipeline, one queue per primary, and the replicas'
// acknowledgement of what the pipeline wrote (Redisson's
// checkLockSyncedSlaves), one WAIT for a whole batch.
//
// # Tour
//
// A typed script binding runs through a Runner (Pipeline.Runner): a Sync
// for a call that waits for the replicas (acquisitions, releases,
// handoffs, count-downs), the plain runner otherwise (undos, settles, the
// other scripts). Both end in EvalCommand (eval.go), which finds the
// primary that runs the script (primaryFor: the client itself, or on a
// Cluster the master of KEYS[1]'s slot) and puts the call in that
// primary's queue (pipelined, pipeline.go):
//
//   - a call that finds nothing in flight to its primary is sent at once,
//     by its own caller, alone: no hand-over, no latency added when idle;
//   - calls that arrive while a batch is in flight wait in the queue and
//     go together in the next one (at most maxBatch calls and about
//     maxBatchBytes), sent by a goroutine that drains the queue and then
//     ends; one batch is in flight per primary at a time under load, up
//     to maxInFlight (4) while those in flight carry fewer than
//     smallInFlight (4) calls in all, so that a few callers are each sent
//     at once and a batch waiting for its WAIT holds up no other;
//   - a caller whose context ends while its call waits returns at once
//     with the context's error; its call goes on in its batch for the
//     others, and the caller's engine undoes it as after any lost reply.
//
// send (batch.go) sends one batch as one go-redis pipeline (Pipeline(),
// not AutoPipeline(), which sends WAIT on another connection, where it
// acknowledges nothing): the calls' EVALSHAs, then, when a call of the
// batch waits for the replicas and the primary has some, WAIT <replicas>
// <timeout> and INFO replication. Each call keeps its own reply: an error of one
// (NOSCRIPT, READONLY, LOADING, a redirection) fails no other. The calls
// answered NOSCRIPT are sent again, only they, with their script's source
// (EVAL loads it). On a Cluster a call redirected (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN, a master gone) is sent again alone by its caller
// (EvalCommand): without acknowledgement through go-redis's cluster
// client, which follows the redirection; with it to the slot's master
// once the client knows it. On Sentinel the client reaches the current
// primary.
//
// # Acknowledgement (group commit)
//
// Redis replicates asynchronously: a write the primary acknowledged can be
// lost when the primary dies before a replica has it. WAIT ends a batch on
// the connection that carried its writes and acknowledges every write of
// the batch at once; a call not acknowledged in time gets
// errs.ErrNotReplicated in its Sync, apart from its script's result (the
// script did take effect on the primary): an acquisition is then undone by
// its engine, a release or a count-down returns the error saying it took
// effect, a handoff gives the waiter only the releaser's acknowledged
// lease, a renewal extends nothing (package core: a hold ends when its
// acknowledged lease runs out).
//
// The number of replicas of each primary follows the primary the scripts
// ran on. It is read in a round trip of its own before the first batch
// that waits for replicas (INFO replication, bounded by the timeout,
// readFirst: once per primary, again only after a failed read): WAIT must
// follow the writes on their connection, and a first batch that read the
// count in its own pipeline could not wait, leaving writes a failover may
// lose although their callers were told they were safe. A failed read
// fails nothing: that batch reads the count in its own pipeline (INFO
// replication first) and waits for no replica. A batch that does not wait
// reads a count not known yet in its own pipeline, never alone. A
// primary with none is read again in the background, at most every
// replicaProbe (1 s) while batches go, so that a replica attached since
// is waited for.
//
// A batch is judged by the primary that ran it. Once a primary the client
// reached within Settings.Forget had a replica, every batch reads the
// role of the server that ran it (INFO
// replication, last in its pipeline, after WAIT): its replication id
// (master_replid) says which primary has the writes. The client keeps
// what it read of each primary by replication id (a sighting), because a
// client of one primary can reach two: a Sentinel client whose
// connections straddle a failover, or the old primary back from a
// partition, still taking writes until the sentinels demote it and
// discard them, with no replica left (its replica was promoted). A batch
// that ran on another primary than the one whose count it waited for is
// acknowledged only by that primary's own replicas, counted as that
// primary was last read; so the old primary's writes fail with
// ErrNotReplicated however few replicas the promoted one has, their
// replies too (what the old primary answered, acquired or not held, may
// not be what the promoted one has: the engine undoes or settles the call
// as one whose reply was lost), and a lock is not taken on both sides of
// a split brain. A call that waits for no replica (an undo, a cleanup)
// is judged the same way, without WAIT: its reply is believed only from
// a primary that has every replica it is counted with. Such a judgement
// is not enough for a read that decides (a latch's count): the old
// primary lists its promoted replica as online until its repl-timeout,
// and what it answers has writes no replica has. Such a read is a write
// (latch_count.lua writes a fence key), acknowledged as the changes are:
// WAIT then covers everything the read saw. And a copy of a request that
// replays its record writes it again, so that the WAIT after it covers
// the first run, wherever the copy's connection wrote last (WAIT waits
// for the offset of the connection's own last write). A primary with fewer
// replicas online than counted (a failover to a primary without replica,
// a replica gone) acknowledges a call all the same when the client waits
// for every replica (All) and all those online have it; such a batch
// waited for the timeout first.
//
// A replica that drops out of its primary's count while cut off (a
// partition longer than the primary's repl-timeout) can still be promoted
// by Sentinel or the Cluster, with only what it had when cut off; a write
// acknowledged by the replicas left would then be lost although its
// caller was told it was safe, and a renewal so acknowledged would extend
// a hold past what the promoted replica has. So the count waited for does
// not drop until a replica has been gone for Settings.Forget
// (DefaultForget, 5 minutes: about the longest a cut-off replica stays
// eligible with Sentinel's and the Cluster's defaults); until then WAIT
// times out and the writes are not acknowledged (sighting.want). A read
// that finds another replication id (a replica promoted, a primary
// restarted) counts that primary's replicas apart: the former primary's
// are not the new one's.
//
// Renewals (the watchdog's, package core) go through the pipeline as
// every state-changing script, with a Sync: one group-commit path and
// one NOSCRIPT fallback serve every state-changing script.
//
// One bound: a call's acknowledgement is bounded by the timeout from the
// call's start, WAITs of a re-sent call (NOSCRIPT) included, and the
// server is pinged at the timeout (an idle server notices WAIT's timeout
// only when it wakes up, every 1000/hz ms).
//
// # Exactly once, in batches
//
// Every state-changing script carries its request's id and deadline
// (package request, lua/prelude_request.lua): a copy of a request that ran
// returns the recorded result and changes nothing, a copy that arrives
// after its deadline or after its undo does nothing. A batch is only a
// way to send requests, so the argument holds call by call: a batch whose
// reply is lost (the connection broke after the server ran part or all of
// it) is sent again by go-redis with the same commands, the same requests
// (its retries), and each script that ran already replays its record; when
// the retries are spent every call of the batch gets the network error,
// and each caller's engine undoes or completes its own request as after a
// lost reply of a call sent alone. A call re-sent alone (NOSCRIPT, a
// redirection) is the same request too. A call whose caller has gone is
// still sent, at most as late as a request held up in the network, which
// its undo already covers.
//
// Glossary:
//   - call: one script call in a queue or a batch (call);
//   - batch: the calls sent together in one pipeline to one primary;
//   - sync: one call's replica acknowledgement (Sync);
//   - count: the number of replicas online on a primary (INFO replication lists
//     those), unknown until read;
//   - sighting: what the client read of one primary, known by its
//     replication id: the most replicas seen online, and since when fewer.
//
// It imports bg, errs and lua; package core gives each client one
// Pipeline.
package pipeline
