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
// count read again by every batch that waits for them (ROLE after WAIT).
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
	// seen is the most replicas read online within the last Forget, and
	// seenAt when that many were last read: a replica that dropped out
	// of the primary's count (cut off for longer than its repl-timeout)
	// is still waited for until it has been gone for Forget (want).
	seen   int
	seenAt time.Time
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
func (r *Replicas) count(p *primary, node *redis.Client) (n int, reread bool) {
	p.mu.Lock()
	now := time.Now()
	n = p.want(now, r.sync.Forget)
	due := now.After(p.next)
	if p.n == 0 && !p.reading && due {
		p.reading = r.bg.Background(replicaReadTimeout, func(ctx context.Context) { r.readReplicas(ctx, p, node) })
	}
	reread = n > 0 && (due || p.suspect)
	p.mu.Unlock()
	return n, reread
}

// want returns the count to wait for at now (p.mu held): the last count
// read, or more when more replicas were online within the last forget.
// A replica cut off from its primary for longer than the primary's
// repl-timeout drops out of the primary's count (ROLE, INFO) but can
// still be promoted by Sentinel or the Cluster, with only what it had
// when cut off; writes acknowledged by the replicas left would be lost
// then although their callers were told they were safe, and a renewal
// acknowledged so would extend a hold past what that replica has. So it
// is waited for (WAIT times out, the write is not acknowledged) until it
// has been gone for forget, the longest a replica cut off stays eligible
// for promotion with Sentinel's and the Cluster's defaults.
func (p *primary) want(now time.Time, forget time.Duration) int {
	if p.n == unknown || p.n >= p.seen || now.Sub(p.seenAt) > forget {
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

// set records a count read from the node that ran a batch. A read that
// follows an error saying that the client may reach another primary now
// (suspect: a failover) starts the replicas seen afresh: those of the
// former primary are not this one's.
func (p *primary) set(n int) {
	p.mu.Lock()
	p.setLocked(n, time.Now())
	p.mu.Unlock()
}

// setLocked is set with p.mu held, at now.
func (p *primary) setLocked(n int, now time.Time) {
	if n >= p.seen || p.suspect || p.n == unknown {
		p.seen, p.seenAt = n, now
	}
	p.n = n
	p.next = now.Add(replicaProbe)
	p.suspect = false
}

// Count returns the number of replicas online on the primary node (named
// addr: its address on a Cluster, "" for a client of one primary) as last
// read, without waiting: 0 while it is unknown, when it is read in the
// background. The error is always nil (kept for the watchdog's callers).
func (r *Replicas) Count(_ context.Context, node *redis.Client, addr string) (int, error) {
	p := r.primaries.get(addr)
	n, _ := r.count(p, node)
	if n != unknown {
		return n, nil
	}
	p.mu.Lock()
	if !p.reading {
		p.reading = r.bg.Background(replicaReadTimeout, func(ctx context.Context) { r.readReplicas(ctx, p, node) })
	}
	p.mu.Unlock()
	return 0, nil
}

// readReplicas reads the number of replicas of node again, in the
// background: an error keeps the last count.
func (r *Replicas) readReplicas(ctx context.Context, p *primary, node *redis.Client) {
	n, err := connectedReplicas(ctx, node)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reading = false
	p.next = time.Now().Add(replicaProbe)
	if err != nil && !errs.IsReply(err) {
		r.log.Debug("redisync: could not read the primary's replicas; keeping the last count", "err", err)
		return
	}
	// A server that refuses INFO replication (a Redis-compatible server
	// without replication) has no replica to wait for.
	suspect := p.suspect
	p.setLocked(n, time.Now())
	p.suspect = suspect // only a batch's read clears it
}

// connectedReplicas counts the replicas of INFO replication that are
// online: those still loading their first copy of the data set (a full
// synchronisation) cannot acknowledge anything yet, and are not counted
// until they can.
func connectedReplicas(ctx context.Context, node *redis.Client) (int, error) {
	info, err := node.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "slave"); ok && strings.Contains(rest, ":") &&
			strings.Contains(rest, "state=online") {
			if _, err := strconv.Atoi(rest[:strings.IndexByte(rest, ':')]); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// newRole returns a ROLE command, not sent: it reads the replicas of the
// node that runs a batch, in the batch's own pipeline.
func newRole(ctx context.Context) *redis.SliceCmd { return redis.NewSliceCmd(ctx, "role") }

// roleReplicas returns the number of online replicas in a ROLE reply (the
// server lists only those), and false when the reply is not a primary's
// (an error, a replica's): then nothing is learnt.
func roleReplicas(cmd *redis.SliceCmd) (int, bool) {
	v, err := cmd.Result()
	if err != nil || len(v) < 3 || v[0] != "master" {
		return 0, false
	}
	replicas, ok := v[2].([]any)
	return len(replicas), ok
}
