// Package chaos is redisync's fault suite: several clients, each behind its
// own fault-injecting proxy, run a seeded, randomized workload over every
// primitive against one redis-server (appendonly yes, appendfsync always)
// while a seeded schedule injects faults; the recorded history is then
// checked.
//
// It lives in its own module so that porcupine stays out of the library's
// go.mod. It is run by TestChaos (chaos_test.go): "make test" runs a bounded
// pass (a few short seeds), "make chaos SEED=… DURATION=…" a longer one.
//
// # Workload
//
// Every worker (Config.Clients clients × Config.Workers goroutines, each
// goroutine an owner of its own, redisync.WithOwner) loops over randomly
// chosen operations: fenced holds of two rlock locks and of an rlock fair
// lock (waiter timeout 1s) that write a fenced register, rwlock read and
// write holds, counted and expirable semaphore acquisitions, and latch
// rounds (TrySetCount, CountDown, TryWait, Count). Half the lock holds and
// half the rwlock write holds are taken through handles of the worker's
// used without a context owner: fresh holds, each with an owner of its own
// and no record while it lasts (with the 8s lease of every third seed; see
// Config.Lease), handed on in-process between the client's callers; the
// fair lock's act for the handle's owner. Every call is
// recorded with its call and return times and its outcome; a call that
// failed with a network error is indeterminate.
//
// # Faults
//
// Dropped replies (the server ran the command, the client sees EOF),
// latency, partitions longer than the lock lease, stalls of open
// connections whose requests are delivered late (within the request record
// TTL; beyond it with Config.LateDelivery), cut connections, SIGSTOP and
// SIGCONT of the server, SIGKILL and restart (the AOF keeps the data),
// SCRIPT FLUSH and CLIENT KILL TYPE pubsub.
//
// # Checks
//
//   - porcupine linearizability models for the lock, the read-write lock,
//     the counted and the expirable semaphore and the latch. A hold may end
//     only once its lease can have run out (acquisition call + lease) and
//     before its owner learnt of the loss; an indeterminate release may take
//     effect until the faults can no longer deliver it; indeterminate
//     acquisitions may have taken effect (a ghost hold only makes the real
//     system stricter than the model, so leaving them out is sound).
//   - fencing tokens unique and increasing in real-time order; the fenced
//     register rejects stale tokens (rejections are counted, not errors).
//   - a sampler reading Redis directly: never two owners in a lock hash nor
//     a writer beside readers; semaphore permits never above the total; no
//     hold or permit in Redis that no worker believes in (phantom) for
//     longer than a lease plus the longest fault.
//   - liveness once the faults stop: every blocking acquisition and latch
//     wait returns within the re-check interval (plus contention).
//   - no keys left at the end beyond the documented ones (request records,
//     fencing counters, the semaphores' counts, and the fair lock's queue of
//     waiters whose leave was lost, each due to be dropped within the
//     waiter timeout); no goroutine leak (TestMain).
package chaos
