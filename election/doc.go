// Package election is a leader election on Redis, in the shape of etcd's
// concurrency.Election: candidates Campaign and block until they lead;
// the leader has a Leadership whose Context ends the moment it stops
// leading, a term (a fencing token larger than every earlier leader's),
// Proclaim and Resign; anyone reads the Leader or Observes each change.
//
//	e := election.New(client, "billing-scheduler")
//	l, err := e.Campaign(ctx, "host-a:8080")
//	if err != nil { ... }
//	defer l.Resign(context.Background())
//	runLeaderWork(l.Context(), l.Term()) // stops when the leadership ends
//
// # How it works
//
// The leader is the holder of a fenced fair lock (rlock.NewFair with
// rlock.WithFencing) in Redisson's layout on the election's name: the
// hash name, the fencing counter redisson_lock_token:{name}, the queue
// redisson_lock_queue:{name} and redisson_lock_timeout:{name}. So
// candidates are served in the order they campaigned, across processes;
// each is woken through pub/sub when its turn comes, never by polling;
// and a Java service holding a Redisson RLock or RFencedLock on the same
// name excludes Go candidates, and the reverse. The term is the fencing
// token the leader's acquisition took.
//
// The leader's value, term and the time its term began are a record in
// the hash {name}:leader, written by a script only while the writer still
// holds the lock and never over a later term's record, so a stale leader
// (its lease ran out during a pause) cannot overwrite a newer one. Each
// record also goes to the list {name}:leaders (the latest 64) and its
// sequence number is published on redisync_election:{name}, where
// observers are woken. Every key and the channel share the name's hash
// tag, hence its slot on a Cluster.
//
// # Keys
//
// Only the lock has an expiry, its lease. The other keys are kept without
// one, as Redisson keeps a fair lock's: the leader record and its log
// (small; the next leader's record overwrites the one and joins the
// other, and Leader and observers read the last leader there), the
// fencing counter (terms must keep growing from one leadership to the
// next), and the queue and its deadlines (they empty as candidates are
// served or give up). A candidate whose process died while it waited
// leaves its place in the queue until its deadline (the waiter timeout,
// 5s, after its last re-check) has passed and it is at the head: the
// next candidate's attempt, or the leader's release, drops it then, and
// the next live candidate is served. Inspect shows all of it, a dead
// candidate flagged; Delete removes the keys of an election no service
// runs any more (refused while someone leads; ForceDelete ends the
// leadership too). The command redisync (cmd/redisync) does both from
// the shell: "redisync inspect NAME", "redisync delete NAME".
//
// # Failures
//
// A leadership is a lease: WithLease, else the Client's watchdog
// timeout (redisync.WithWatchdogTimeout, 30s by default), renewed every
// third of it by the Client's watchdog. When the leader's process dies,
// or is cut off from Redis, the lock expires within the lease and the
// next candidate in the queue takes over at its next re-check (at the
// latest a third of the queue's waiter timeout, 5s by default, after the
// expiry). A leader that cannot renew sees its Context end by its own
// clock before the lease can run out in Redis, so two leaders' Contexts
// are never live at once: the leadership ends with its lock hold, by the
// rule of every watchdog-renewed hold (the lease, counted from the last
// write Redis and its replicas acknowledged, less a margin for the
// clocks), whether or not a renewal is still on its way. A leader stalled
// longer than that (a stopped process) may still write after the next
// leader took over, which is what the term is for: have the resources the
// leader writes to refuse a term lower than one they have seen.
// Resign hands over at once: the next candidate is woken by the release.
//
// With replica acknowledgement on (redisync.WithReplicaSync, on by
// default), a candidate wins only once its lock is on the replicas; a
// win not acknowledged in time is undone and the candidate campaigns
// again, so a Sentinel or Cluster failover does not elect a second leader
// from a lost write.
//
// See docs/election.md in the repository for the measured takeover
// times and a comparison with etcd's election.
package election
