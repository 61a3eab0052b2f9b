// Redisync shows redisync's distributed primitives at work, and lets
// operators see who holds a lock, semaphore or latch and who leads an
// election, free a stuck lock, and delete an election no service runs.
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
//	inspect  show who holds a lock, semaphore or latch, who leads an election, and who waits
//	unlock   force-release a lock, fair lock or read-write lock and wake its waiters
//	delete   delete an election's keys (its leader record, log, queue and term counter)
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
//     "<client id>:<owner token>" (a redisync Client's ID or a Redisson UUID, a
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
//     integers, is a rate limiter's config (Redisson's RRateLimiter);
//   - a name with a leader record {NAME}:leader (a hash) or its log
//     {NAME}:leaders (a list) is an election (package election), and so
//     is either of those two keys' own name: the leader (the value it
//     proclaimed, its term and since when) or, when nobody leads, the
//     last one; who holds its lock (a fair lock on NAME); its candidates,
//     next in turn first, with their deadlines as a fair lock's queue;
//     the last term issued; how many records the log keeps; each of its
//     keys with its expiry (only the lock has one); and how many clients
//     observe it (redisync_election:{NAME}). -type fair_lock shows its
//     lock alone.
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
// Waiters adds up the subscribers of the queued owners' channels. A lock's
// waiting redisync Clients queue in Redis (redisync_lock_waiters:{NAME})
// and each listens on its own channel (redisync_lock_wake:{NAME}:<client
// id>): inspect lists them, first first (a release wakes the first live
// one), says whether each still listens, and counts them, plus the other
// subscribers of the lock's channel (Redisson waiters). On a Redis
// Cluster a subscription lives on one node, so inspect adds up the counts
// of every node.
//
// -json prints the Report as one JSON object, for scripts. A lock's has a
// "waiting_clients" array of WaitingClient, first first: client_id,
// joined_ms_ago, alive_ms and listening. Its "type" is
// one of lock, fair_lock, rwlock, semaphore, expirable_semaphore, latch,
// rate_limiter, election and gcra, the -type values, or none. A fair
// lock's has a "queue" array of QueueEntry, head first: owner, client_id,
// owner_token, deadline_ms_left and dead; so has an election's, of its
// candidates, and an "election" object (ElectionReport): its leader
// record, whether it leads, the lock's holder, the records kept, its keys
// with their ttl_ms (-1: no expiry), its channel and observers. When nothing is stored under NAME (no key, no
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
// anyway, deleting it. An election's lock is unlocked as a fair lock: the
// leadership ends and the next candidate leads.
//
// # Delete
//
//	redisync delete [-force] [-yes] [-prefix P] [-redis URL] NAME
//
// Delete removes an election (package election) no service runs any
// more, with election.Election.Delete: the keys it keeps without an
// expiry, its leader record {NAME}:leader and log {NAME}:leaders, its
// candidates' queue redisson_lock_queue:{NAME} and deadlines
// redisson_lock_timeout:{NAME}, and its fencing counter
// redisson_lock_token:{NAME}. NAME may be the election's name, its
// record's or its log's. While its lock is held (by its leader, or by an
// owner that is no candidate) delete refuses, names the holder and
// changes nothing; -force deletes the lock too
// (election.Election.ForceDelete), and the leadership ends at the
// leader's next renewal. It shows the election and asks for confirmation
// as unlock does (-yes skips the question). Nothing stored under NAME is
// nothing to delete (status 0); another primitive is refused and left
// intact (status 1).
package main
