// Package wait is the waiting algorithm every redisync primitive shares:
// attempts (Attempt) separated by pauses, how those pauses are spent being
// a Strategy. PubSub sleeps until a message on a channel, the attempt's
// retry hint (capped by the client's re-check interval: messages can be
// lost), the end of the wait, ctx or Close; Lined does the same for the
// head of a client's local line, on the subscription the line hands along,
// and may be handed the lock in-process (Acceptor); Spin sleeps a growing,
// jittered pause and subscribes to nothing.
//
// Pub/sub is a wake-up hint, never the source of truth: subscribe, confirm,
// try again, then wait on message | retry hint | ctx. Attempts that fail on
// the way to Redis (transient) are made again after a growing pause for as
// long as the wait lasts.
//
// Glossary:
//   - attempt: one try at what a waiter waits for, which also says how
//     long until the condition may change by itself (the retry hint);
//   - bound: how long a wait lasts (Bound: forever, or at most Wait);
//   - retry hint: a holder's remaining lease (RetryAfterPTTL), the next
//     permit expiry; ≤ 0 means unknown, and the re-check interval applies.
//
// It imports pubsub and errs only; the lock engine (package core) and the
// semaphores and latch use it through core.Client.Waits.
package wait
