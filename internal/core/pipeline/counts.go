package pipeline

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// replicaProbe is how often the number of replicas of a primary that had
// none is read again (in the background). A primary with replicas has its
// count read again by every batch that waits for them (INFO replication after WAIT).
const replicaProbe = time.Second

// replicaReadTimeout bounds one background reading of a primary's replica
// count (readReplicas).
const replicaReadTimeout = 5 * time.Second

// unknown is the count of a primary not read yet, or forgotten (forget).
const unknown = -1

// primary is what a client knows of one primary: how many replicas it has
// online (unknown until read), and its script queue. Its key is
// the node's address on a Cluster, "" for a client of one primary (a
// plain or a Sentinel client: whichever server the client reaches now).
type primary struct {
	mu      sync.Mutex
	n       int       // online replicas; unknown
	next    time.Time // when to read a count of 0 again
	reading bool      // a background read is under way
	// seen is the most replicas read online, and since when fewer have
	// been read (the zero time while as many are): a replica that dropped
	// out of the primary's count (cut off for longer than its
	// repl-timeout) is still waited for until it has been missing for
	// Forget (want).
	seen  int
	since time.Time
	id    string // the primary's replication id (master_replid) when seen was read
	// suspect: a batch's error said that the client may reach another
	// primary now (suspectAfter): the next batch that waits reads again.
	suspect bool
	queue   queue // its script queue (pipeline.go)
}

// primaries keeps the primaries of a client by key.
type primaries struct {
	mu sync.RWMutex
	m  map[string]*primary
}

// get returns the primary of key, made on first use.
func (ps *primaries) get(key string) *primary {
	ps.mu.RLock()
	p := ps.m[key]
	ps.mu.RUnlock()
	if p != nil {
		return p
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p = ps.m[key]; p == nil {
		if ps.m == nil {
			ps.m = make(map[string]*primary)
		}
		p = &primary{n: unknown}
		ps.m[key] = p
	}
	return p
}

// count returns the count a batch waits for (want: the last count read,
// or the replicas seen within the last Forget; unknown if none), and
// whether a batch that waits for replicas should read it again after its
// WAIT (reread: every replicaProbe, or when suspect); it starts a
// background read of a count of 0 that is due (a replica attached since).
func (ac *acks) count(p *primary, node *redis.Client) (n int, reread bool) {
	p.mu.Lock()
	now := time.Now()
	n = p.want(now, ac.sync.Forget)
	due := now.After(p.next)
	if p.n == 0 && !p.reading && due {
		p.reading = ac.bg.Background(replicaReadTimeout, func(ctx context.Context) { ac.readReplicas(ctx, p, node) })
	}
	reread = n > 0 && (due || p.suspect)
	p.mu.Unlock()
	return n, reread
}

// want returns the count to wait for at now (p.mu held): the last count
// read, or more when more replicas were online within the last forget.
// A replica cut off from its primary for longer than the primary's
// repl-timeout drops out of the primary's count (ROLE, INFO replication) but can
// still be promoted by Sentinel or the Cluster, with only what it had
// when cut off; writes acknowledged by the replicas left would be lost
// then although their callers were told they were safe, and a renewal
// acknowledged so would extend a hold past what that replica has. So it
// is waited for (WAIT times out, the write is not acknowledged) until it
// has been gone for forget, the longest a replica cut off stays eligible
// for promotion with Sentinel's and the Cluster's defaults.
func (p *primary) want(now time.Time, forget time.Duration) int {
	if p.n == unknown || p.n >= p.seen {
		return p.n
	}
	if now.Sub(p.since) > forget {
		p.seen, p.since = p.n, time.Time{} // gone for good
		return p.n
	}
	return p.seen
}

// suspectAfter marks p suspect when a call's reply says that the client
// may reach another primary now (a network error, READONLY, LOADING, a
// redirection): a failover, after which the count may be another
// primary's.
func (p *primary) suspectAfter(calls []*call) {
	for _, c := range calls {
		if err := c.reply.Err(); err != nil && (!errs.IsReply(err) || errs.NotRun(err)) {
			p.mu.Lock()
			p.suspect = true
			p.mu.Unlock()
			return
		}
	}
}

// set records a count read from the node that ran a batch, whose
// replication id (master_replid) is id. Another id is another primary (a
// replica promoted, a primary restarted): the replicas seen start afresh,
// since the former primary's are not this one's.
func (p *primary) set(n int, id string) {
	p.mu.Lock()
	p.setLocked(n, id, time.Now())
	p.mu.Unlock()
}

// setLocked is set with p.mu held, at now.
func (p *primary) setLocked(n int, id string, now time.Time) {
	switch {
	case n >= p.seen || p.n == unknown || id != p.id:
		p.seen, p.since, p.id = n, time.Time{}, id
	case p.since.IsZero():
		p.since = now // fewer than seen, first read so
	}
	p.n = n
	p.next = now.Add(replicaProbe)
	p.suspect = false
}

// readReplicas reads the number of replicas of node again, in the
// background: an error keeps the last count.
func (ac *acks) readReplicas(ctx context.Context, p *primary, node *redis.Client) {
	info := newRole(ctx)
	_ = node.Process(ctx, info)
	n, id, ok := roleReplicas(info)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reading = false
	p.next = time.Now().Add(replicaProbe)
	err := info.Err()
	if err != nil && !errs.IsReply(err) {
		ac.log.Debug("redisync: could not read the primary's replicas; keeping the last count", "err", err)
		return
	}
	if !ok {
		// A server that refuses INFO replication (a Redis-compatible
		// server without replication), or a replica, has no replica to
		// wait for.
		n, id = 0, p.id
	}
	suspect := p.suspect
	p.setLocked(n, id, time.Now())
	p.suspect = suspect // only a batch's read clears it
}

// newRole returns an INFO replication command, not sent: it reads the
// role, the online replicas and the replication id of the node that runs
// a batch, in the batch's own pipeline.
func newRole(ctx context.Context) *redis.StringCmd {
	return redis.NewStringCmd(ctx, "info", "replication")
}

// roleReplicas returns the number of online replicas in an INFO
// replication reply (those still loading their first copy of the data
// set, a full synchronisation, cannot acknowledge anything yet, and are
// not counted until they can) and the primary's replication id
// (master_replid), and false when the reply is not a primary's (an error,
// a replica's): then nothing is learnt.
func roleReplicas(cmd *redis.StringCmd) (n int, id string, ok bool) {
	info, err := cmd.Result()
	if err != nil {
		return 0, "", false
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, found := strings.CutPrefix(line, "role:"); found {
			ok = v == "master"
		} else if v, found := strings.CutPrefix(line, "master_replid:"); found {
			id = v
		} else if rest, found := strings.CutPrefix(line, "slave"); found && strings.Contains(rest, ":") &&
			strings.Contains(rest, "state=online") {
			if _, err := strconv.Atoi(rest[:strings.IndexByte(rest, ':')]); err == nil {
				n++
			}
		}
	}
	return n, id, ok
}
