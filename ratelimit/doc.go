// Package ratelimit provides distributed rate limiters on Redis: Limiter,
// in the layout of Redisson's RRateLimiter so that Java and Go services
// share one budget, and GCRA, the generic cell rate algorithm with
// x/time/rate's shape, the one to choose for new Go code.
//
// A rate limiter bounds how many events happen per unit of time; a
// semaphore (package semaphore) bounds how many happen at once. They are
// different tools.
//
// # Which one
//
// GCRA keeps one small string per limiter whatever the rate and costs one
// short script per decision; it allows Burst events at once and then Rate
// per Period, exactly: over any window of length T at most
// Burst + Rate·T/Period events are allowed. Its Result carries what the
// HTTP RateLimit-Remaining and Retry-After headers need; Reserve takes a
// future slot that Cancel gives back; WaitN fails at once when its slot is
// past the context's deadline.
//
// Limiter is a sliding log: at most Rate permits in any window of
// Interval, each grant remembered for one Interval (a zset member per
// grant, up to Rate of them). Use it where Java services use Redisson's
// RRateLimiter on the same name, or where a window must hold no more than
// Rate with no burst allowance on top.
//
// # Guarantees
//
// Every decision is one Lua script, atomic in Redis, and reads the Redis
// server's clock (TIME), so the processes' clocks do not matter. Redisson
// scores grants and expires them with each Java client's own clock: a Java
// host whose clock is s ms off the server's sees grants expire up to s ms
// early or late, so a window can admit the grants of up to s ms beyond
// Rate. Keep Java hosts' clocks synchronised (NTP) when they share a
// Limiter with Go services. Redisson gives a grant back exactly Interval
// after it was made, the Go scripts one millisecond later: a window of
// Interval that includes both its ends holds at most Rate grants made by
// Go services, and one that leaves out its end at most Rate grants made
// by either side.
//
// A grant is never made twice: a state-changing request carries a request
// key and a deadline (internal/keys.Request, lua/prelude_request.lua), so
// a copy of it re-sent by go-redis after a lost reply returns the first
// one's result, and a copy arriving late is refused. A Limiter acquisition
// whose reply was lost is undone: its grant is removed if it took place,
// and it is marked cancelled otherwise. A GCRA reservation (Reserve,
// WaitN) is recorded the same way; an Allow is not, to cost no more than
// redis_rate's: an Allow re-sent after a lost reply may take twice, and
// the limiter then allows slightly fewer events, never more.
//
// Redis replicates asynchronously. With replica acknowledgement on
// (redisync.WithReplicaSync, the default) a grant is believed only once
// the primary's replicas have it (WAIT in the same round trip): a Limiter
// acquisition they did not acknowledge in time is undone and returns an
// error wrapping redisync.ErrNotReplicated; a GCRA Allow, Reserve or Wait
// returns that error too, and what it took stays taken on that primary (it
// only limits more). So neither a failover nor the old primary of a split
// brain admits more than the limit, unless a replica that acknowledged
// is lost as well. TrySetRate, SetRate and UpdateRate wait too (a lower
// rate lost in a failover would let the old one admit more) and return
// ErrNotReplicated when not acknowledged. Releases, undos and cancels are
// not waited for: one lost in a failover only limits more. With
// acknowledgement off, a failover can lose recent grants and admit more.
//
// # Waiting
//
// Redisson has no pub/sub for its rate limiter and this package adds none:
// when permits are short, the acquire script returns how long until the
// oldest grants that free enough of them expire. The callers of one
// redisync.Client waiting on one Limiter line up locally in arrival order;
// only the head asks Redis, sleeps that long on one timer, and asks again
// (at once when a Release goes through the same Client; a release by
// another process is noticed when the delay ends).
// Callers behind it send nothing and hold no timer. A wait that cannot
// succeed within its bound — TryAcquire's wait, or the context's deadline —
// returns as soon as Redis's answer shows it, for the head and for every
// caller behind it whose bound comes earlier, instead of sleeping it out as
// Redisson's tryAcquire does.
//
// # Key layout
//
// Limiter (Redisson 3.52's, byte for byte): a hash at the name with the
// fields rate, interval (ms), type (0 Overall, 1 PerClient) and
// keepAliveTime (ms, 0 when unset); for Overall the string {name}:value
// (permits left) and the zset {name}:permits; for PerClient the same with
// ":" and the client id appended ({name}:value:<id>, {name}:permits:<id>;
// the id is redisync.Client's, the one in lock fields). A zset member is
// one byte 16, 16 random bytes and the permits as a 4-byte little-endian
// unsigned integer (Redisson's struct.pack('Bc0I', ...)), scored by the
// grant time in epoch ms. redisync adds one key, the set {name}:clients
// of the ids of the clients that have PerClient keys, so that Delete can
// remove them all; Redisson ignores it, and Delete finds the Java clients'
// PerClient keys by a SCAN of the node holding the limiter's slot. ({name} is the name in braces, or
// the name itself when it holds a "{".)
//
// GCRA: one string at the name, the theoretical arrival time in epoch
// microseconds by the server's clock, which expires when reached.
//
// # Fixed Redisson 3.52 bugs
//
// A Java client beside a Go one still runs Redisson's scripts; the Go
// scripts repair what they leave:
//
//   - AvailablePermits is never above the rate (redisson #7329): a value
//     above it is set back to the rate minus the live grants.
//   - Release takes the released permits' grants out of the log, so they
//     are not given back twice and no recount throws them away
//     (redisson #7342); lost permits are restored from the log.
//   - An empty log with too few permits left is not a script error: the
//     budget is recounted from the (empty) log.
//   - A value key lost while grants live does not refill the budget to the
//     rate: it is recounted as the rate minus the live grants.
//
// Redis 6.2 or later; 7.x is tested.
package ratelimit
