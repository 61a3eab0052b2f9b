// Package hold keeps a client's live holds and renews them: one Hold per
// owner and primitive (Key), from the acquisition that takes the owner's
// count from 0 to 1 to the release that takes it back to 0, or its loss;
// and the watchdog, one goroutine per client that runs only while there is
// something to renew, renewing every watchdog-held hold every third of
// its lease in one pipeline (at most MaxBatch holds per script call).
//
// The client is the authority over its own owners' hold counts: a hold's
// count is what the client counts, and the renewal scripts set it in
// Redis. A hold ends with ErrNotHeld after its final release, or with
// ErrLockLost when the watchdog finds it gone, no renewal succeeded for a
// whole lease, its fixed lease ran out, or the client closed.
//
// Glossary:
//   - hold: one owner's hold of one lock or side (Hold); redisync.Hold
//     shows it to users;
//   - renewal spec: how the watchdog renews a hold (RenewSpec), from the
//     hold's typed renewal binding;
//   - chain: the in-process handoffs that followed one hold taken from
//     Redis (Chain; core's handoff.go);
//   - through a line: a hold taken by a caller of a client's local line
//     (Through), whose end the line's head hears of (Observer.Ending).
//
// It imports errs, replica, lua and keys; package core
// gives each client one Holds and observes them (Observer).
package hold
