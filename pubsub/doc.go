// Package pubsub multiplexes the waiters of one redisync client over a
// single Redis pub/sub connection.
//
// Every primitive that waits (a lock, a semaphore, a latch) subscribes to its
// Redis channel through the client's Mux. A channel is subscribed when its
// first local waiter arrives and unsubscribed after its last one leaves, so
// 200 waiters on 50 locks share one connection and one subscription per lock.
// Subscribe returns only after Redis has confirmed the subscription: a waiter
// that re-checks its condition after Subscribe cannot miss a release that
// happens after the re-check.
//
// Messages are hints, never the source of truth. Each message wakes one, some
// or all of the channel's waiters, as the channel's Policy says (a lock
// release wakes one, a write release or a latch reaching zero wakes all, a
// semaphore release of n wakes up to n), oldest waiter first. A woken waiter
// re-checks in Redis. After a reconnect every waiter is woken to re-check,
// since messages may have been lost; the receive loop pings a silent
// connection and replaces it when the ping goes unanswered. Because
// messages can still be lost, every waiter in redisync also re-checks on a
// bounded fallback timer.
//
// There is one goroutine per Mux (the receive loop, started by the first
// Subscribe and stopped by Close); waiting costs no goroutine besides the
// caller's own.
package pubsub
