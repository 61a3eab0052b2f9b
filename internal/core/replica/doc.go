// Package replica waits for a write's replica acknowledgement (Redisson's
// checkLockSyncedSlaves).
//
// Redis replicates asynchronously: a write the primary acknowledged can be
// lost when the primary dies before a replica has it, and the promoted
// replica then knows nothing of it. So the acquisitions and releases of
// locks and semaphores wait, in the same round trip as their script and on
// the same connection, until the primary's replicas have the write: the
// script and WAIT <replicas> <timeout> go in one pipeline to the primary
// that runs the script (on a Cluster, the master of the keys' slot: WAIT
// has no key).
//
// The number of replicas of each primary follows the primary the scripts
// ran on, and is never read in a round trip of its own: the first batch
// on a primary reads it (ROLE, in the batch's pipeline) and waits for
// nothing, as WAIT must follow the writes on their connection and whether
// to send it is known only from the reply; every batch that waits reads
// it again after its WAIT, so that a primary with fewer replicas online
// than the client counted (a failover to a primary without replica, a
// replica gone) acknowledges a call all the same when it waits for every
// replica (All) and all of those online have it; a primary with none is
// read again in the background every replicaProbe. A failed read fails
// nothing.
//
// One bound: a call's acknowledgement is bounded by the timeout from the
// call's start, WAITs of a re-sent call (NOSCRIPT) included, and the
// server is woken at the timeout (an idle server notices WAIT's timeout
// only when it wakes up, every 1000/hz ms).
//
// Eval reports a write not acknowledged in time in Sync.Err, apart from
// the script's own result: the script did take effect on the primary. An
// acquisition then undoes what it took (its callers do), a release returns
// the error after its bookkeeping.
//
// Glossary:
//   - sync: one call's replica acknowledgement (Sync), asked for by the
//     engine on acquisitions and releases, never on undos and renewals;
//   - runner: what a typed script binding runs through (Runner): with a
//     Sync, the script and WAIT in one pipeline; without, the plain call;
//   - count: the number of replicas online on a primary (ROLE lists only
//     those), unknown until read.
//
// It imports bg, errs and lua; package core gives each client one
// Replicas.
package replica
