// Package bg is a client's background work and its end: the goroutines
// that Close waits for (undos, settles, clock readings, a fair-lock
// waiter's queue leave), the closing signal that ends waits and
// renewals, and the detached contexts on which releases and clean-ups
// run after their caller's context ended.
//
// Glossary:
//   - closing: closed when the client's Close starts (Group.Close);
//   - finish: background work that Close lets go on for CloseGrace;
//   - detached context: a caller's values without its cancellation,
//     bounded by ReleaseTimeout (Group.Detached).
//
// It imports nothing of redisync.
package bg
