// Redisync shows redisync's distributed primitives at work, and lets
// operators see who holds a lock, semaphore or latch and free a stuck lock.
// It reads and writes Redisson 3.x's data layout, so it works on what Go
// services using redisync and Java services using Redisson hold.
//
// Usage:
//
//	redisync <command> [flags] [arguments]
//
// The commands are:
//
//	demo     show the primitives at work between simulated processes
//	inspect  show who holds a lock, semaphore or latch, and who waits
//	unlock   force-release a lock, fair lock or read-write lock and wake its waiters
//	version  print the module version, source revision and Go version
//
// Flags may come before or after the arguments, with one dash or two, and
// "redisync <command> -h" prints a command's usage. Errors go to stderr,
// prefixed "redisync: "; the exit status is 0 on success, 1 when the
// command failed and 2 when the command line was wrong.
//
// # The server
//
// Every command takes -redis URL: redis://[user:password@]host:port[/db],
// rediss:// for TLS, unix:///path/to.sock, with go-redis's query options
// (redis.ParseURL); a bare host:port is taken as redis://host:port. Without
// -redis, the REDIS_URL environment variable names the server. A server in
// cluster mode is detected (INFO cluster) and used through a cluster
// client, so names are found on whichever node owns them.
//
// A master that Redis Sentinel monitors is named by the sentinels:
//
//	redis-sentinel://[user:password@]host[:port][,host[:port]...]/master[/db][?options]
//
// The hosts are sentinels (port 26379 when left out), master is the name
// they monitor it under, db the database number (default 0). The command
// asks the sentinels where the master is and uses it through a go-redis
// failover client (redis.NewFailoverClient). user and password are the
// master's; the options sentinel_username and sentinel_password
// authenticate to the sentinels, and the other options are go-redis's
// (redis.ParseFailoverURL), dial_timeout for example. rediss-sentinel://
// uses TLS. For example:
//
//	redisync inspect -redis redis-sentinel://:secret@10.0.0.1:26379,10.0.0.2:26379/mymaster orders:42
//
// Passwords are hidden (xxxxx) wherever the command prints a URL.
//
// When the server does not answer within 5 s, or closes the connection,
// the command connects once more itself to say why: the address that
// refuses connections, a TLS handshake that a plaintext server never
// completes (use redis:// instead of rediss://), a TLS-only port that
// closes a plaintext connection (use rediss://), and through Sentinel
// which sentinels cannot be reached, which knows no such master, where
// the sentinels say the master is and whether it answers.
//
// # Demo
//
//	redisync demo [-redis URL] [-stats]
//
// Demo runs several simulated processes, each with its own connection and
// redisync Client (watchdog timeout 1.5 s, so renewals show), and narrates
// what they do, one line per event with the time since the start: workers
// contending for a lock while the watchdog renews the holder's lease, a
// holder that crashes and whose lock expires, readers and a writer on a
// read-write lock, a semaphore capping concurrency, an expirable
// semaphore's permit coming back after its holder crashed, a latch
// releasing a batch, and two locks taken together with a MultiLock. It
// checks the guarantees it shows (one holder at a time, never more jobs
// than permits), ends with a summary and exits 0 after about 15 s. With
// -stats it prints, before the summary, the processes' Client.Stats
// summed: acquisitions by result, lost holds, renewals, pub/sub reconnects.
//
// With neither -redis nor REDIS_URL it starts an embedded in-process Redis
// (github.com/alicebob/miniredis/v2, with its TTLs on the wall clock so
// leases really expire), so "go run ./cmd/redisync demo" needs nothing
// installed. On a real server its keys are named
// "redisync-demo:<random>:..." and deleted at the end.
//
// # Inspect
//
//	redisync inspect [-redis URL] [-json] [-type TYPE] NAME
//
// Inspect recognises the primitive stored under NAME from Redisson's
// layout and prints its state:
//
//   - a hash with a "mode" field (read or write) whose other fields are
//     owners is a read-write lock: its mode, the writer ("<owner>:write"
//     field) and the readers with their hold counts, and each read hold's
//     remaining lease (its {NAME}:<owner>:rwlock_timeout:<n> key);
//   - a hash whose fields are all owners is a lock: its owners with their
//     hold counts, its remaining lease, and the last fencing token issued
//     (redisson_lock_token:{NAME}) when there is one. An owner field is
//     "<client id>:<n>" (a redisync Client's ID or a Redisson UUID, a
//     colon, a decimal owner token or Java thread id) holding a hold
//     count, a positive integer;
//   - a lock (held or free) with a waiting queue redisson_lock_queue:{NAME}
//     or a waiter timeouts zset redisson_lock_timeout:{NAME} is a fair
//     lock: its holders as for a lock, then its queue head first, each
//     owner with the time left before its deadline (its score in the zset,
//     against the server's TIME). A live waiter pushes its deadline further
//     each time it re-checks; an owner whose deadline has passed is dead,
//     and is dropped by the next operation on the lock once it is at the
//     head of the queue (the scripts drop dead owners from the head only).
//     A fair lock nobody waits for looks like a lock; -type fair_lock shows
//     it as a fair lock, -type lock shows a fair lock without its queue;
//   - a string with a zset {NAME}:timeout is an expirable semaphore: the
//     available permits, and each acquired permit's id (32 hex characters)
//     and expiry;
//   - any other string holding an integer is a semaphore (available
//     permits) or a latch (count). Both are stored alike, so inspect decides
//     by which channel has waiters (redisson_sc:{NAME} or
//     redisson_countdownlatch__channel__{NAME}), and says "guessed"; a
//     negative value can only be a semaphore's. With no waiters, or
//     waiters on both channels, it says "latch or semaphore" (JSON type
//     latch_or_semaphore, with the value as both count and permits); -type
//     sets the type instead;
//   - a hash of rate, interval, type and perhaps keepAliveTime, all
//     integers, is a rate limiter's config (Redisson's RRateLimiter).
//
// A ratelimit.GCRA's key, a string holding an integer, is shown only with
// -type gcra: its theoretical arrival time (TAT, epoch µs, JSON "tat_us")
// and how long until then ("full_burst_in_ms"), which is when the limiter
// is back to a full burst. The key holds no limit (the handles have it),
// so inspect does not say when the next event is allowed: with burst B
// and emission interval T = period/rate, n events are allowed from
// TAT − (B − n)·T on. No key means an idle limiter with a full burst.
//
// Anything else is "not a redisync/Redisson primitive", and inspect says
// what it found (the hash's fields, the string's value, the Redis type)
// and exits with status 1: an application's hash such as a user profile
// is not shown as a held lock.
//
// Owners are printed as their client id (a redisync Client's ID or a
// Redisson instance's UUID) and owner token (a redisync owner token or a
// Java thread id). Waiters are the connections subscribed to the primitive's
// channel (PUBSUB NUMSUB): one per waiting client, however many of its
// goroutines or threads wait. A fair lock's waiters each listen on their
// own channel, redisson_lock__channel:{NAME}:<owner>, so for a fair lock
// Waiters adds up the subscribers of the queued owners' channels. On a
// Redis Cluster a subscription lives on one node, so inspect adds up the
// counts of every node.
//
// -json prints the Report as one JSON object, for scripts. Its "type" is
// one of lock, fair_lock, rwlock, semaphore, expirable_semaphore, latch,
// rate_limiter and gcra, the -type values, or none. A fair lock's has a "queue" array
// of QueueEntry, head first: owner, client_id, owner_token,
// deadline_ms_left and dead. When nothing is stored under NAME (no key, no
// permit zset, no fair lock queue, no fencing counter, no waiters) inspect
// says so ("nothing stored") and exits with status 0: a free lock, or a
// semaphore or latch never set, leaves no key, so that is an answer, not a
// failure; with -json it prints an object with "exists": false and
// "type": "none". Inspect only reads: the keys (a fair
// lock's queue and timeouts too) are read in one MULTI/EXEC, the read
// holds' leases and the waiters just after.
//
// # Version
//
//	redisync version
//
// Version prints the version of the redisync module the command was built
// from ("(devel)" when Go could not tell), the VCS revision and its time
// when the build recorded them, and the Go version and platform, all read
// from the binary's build information (runtime/debug.ReadBuildInfo).
//
// # Unlock
//
//	redisync unlock -force [-yes] [-any] [-redis URL] NAME
//
// Unlock frees the lock, fair lock or read-write lock NAME whoever holds
// it, with the library's ForceUnlock (rlock.Lock.ForceUnlock,
// rlock.FairLock.ForceUnlock, rwlock.RWLock.ForceUnlock): the hash (and a
// read-write lock's read-hold timeout keys) are deleted and the release is
// published on the lock's channel, so waiters, Go or Java, wake at once.
// A fair lock's release wakes only the owner whose turn it is: the dead
// owners at the head of its queue are dropped, the release is published on
// the channel of the owner then at the head, and the rest of the queue is
// left as it is. The output names the owner it woke (client id and owner
// token), as the queue read just before the unlock shows it. A holder learns of it when its watchdog next renews
// (redisync: Done closes with ErrLockLost) or when it unlocks (ErrNotHeld;
// Redisson: IllegalMonitorStateException).
//
// It shows the lock and asks for confirmation on stderr, reading "y" (or
// "yes") from stdin; any other answer leaves the lock alone and exits with
// status 1 ("not unlocked: confirmation declined"). -yes skips the
// question; without -yes, a stdin that is not a terminal (a pipe, a file,
// /dev/null) fails the command (status 1, nothing unlocked), so scripts
// must say -yes. -force is required.
//
// Unlock frees only a hash laid out as a lock or read-write lock (see
// Inspect). It refuses, and leaves intact, whatever is not a
// redisync/Redisson primitive (an application's hash, a list, a string
// that is not a count), and semaphores, latches and rate limiters, which
// have no holder to free. -any force-unlocks a hash of any other layout
// anyway, deleting it.
package main
