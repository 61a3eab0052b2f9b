package pipeline

import (
	"context"
	"slices"
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

// unknown is the count of a primary not read yet: never read, or every
// read failed.
const unknown = -1

// primary is what a client knows of one primary: how many replicas it has
// online (unknown until read), and its script queue. Its key is
// the node's address on a Cluster, "" for a client of one primary (a
// plain or a Sentinel client: whichever server the client reaches now).
type primary struct {
	mu      sync.Mutex
	n       int       // online replicas of the primary read last (id); unknown
	next    time.Time // when to read a count of 0 again
	reading bool      // a background read is under way
	// id is the replication id (master_replid) of the primary read last:
	// the server whose count n is, and the one a batch expects to run on.
	id string
	// ids keeps, per replication id, what the client read of that primary
	// (sighting): a client that can reach two primaries (a Sentinel
	// client whose connections straddle a failover, the old primary
	// back from a partition before the sentinels demote it) holds each
	// to its own replicas, so a batch that ran on the other one is
	// judged by what that one had (verify).
	ids   map[string]*sighting
	queue queue // its script queue (pipeline.go)
}

// sighting is what the client read of one primary (one replication id):
// the most replicas read online, and since when fewer have been read
// (the zero time while as many are): a replica that dropped out of the
// primary's count (cut off for longer than its repl-timeout) is still
// waited for until it has been missing for Forget (want); last is when
// the primary was read last, and a sighting not read for Forget is
// dropped.
type sighting struct {
	seen  int
	since time.Time
	last  time.Time
}

// maxSightings bounds the replication ids a primary keeps (a primary
// restarted or failed over many times within Forget).
const maxSightings = 16

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
// or the replicas seen within the last Forget; unknown if none), the
// replication id it is of, and whether the batch must read the INFO
// replication of the primary that runs it after its writes (verify: every batch with a call that waits for
// replicas, once this primary has had a replica within Forget; see
// verify); it starts a background read of a count of 0 that is due (a
// replica attached since).
func (ac *acks) count(p *primary, node *redis.Client) (n int, id string, verify bool) {
	p.mu.Lock()
	now := time.Now()
	n = p.want(now, ac.sync.Forget)
	if p.n == 0 && !p.reading && now.After(p.next) {
		p.reading = ac.bg.Background(replicaReadTimeout, func(ctx context.Context) { ac.readReplicas(ctx, p, node) })
	}
	id, verify = p.id, p.hadReplicas(now, ac.sync.Forget)
	p.mu.Unlock()
	return n, id, verify
}

// want returns the count to wait for at now (p.mu held) on the primary
// read last: the last count read, or more when more replicas were online
// within the last forget (sighting.want).
func (p *primary) want(now time.Time, forget time.Duration) int {
	if p.n == unknown {
		return unknown
	}
	return p.ids[p.id].want(p.n, now, forget)
}

// want returns the count to wait for at now on a primary with n replicas
// online now.
// A replica cut off from its primary for longer than the primary's
// repl-timeout drops out of the primary's count (ROLE, INFO replication) but can
// still be promoted by Sentinel or the Cluster, with only what it had
// when cut off; writes acknowledged by the replicas left would be lost
// then although their callers were told they were safe, and a renewal
// acknowledged so would extend a hold past what that replica has. So it
// is waited for (WAIT times out, the write is not acknowledged) until it
// has been gone for forget, the longest a replica cut off stays eligible
// for promotion with Sentinel's and the Cluster's defaults.
func (s *sighting) want(n int, now time.Time, forget time.Duration) int {
	if s == nil || n >= s.seen {
		return n
	}
	if now.Sub(s.since) > forget {
		s.seen, s.since = n, time.Time{} // gone for good
		return n
	}
	return s.seen
}

// hadReplicas reports (p.mu held) whether a primary the client read
// within the last forget had a replica: then a batch's acknowledgement
// is only believed once the batch is known to have run on the primary
// its count is of (verify).
func (p *primary) hadReplicas(now time.Time, forget time.Duration) bool {
	for _, s := range p.ids {
		if s.seen > 0 && now.Sub(s.last) <= forget {
			return true
		}
	}
	return false
}

// set records a count read from the node that ran a batch, whose
// replication id (master_replid) is id. Another id is another primary (a
// replica promoted, a primary restarted, or the other of two primaries
// the client reaches): its replicas are counted apart, since the former
// primary's are not this one's.
func (p *primary) set(n int, id string) {
	p.mu.Lock()
	p.setLocked(n, id, time.Now())
	p.mu.Unlock()
}

// setLocked is set with p.mu held, at now.
func (p *primary) setLocked(n int, id string, now time.Time) {
	s := p.ids[id]
	if s == nil {
		p.prune()
		if p.ids == nil {
			p.ids = make(map[string]*sighting)
		}
		s = &sighting{seen: n}
		p.ids[id] = s
	}
	switch {
	case n >= s.seen:
		s.seen, s.since = n, time.Time{}
	case s.since.IsZero():
		s.since = now // fewer than seen, first read so
	}
	s.last = now
	p.n, p.id = n, id
	p.next = now.Add(replicaProbe)
}

// prune drops the oldest sighting when maxSightings are kept (p.mu held).
func (p *primary) prune() {
	if len(p.ids) < maxSightings {
		return
	}
	oldest := ""
	for id, s := range p.ids {
		if oldest == "" || s.last.Before(p.ids[oldest].last) {
			oldest = id
		}
	}
	delete(p.ids, oldest)
}

// judge returns the count a batch that ran on the primary of replication
// id must have had acknowledged (p.mu not held): that primary's own
// (want), which is not the count the batch waited for when the client
// expected another primary.
func (p *primary) judge(id string, n int, forget time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[id].want(n, time.Now(), forget)
}

// readReplicas reads the number of replicas of node again, in the
// background: an error keeps the last count.
func (ac *acks) readReplicas(ctx context.Context, p *primary, node *redis.Client) {
	info := newInfoReplication(ctx)
	_ = node.Process(ctx, info)
	n, id, ok := parseReplication(info)
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
	p.setLocked(n, id, time.Now())
}

// newInfoReplication returns an INFO replication command, not sent: it
// reads the role, the online replicas and the replication id of a node
// (parseReplication), alone or in a batch's own pipeline.
func newInfoReplication(ctx context.Context) *redis.StringCmd {
	return redis.NewStringCmd(ctx, "info", "replication")
}

// parseReplication returns the number of online replicas in an INFO
// replication reply (those still loading their first copy of the data
// set, a full synchronisation, cannot acknowledge anything yet, and are
// not counted until they can) and the primary's replication id
// (master_replid), and false when the reply is not a primary's (an error,
// a replica's): then nothing is learnt.
//
// A replica is counted once by its address (ip and port): one that
// reconnects after a short cut while the primary still lists its old
// link (until the primary's repl-timeout drops it) is listed twice, both
// online, and counting it twice would make the client wait, for Forget,
// for a second replica that does not exist (WAIT then never has it, and
// every write on that primary fails with ErrNotReplicated).
func parseReplication(cmd *redis.StringCmd) (n int, id string, ok bool) {
	info, err := cmd.Result()
	if err != nil {
		return 0, "", false
	}
	var seen []string // the online replicas' addresses: a few
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, found := strings.CutPrefix(line, "role:"); found {
			ok = v == "master"
		} else if v, found := strings.CutPrefix(line, "master_replid:"); found {
			id = v
		} else if addr, online := replicaLine(line); online && !slices.Contains(seen, addr) {
			seen = append(seen, addr)
		}
	}
	return len(seen), id, ok
}

// replicaLine parses one replica's line of INFO replication
// ("slave0:ip=10.0.0.2,port=6379,state=online,offset=…,lag=0"): the
// replica's address ("ip:port") and whether it is online. A line that is
// no replica's gives ("", false).
func replicaLine(line string) (addr string, online bool) {
	rest, found := strings.CutPrefix(line, "slave")
	i := strings.IndexByte(rest, ':')
	if !found || i < 0 {
		return "", false
	}
	if _, err := strconv.Atoi(rest[:i]); err != nil {
		return "", false
	}
	var ip, port string
	for _, kv := range strings.Split(rest[i+1:], ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			ip = v
		case "port":
			port = v
		case "state":
			online = v == "online"
		}
	}
	return ip + ":" + port, online
}
