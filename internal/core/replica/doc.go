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
// has no key). When the primary has no replica connected nothing is
// waited for and nothing extra is sent; the number of replicas of each
// primary is read with INFO replication the first time and kept, read
// again in the background every replicaProbe.
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
//     Sync, the script and WAIT in one pipeline; without, the plain call.
//
// It imports bg, errs and lua; package core gives each client one
// Replicas.
package replica
