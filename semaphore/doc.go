// Package semaphore provides distributed semaphores on Redis, compatible
// with Redisson's RSemaphore (Semaphore) and RPermitExpirableSemaphore
// (ExpirableSemaphore): a number of permits shared by every process that
// uses the same Redis and name, to cap how many callers run at once across
// processes. A semaphore is not a rate limiter: it limits how many calls
// run at the same time, not how many start per second (a caller that
// releases at once lets the next one in at once).
//
// # Which one
//
// Semaphore counts permits and nothing else: any caller may Release, and
// permits held by a process that dies are lost until AddPermits puts them
// back. Release creates a semaphore that does not exist (with the permits
// released); ReleaseIfExists (Redisson 4.0's releaseIfExists) gives permits
// back only to one that exists, so a release after Delete changes nothing. ExpirableSemaphore gives every acquired permit an id and a lease:
// a permit not released within its lease returns by itself, so a crashed
// holder cannot shrink the semaphore for good. Use ExpirableSemaphore to
// limit work across processes, with a lease longer than the work takes
// (UpdateLease extends it).
//
// # Guarantees
//
// Every acquisition and release is one Lua script, atomic in Redis: however
// many processes compete, permits are only taken while available, so no more
// callers hold permits at once than there are permits. That holds as long as
// Redis keeps its data. Redis replicates asynchronously, so with replica
// acknowledgement on (redisync.WithReplicaSync, the default) every change
// of the permits is believed only once the primary's replicas have it (WAIT
// in the same round trip): an acquisition they did not acknowledge in time
// is undone and returns an error wrapping redisync.ErrNotReplicated;
// releases and undos are re-sent in the background until acknowledged (they
// apply once), so a failover loses neither; TrySetPermits, SetPermits,
// AddPermits, DrainPermits, UpdateLease and Delete return an error wrapping
// redisync.ErrNotReplicated when they ran on the primary but were not
// acknowledged: a failover may lose them; do not repeat AddPermits or
// DrainPermits blindly. With acknowledgement off, a failover can lose recent
// acquisitions or releases, as with any Redis lock. An expirable permit is a
// lease: when it runs out the permit is given to someone else whether or
// not its holder finished, so size leases with a margin (see UpdateLease).
//
// Expiry is decided by the Redis server's clock (the TIME command inside the
// scripts), not by the clocks of the processes, so hosts with skewed clocks
// still agree on when a permit expires. Redisson computes expiry with each
// Java client's clock: a Java and a Go process sharing an expirable
// semaphore agree as long as the Java hosts' clocks are close to the Redis
// server's.
//
// # Waiting
//
// A caller that must wait subscribes to the semaphore's channel, waits for
// Redis to confirm the subscription, tries again (a release in between was
// published to nobody), then sleeps until a release message, the nearest
// permit expiry (expirable semaphore), the Client's re-check interval
// (redisync.WithRecheckInterval: messages can be lost, and a lost message
// never hangs a waiter, unlike in Redisson), ctx, or Close. A release
// publishes the number of permits then available on the semaphore's
// channel, as Redisson's does.
//
// The callers of one Client waiting for one semaphore are served in arrival
// order, as in golang.org/x/sync/semaphore: only the first asks Redis, the
// others wait their turn without any Redis traffic, so a caller that needs
// several permits is not starved by a stream of callers that need one.
// TryAcquire with a zero wait does not overtake waiting callers. As in
// x/sync, a caller waiting for more permits than become available holds up
// the callers of its Client behind it: bound such waits with ctx or use
// TryAcquire.
//
// Between processes, a semaphore wakes one process
// per release instead of every waiting one (docs/wake.md): a Client whose
// caller waits listens on a channel of its own and joins the semaphore's
// queue of waiting Clients in Redis (redisync_semaphore_waiters:{name}).
// Release wakes the first live Client of the queue; an acquisition that
// leaves permits wakes the next, so a release of n permits lets up to n
// processes through one after the other; a Client that needs more permits
// than are available passes the wake-up on to the next, which may need
// fewer. The queue decides whom a release wakes, not who may take the
// permits: a caller that finds enough available takes them, queued or not.
// The Client first in the queue also listens on the semaphore's channel,
// where releases that know nothing of the queue publish (a Java client's,
// AddPermits, TrySetPermits, a permit's expiry), so Java services
// sharing the semaphore wake Go waiters and are woken by Go releases. The
// expirable semaphore (ExpirableSemaphore) of the same name shares the
// queue, as it shares the count: its waiters queue the same way, its
// releases wake the first queued Client, and a permit that expires wakes
// it through the semaphore's channel.
//
// A cancelled or timed-out acquisition holds nothing when it returns: no
// permit, no subscription, no goroutine, no place in the line. When its
// reply was lost (a broken connection, ctx ending while the script ran), it
// is undone in the background, re-sent until Redis answers.
//
// # Retries
//
// go-redis re-sends a command whose reply was lost on a broken connection.
// Every script that changes the counts records its result, so a re-sent
// acquisition does not take permits twice and a re-sent release
// (ReleaseIfExists too), AddPermits, TrySetPermits or DrainPermits does
// not apply twice. Release,
// of both kinds, runs on a context detached from the caller's
// cancellation, with a bounded timeout, so a deferred release runs after a
// cancelled request; a release whose reply is lost for good returns an
// error and goes on in the background until Redis answers (do not release
// again).
//
// The counted semaphore's acquisitions and releases are numbered in the
// client's ledger, which keeps their outcomes in Redis while the client
// may still ask (up to an hour): after an outage of any length, the undo
// of an acquisition and a lost release still learn whether their request
// ran, so no permit is lost or given back twice. The expirable
// semaphore's undo and release find permits by their random ids, which
// works however late they land.
//
// # Layout
//
// The keys are Redisson 3.x's, so Go and Java services share semaphores:
//
//	name               string: available permits (absent: 0; may be negative)
//	{name}:timeout     expirable only: zset of acquired permits, member = the
//	                   16 raw bytes of the id (shown as 32 hex characters),
//	                   score = expiry in epoch ms, 922337203685477 = never
//	redisson_sc:{name} channel: every release publishes the available count
//
// {name} is the name in braces unless it already contains "{", so all of a
// semaphore's keys share one Redis Cluster slot. Request records are kept
// under redisync_request:{name}:<request id> until a second past their
// request's deadline (46 s with go-redis's default timeouts), and each
// client's ledger on a counted semaphore under
// redisync_request:{name}:ledger:<client> (a hash of its requests in
// flight, expiring 70 minutes after its last request). On a
// Cluster, a name holding braces that do not form a hash tag ("a}b",
// "a{}b", "a{b") is refused (an error wrapping
// redisync.ErrInvalidArgument, before anything is sent): Redisson's layout
// then puts the channel and the zset in other slots than the count.
//
// # Redis versions
//
// Redis 6.2 or later (7.x is tested), single node, Sentinel or Cluster. The
// scripts also run on miniredis.
package semaphore
