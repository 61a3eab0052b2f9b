// Package pubsub multiplexes the waiters of one redisync client over a
// single Redis pub/sub connection (in sharded mode on a Cluster, one per
// master). It is the engine's: the Client owns one Mux, and the
// primitives' packages and internal/core wait through it; applications
// need not import it (docs/architecture.md draws where it sits).
//
// Every primitive that waits (a lock, a semaphore, a latch) subscribes to its
// Redis channel through the client's Mux. A channel is subscribed when its
// first local waiter arrives and unsubscribed after its last one leaves, so
// 200 waiters on 50 locks share one connection and one subscription per lock.
// Subscribe returns only after Redis has confirmed the subscription: a waiter
// that re-checks its condition after Subscribe cannot miss a release that
// happens after the re-check.
//
// A subscription Redis refuses (NOPERM: an ACL user without SUBSCRIBE or
// SSUBSCRIBE, or without the channel) fails its Subscribe as soon as the
// refusal arrives, with an error that wraps Redis's reply and
// redisync.ErrNoPermission: Redis answers a connection's commands in order,
// so the refusal is the oldest unacknowledged subscription's.
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
// # Following the primary through Sentinel
//
// On a go-redis failover client (redis.NewFailoverClient) the classic
// connection follows the primary. After a planned failover (SENTINEL
// FAILOVER) the former primary stays a primary for about ten seconds after
// +switch-master, until Sentinel reconfigures it, and keeps the connection;
// go-redis sends the releases, and so their messages, to the new primary,
// and moves its command connections there but not a pub/sub connection.
// The Mux adds a go-redis dial hook to such a client (one per Mux, kept for
// the client's life; it only records the remote address of each dial) to
// learn where its classic connection and go-redis's command connections
// went, pings through the command connections every 500 ms while a classic
// channel is subscribed (go-redis dials the new primary after a switch),
// and when the two addresses differ replaces the classic connection by one
// go-redis dials to the primary: the re-subscriptions' acknowledgements
// wake every waiter to re-check. A release published right after the switch
// reaches its waiters within about half a second, instead of when Sentinel
// reconfigures the former primary or at the waiters' re-check. Other
// clients get no hook and no ping.
//
// # Sharded pub/sub on a Redis Cluster
//
// With Options.Sharded reporting true and a *redis.ClusterClient, channels
// are subscribed with SSUBSCRIBE on the master that serves their slot (the
// slot of the channel's hash tag, so a primitive's channel lives with its
// keys), over one connection per master: waiters on 1,000 locks of a
// 3-master cluster use 3 connections. Redis accepts one slot per SSUBSCRIBE,
// and go-redis re-subscribes all of a connection's channels in one command
// after a reconnect, so the Mux never lets go-redis reconnect a sharded
// connection: a lost connection, an unanswered ping or an error reply
// other than a redirect closes it, and its channels are subscribed again on
// the master the slot map then names, retrying with back-off while a
// failover is in progress. A channel is also subscribed again when Redis
// ends it (an sunsubscribe after its slot migrated), when its SSUBSCRIBE is
// answered with MOVED or ASK, and when the slot map, checked every second,
// names another master for its slot (Redis 7.0 keeps the subscribers of a
// master demoted by a failover). Each re-subscription wakes the channel's
// waiters to re-check.
//
// # Keyspace notifications
//
// Keyspace subscribes to the keyspace channel of one key
// (__keyspace@<db>__:<key>), whose deletions (del), expiries (expired) and
// evictions (evicted) it keeps for the waiter (Waiter.Events). Redis
// publishes a key's notifications only on the node that holds it, and
// only with notify-keyspace-events including K, g and x (or K and A), so
// Keyspace first reads that setting on the node (KeyspaceAuto; an answer
// kept 5 s per node) and fails with redisync.ErrKeyspaceEventsOff when the
// flags are off. On a single node or through Sentinel the channel goes on
// the classic connection; on a Cluster, on the connection to the master
// of the key's slot (the connection sharded channels use), with SUBSCRIBE,
// and the route loop moves it when the slot map names another master for
// the slot: unlike a sharded channel, Redis does not end a keyspace
// subscription when the slot leaves, so the move waits for the slot map
// check (every second; go-redis reloads its map every five, or at once
// after a MOVED). A slot migration itself deletes the key on the old
// master (MIGRATE), which publishes del there.
//
// There is one receive goroutine per connection, and in sharded mode one
// route goroutine, all started by Subscribe and stopped by Close; waiting
// costs no goroutine besides the caller's own.
package pubsub
