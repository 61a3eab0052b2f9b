// Package countdown is a distributed count-down latch on Redis, compatible
// with Redisson's RCountDownLatch: a coordinator sets a count, workers in any
// process count it down, and every waiter, in every process, returns the
// moment the count reaches zero.
//
//	latch := countdown.New(client, "batch:42")
//	latch.TrySetCount(ctx, 3) // coordinator: three workers to wait for
//	defer latch.CountDown(ctx) // each worker, when its part is done
//	latch.Wait(ctx)            // anyone: until all three counted down
//
// # Guarantees
//
//   - The count never goes below zero. CountDown on a latch that is not set
//     (never set, already open, deleted) does nothing and returns nil, as in
//     Redisson. A count-down that arrives before TrySetCount is lost, so set
//     the count before the workers start.
//   - A latch that is not set is open: its Count is 0, and Wait and TryWait
//     return at once. Set the count before the workers can finish; a latch
//     with no count set does not make anyone wait.
//   - TrySetCount sets the count only when the latch is not set; it never
//     resets a running latch. Delete opens the latch whatever its count.
//   - Every state-changing call (TrySetCount, CountDown, Delete) is applied
//     once even when go-redis re-sends it after a dropped connection: a
//     doubled count-down would open the latch early. Each call records its
//     result for a short while under a request key, and a re-sent call
//     returns the record.
//   - CountDown runs even when its ctx is already cancelled, on a detached
//     context with a bounded timeout: "defer latch.CountDown(ctx)" in a
//     worker whose request was cancelled still counts.
//   - Waiting is woken by pub/sub, never by polling: the message published
//     when the count reaches zero (or the latch is deleted) wakes every
//     waiter of every Client at once, and the waiters of one Client share
//     one subscription. Since a message can be lost (a reconnect, a
//     failover), every waiter also re-checks the count at least every recheck
//     interval of its Client (redisync.WithRecheckInterval, 5s by default),
//     where Redisson's await would hang forever. A Wait that ends because
//     its ctx ended returns an error wrapping ctx.Err() and leaves no
//     subscription behind.
//   - A waiter sees the latch open only if it is still open when the waiter
//     checks: a latch that reaches zero and is set again (TrySetCount) before
//     a waiter re-checks keeps that waiter waiting for the new round. Use a
//     new name per round when rounds follow each other closely.
//
// # Data layout
//
// The layout is Redisson 3.x's, so Go services and Java services using
// Redisson share latches:
//
//   - the string key name holds the count; it is deleted when the count
//     reaches zero, so an absent key is an open latch;
//   - the channel redisson_countdownlatch__channel__{name} carries "0" when
//     the count reaches zero and "1" when the count is set or the latch is
//     deleted;
//   - redisync's own request records, redisync_request:{name}:<id>, live a
//     few seconds (longer than go-redis may take to re-send a command).
//
// Unlike every other Redisson channel, the latch channel wraps the name in
// braces whatever the name holds. For a name that itself holds a hash tag
// ("batch{7}"), the channel then hashes to another Redis Cluster slot than
// the counter. redisync declares the channel to its scripts when it shares
// the counter's slot, and otherwise passes it as an argument (PUBLISH in a
// script needs no declared key), so such names work on a Cluster too.
// Subscribers on a Cluster receive the message whatever node they use.
// With sharded pub/sub (redisync.WithShardedPubSub, the default on a Redis 7
// Cluster) the message must be sent with SPUBLISH on the node that serves
// the channel's slot, which a script running on the counter's node cannot
// do: for such names the script publishes nothing and the latch sends the
// SPUBLISH itself right after the script, to the channel's node. The
// message is then not atomic with the change (a process dying in between
// loses it, and waiters notice on their next re-check), and it costs a
// second round trip. Redisson cannot use such names on a Cluster at all (it
// declares the channel as a key, and the script fails with CROSSSLOT), so
// no Java client shares them.
//
// A name whose braces form no hash tag ("a}b", "a{}b", "a{b") works too:
// the counter and redisync's request records share the name's slot, and
// the channel travels as an argument as above. Other primitives cannot
// use such names on a Cluster (the keys Redisson derives from them land in
// another slot: they refuse such names with an error wrapping
// redisync.ErrInvalidArgument; see the redisync package documentation);
// prefer plain names or a proper {tag}.
//
// # Redis versions
//
// Redis 6.2 or later (7.x is tested), single node, Sentinel or Cluster, as
// for the rest of redisync.
package countdown
