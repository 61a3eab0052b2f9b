// Package chaos is redisync's fault suite: several clients, each behind
// fault-injecting proxies of its own, run a seeded, randomized workload
// over every primitive while a seeded schedule injects faults; the
// recorded history is then checked.
//
// It lives in its own module so that porcupine stays out of the library's
// go.mod. It is run by TestChaos (chaos_test.go): "make test" runs a bounded
// pass (three short seeds on one server and one replicated seed with at
// least one failover; a Cluster seed with at least one failover and one
// slot migration; a netns seed, with a split brain), "make chaos SEED=…
// DURATION=…" a longer one in every topology (CHAOS_TOPOLOGY=single,
// replicated, cluster, netns, netcluster, a comma-separated list, both
// for single and replicated, or all, the default). The bounded pass has
// no netcluster seed: its one 20 s seed failed once in make test
// (FAULTS.md).
// FAULTS.md at the repository's root
// describes it for users.
//
// # Topologies
//
// Single (Config.Topology) is one redis-server. Replicated is a primary,
// one replica and one sentinel monitoring them (quorum 1, the harness's
// redistest.StartSentinel). Cluster is a Redis Cluster of three masters
// with one replica each (redistest.StartCluster), the workload's
// primitives spread over the three masters (see lockNames). Every data
// server runs with appendonly yes and
// appendfsync always, so a SIGKILL loses nothing the server acknowledged.
// The clients keep the library's default replica acknowledgement (every
// replica, 1s).
//
// Each client has its own proxy in front of each data server. In
// Replicated a client is go-redis's failover client, which asks the
// sentinel for the primary's address whenever it dials; its Dialer turns
// that address into the address of the client's proxy in front of that
// server. The servers keep their ports across restarts and failovers (the
// former primary comes back as the replica on its own port), so a client
// reaches whichever server is the primary through its own proxies, before
// and after a failover. The sentinel is dialled directly: the faults act
// on the data path. In Cluster a client is go-redis's ClusterClient, with
// its own proxy in front of each of the six nodes and the same Dialer, so
// it reaches every node through its proxies whatever it learnt the
// node's address from (CLUSTER SLOTS, MOVED, ASK), after failovers and
// migrations too; redisync's pub/sub is sharded (ShardedAuto, the
// default).
//
// Netns (netns.go, netlab.go) is a primary, a replica and three
// sentinels (quorum 2), each in a Linux network namespace of its own, and
// each client in its own, joined by a bridge in a hub namespace, with
// addresses of 10.77.0.0/24 that exist only in the lab's namespaces.
// The clients dial from their namespaces (nsDialer: setns on a locked
// thread that ends after the dial), so every client still runs in this
// process, on one monotonic clock. Faults are nftables rules in the hub
// (partitions between any two nodes, one-way ones, split brains, loss,
// duplication), signals, and the servers' wall clocks moved by a
// preloaded shim (clock.go, testdata/clockshim.c; every server's clock
// follows the primary's furthest behind before each fault, and a failover to a server
// whose clock is ahead of the old primary's beyond the library's margin
// counts with the faults no lock survives); the sentinels fail
// over by their own detection (down-after-milliseconds 2s). It needs
// root, ip and nft; without them it is skipped with a message (it fails
// when CI=true). Everything it creates goes with the lab's namespaces at
// the end.
//
// Netcluster (netcluster.go) is a Redis Cluster of three masters with one
// replica each, in the same lab: each of the six nodes in a namespace of
// its own, announcing its namespace address (cluster-announce-ip),
// with cluster-node-timeout 2s, cluster-replica-validity-factor 0 (a
// replica cut off for long may still be promoted) and
// cluster-require-full-coverage no (the other masters serve on while a
// slot range has no master); the Cluster is formed from the admin
// namespace (CLUSTER MEET, ADDSLOTSRANGE, REPLICATE). Each client is a
// go-redis ClusterClient dialling from its namespace (nsDialer), the
// admin client one dialling from the admin namespace, as in Cluster
// otherwise. Nothing forces a failover: the Cluster's own failure
// detection promotes a replica whose master the majority of the masters
// has not reached for the node timeout.
//
// # Workload
//
// Every worker (Config.Clients clients × Config.Workers goroutines, each
// goroutine an owner of its own, redisync.WithOwner) loops over randomly
// chosen operations: fenced holds of two rlock locks, an rlock fair lock
// (waiter timeout 1s) and an rlock spin lock that write a fenced
// register, holds of a multilock MultiLock of two more locks (each member
// recorded and judged as a lock of its own), admissions of a ratelimit
// Limiter (5 per second overall, checked by checkRate: never more within
// any window) and of a ratelimit GCRA (5 per second, burst 2: never more
// than the burst and one per 200ms within any window), rwlock read and
// write holds, counted and expirable semaphore acquisitions, and latch
// rounds (TrySetCount, CountDown, TryWait, Count). Half the expirable
// acquisitions take permits without a lease (Acquire(ctx, 0)), which
// never expire: only a release gives them back, so a failed release of
// theirs is sent again, as their holder must, until it gets an answer (at
// most three tries, each up to the release timeout). Half the lock holds and
// half the rwlock write holds are taken through handles of the worker's
// used without a context owner: fresh holds, each with an owner of its own
// and no record while it lasts (with the 8s lease of every third seed; see
// Config.Lease), handed on in-process between the client's callers; the
// fair lock's act for the handle's owner. Every call is
// recorded with its call and return times and its outcome; a call that
// failed with a network error is indeterminate.
//
// Beside those: the workers campaign in an election now and then (a
// Campaign bounded by 0.1 to 1.5 s), lead for a hold time and resign, and
// an observer on client 0 follows it with Observe (election.go); every
// holder of a lock of lockNames writes the lock's fenced value
// (fence.Value.Set) with its token when it has acquired it and again after
// its hold time, and reads it back (fences.go); three job schedulers, each
// with a Client of its own on one of the first three clients'
// connections, run a job at every tick of an interval of 500 ms, 750 ms
// or 1 s through gocronlock's Locker.ForInterval, and now and then one is
// killed while it runs the job (its Client closed, the lock left to its
// lease) and comes back later (sched.go).
//
// # Faults
//
// In both topologies: dropped replies (the primary ran the command, the
// client sees EOF), latency, partitions longer than the lock lease, stalls
// of open connections whose requests are delivered late (within the
// request record TTL; beyond it with Config.LateDelivery), cut
// connections (each of these on all the proxies of one client), SIGSTOP
// and SIGCONT of the primary (shorter than the sentinel's down-after),
// SIGKILL and restart of the primary (the AOF keeps the data; no
// failover), SCRIPT FLUSH and CLIENT KILL TYPE pubsub on the primary.
//
// In Single also the faults that make state vanish (statefaults.go): the
// server restarted without its data (SIGKILL, its RDB and AOF deleted,
// started empty), and memory pressure (the server runs with
// maxmemory-policy volatile-lru and no maxmemory; the fault sets a
// maxmemory just above the memory used and writes filler keys, so the
// keys with a TTL, the locks' among them, are evicted and writes refused
// with OOM, for 1.5 to 4 s). The semaphores are left idle across both and
// set again after them. The first cycle has a restart without data among
// its first three faults and memory pressure fourth or fifth.
//
// In Replicated also: failovers (SIGKILL of the primary, half the time
// while the replica is paused for 50 to 800ms, so that the acquisitions
// waiting for its acknowledgement fail at the kill while what they wrote
// reaches the promoted replica, for their undos to clean up; the sentinel
// promotes the replica at once, the former primary comes back as its
// replica; see redistest.Sentinel.KillMaster), a replica stalled (SIGSTOP
// for 0.7 to 3s, mostly longer than the acknowledgement timeout, so
// acquisitions fail with ErrNotReplicated, an error outcome), and a
// replica restarted empty (it copies the primary's data again). The first
// cycle of the schedule has its failover among its first three faults.
// A failover is injected only once the replica has been online for 2.5s:
// a client waits for the replicas it counts (read every second), and one
// that still counts none waits for nothing, so a failover right after the
// replica came back could lose what it acquired; the library promises no
// more than that.
//
// In Cluster, the server faults of Single act on a random master (a
// restart on a random node, master or replica, after which the suite
// waits for the cluster to be stable), and the cluster faults are: a
// master killed (SIGKILL, half the time while its replica is paused for
// 50 to 800ms) and its replica promoted at once (CLUSTER FAILOVER FORCE,
// the other masters voting; redistest.Cluster.KillMasterNow), the
// failover check reading the replica first for the primitives its master
// served, then the killed master restarted as the new master's replica;
// a planned CLUSTER FAILOVER on a random replica; the slot of a
// primitive that a worker holds (any, when none is held) migrated to
// another master while the workload runs (CLUSTER SETSLOT IMPORTING and
// MIGRATING, MIGRATE of its keys, SETSLOT NODE: the ASK and TRYAGAIN
// window; redistest.Cluster.MigrateSlot); a replica stalled (SIGSTOP for
// 0.7 to 3s). Failovers wait for a stable cluster and replicaSteady. The
// first cycle has a master kill among its first three faults and a
// migration fourth.
//
// In Netcluster, netns's faults act on a random master and its replica
// (net-partition cuts a client from all six nodes; net-oneway, loss and
// duplicate act between a client and the master; repl-cut and
// repl-oneway cut the master from its replica only, the cluster bus
// with the replication link; kill-primary kills the master, its replica
// is promoted after the node timeout and the master restarts from its
// AOF and nodes.conf, rejoining as a replica; net-sigstop stays shorter
// than the node timeout; the clock faults act on a random node), and
// three of its own: split-brain isolates the master with one or two
// clients from every other node and client until its replica is
// promoted, bus-oneway drops only the master's frames to the other
// nodes (it still hears them: its clients see nothing wrong until it
// learns of the promotion), minority cuts a master, its replica and
// one or two clients from the rest (no majority, so no promotion: the
// master refuses writes once it sees that it cannot reach the majority
// of the masters), and master-sigstop stops a master until its replica
// is promoted. For each, a watch polls the old master from the admin
// namespace and the fault's detail gives, per slot range, when it
// refused writes (cluster_state:fail, or the role of a replica), when
// the replica was promoted, and for how long two masters of that range
// could take writes. Before each of these and before a kill the suite
// waits replicaSteady; after every fault it heals the network and waits
// until every node says cluster_state:ok with every slot served, knows
// every node with none failing, and all agree on three masters each with
// an online replica (a failover counted for each new master).
//
// # Checks
//
//   - porcupine linearizability models for the lock, the read-write lock,
//     the counted and the expirable semaphore and the latch. A hold may end
//     only once its lease can have run out (acquisition call + lease) and
//     before its owner learnt of the loss; an indeterminate release may take
//     effect until the faults can no longer deliver it; indeterminate
//     acquisitions may have taken effect (a ghost hold only makes the real
//     system stricter than the model, so leaving them out is sound).
//   - what the clients believe (beliefs.go), whichever server told them:
//     for each lock, the interval from an acquisition's return to its
//     release call or to its Done closing must not overlap another
//     holder's by more than Config.BeliefMargin (a writer's not a
//     reader's either), and the permits believed held stay within the
//     total. It sees a split brain, which no read of one server can.
//   - fencing tokens unique and increasing in real-time order; the fenced
//     register rejects stale tokens (rejections are counted, not errors).
//   - at each failover, while the primary is dead and before the replica
//     is promoted, the replica holds everything the workers were told they
//     acquired: every hold and expirable permit they believe they have
//     (unless its lease may have run out), fencing counters at least the
//     highest token returned, counted permits within the total (see
//     failover.go). Calls that returned an error may be lost.
//   - a sampler reading the primary directly: never two owners in a lock hash nor
//     a writer beside readers; semaphore permits never above the total; no
//     hold or permit in Redis that no worker believes in (phantom) for
//     longer than a lease plus the longest fault.
//   - liveness once the faults stop: every blocking acquisition and latch
//     wait returns within the re-check interval (plus contention).
//   - permits: with nothing held, the expirable semaphore has every permit
//     back (none live, the no-lease ones included), and the counted one
//     all its permits. Every counted permit lost is a violation
//     (Config.PermitAccounting, PermitsAll): a failed acquisition's undo
//     and a failed release go on in the background until Redis answers,
//     and the client's ledger on the counted semaphore tells them whether
//     the request ran, however long the partition (past the request record
//     TTL included). make chaos STRICT_PERMITS=1 (PermitsStrict) lets
//     failed releases explain a loss (a finding naming them),
//     STRICT_PERMITS=0 (PermitsLoose) failed acquisitions as well.
//   - the election: never two live leaderships at once (the belief
//     check, on the leaderships' Done), terms unique and increasing in
//     real-time order, Observe delivering the leaders in term order and
//     every term won.
//   - the fences: a successful write or a read never carries a token
//     below one a successful write returned before it was called (a stale
//     token never overwrites a newer one); refused writes are counted.
//   - the jobs: at most one run per tick, and after a scheduler is killed
//     during a run the job runs again within two intervals and half a
//     second (judged when no fault acts on the servers or on every other
//     scheduler); ticks unrun and Locker.Unrun are reported.
//   - a restart without data: every hold it took is reported lost (Done
//     with ErrLockLost, or a release answering ErrNotHeld); no latch wait
//     that saw its latch set returns nil (a Wait on a latch set to 1
//     across each restart must return ErrStateLost); fencing tokens never
//     go back. Memory pressure: every hold whose key Redis reported
//     evicted is reported lost, naming eviction. What the other checks
//     find in their windows is counted apart (Report.Unsurvivable): no
//     Redis lock survives either fault.
//   - the foreign client (Config.Foreign): every Go call on its locks in
//     the history, none answering ErrWrongType.
//   - no keys left at the end beyond the documented ones (request records,
//     fencing counters, the semaphores' counts, and the fair lock's queue of
//     waiters whose leave was lost, each due to be dropped within the
//     waiter timeout); no goroutine leak (TestMain).
package chaos
