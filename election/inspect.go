package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/layout"
)

// Info is a snapshot of an election as Redis holds it, for operators:
// who leads, who waits, and which keys the election keeps. Inspect reads
// it in one round trip.
type Info struct {
	// Leader is the latest leader record: the current leader's when
	// Leading, else the last leader's (its value, term and start); the
	// zero Leader when no record exists.
	Leader Leader
	// Leading reports whether Leader still leads: the owner that wrote
	// the record holds the election's lock.
	Leading bool
	// Owner is the owner that wrote the latest record, "<client id>:<owner
	// token>", as its field in the lock hash; "" without a record.
	Owner string
	// Holder is the owner holding the election's lock; "" when it is
	// free. A Holder that is not Owner is an owner that is no candidate
	// (a Redisson RLock on the election's name), or a candidate that has
	// just won and not yet written its record.
	Holder string
	// TTL is the lock's remaining lease; 0 when it is free.
	TTL time.Duration
	// LastTerm is the fencing counter: the latest term issued, which the
	// next leader's term exceeds; 0 when the counter does not exist.
	LastTerm int64
	// Candidates are the candidates waiting for their turn, the next in
	// turn first (the fair lock's queue), dead ones not yet dropped
	// included.
	Candidates []Candidate
	// Records is how many leader records the log ({name}:leaders) keeps.
	Records int64
	// Keys are the election's keys that exist, with their expiry; see
	// Key.
	Keys []Key
}

// Candidate is one candidate waiting in an election's queue.
type Candidate struct {
	// Owner is the candidate, "<client id>:<owner token>".
	Owner string
	// Deadline is how long the candidate's place has left, by the
	// server's clock: a live candidate pushes it further (by the queue's
	// waiter timeout, 5s) at each of its re-checks. Zero or less: its
	// process stopped re-checking (it died or was cut off); it is dropped
	// from the queue once it is at its head, by the next candidate's
	// attempt or the leader's release, and Delete removes it.
	Deadline time.Duration
}

// Dead reports whether the candidate's deadline has passed.
func (c Candidate) Dead() bool { return c.Deadline <= 0 }

// Key is one key of an election.
type Key struct {
	// Name is the key, in Redis (after the Client's key prefix).
	Name string
	// Type is its Redis type: hash, list, zset or string.
	Type string
	// TTL is its remaining time to live; -1ns when it has none. Only
	// the lock has one, its lease: the other keys stay until Delete (see
	// the package documentation, "Keys").
	TTL time.Duration
}

// Inspect reads the election's state in one round trip (one pipeline to
// the node of the name's slot; not a transaction, so a change between its
// reads may show half done): the latest leader record and whether its
// leader leads, the lock's holder and lease, the candidates in their
// order with their deadlines, the last term issued and the election's
// keys with their expiry. It only reads: a dead candidate is reported
// (Candidate.Dead), not dropped. A key of another type than the
// election's layout, or a lock hash whose fields are not owners, gives an
// error wrapping redisync.ErrWrongType.
func (e *Election) Inspect(ctx context.Context) (Info, error) {
	if err := e.h.Check(ctx); err != nil {
		return Info{}, err
	}
	var r reads
	if err := r.read(ctx, e.h.C.Redis(), e.h.Name); err != nil {
		return Info{}, e.inspectErr(err)
	}
	lock := r.lock.Val()
	if err := layout.Check(e.h.Name, lock, false); err != nil {
		return Info{}, fmt.Errorf("election %q: %w", e.h.Name, err)
	}
	info := Info{Records: r.logLen.Val(), Candidates: r.candidates(), Keys: r.keys()}
	for owner := range lock {
		info.Holder = owner // one owner: the lock is exclusive
	}
	if d := r.pttl.Val(); info.Holder != "" && d > 0 {
		info.TTL = d
	}
	var err error
	if v, gone := r.counter.Result(); gone == nil {
		if info.LastTerm, err = strconv.ParseInt(v, 10, 64); err != nil {
			return Info{}, e.inspectErr(err)
		}
	}
	if info.Leader, info.Owner, err = r.leader(); err != nil {
		return Info{}, e.inspectErr(err)
	}
	_, info.Leading = lock[info.Owner]
	return info, nil
}

// reads are Inspect's reads of an election's keys, sent in one pipeline.
type reads struct {
	ks      []string // keys.ElectionKeys
	lock    *redis.MapStringStringCmd
	pttl    *redis.DurationCmd
	record  *redis.SliceCmd
	logLen  *redis.IntCmd
	queue   *redis.StringSliceCmd
	dl      *redis.ZSliceCmd
	counter *redis.StringCmd
	now     *redis.TimeCmd
	types   []*redis.StatusCmd
	ttls    []*redis.DurationCmd
}

// read sends the reads of the election called name (every key in its
// slot) and returns the first error but a missing counter's.
func (r *reads) read(ctx context.Context, rdb redis.UniversalClient, name string) error {
	r.ks = keys.ElectionKeys(name)
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		r.lock = p.HGetAll(ctx, name)
		r.pttl = p.PTTL(ctx, name)
		r.record = p.HMGet(ctx, keys.ElectionLeader(name), "owner", "term", "since", "value")
		r.logLen = p.LLen(ctx, keys.ElectionLog(name))
		r.queue = p.LRange(ctx, keys.FairQueue(name), 0, -1)
		r.dl = p.ZRangeWithScores(ctx, keys.FairTimeouts(name), 0, -1)
		r.counter = p.Get(ctx, keys.FenceCounter(name))
		r.now = p.Time(ctx)
		for _, k := range r.ks {
			r.types, r.ttls = append(r.types, p.Type(ctx, k)), append(r.ttls, p.PTTL(ctx, k))
		}
		return nil
	})
	if err == nil {
		return nil
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// leader returns the latest leader record and the owner that wrote it;
// the zero Leader and "" without a record.
func (r *reads) leader() (Leader, string, error) {
	rec := r.record.Val()
	if len(rec) != 4 || rec[0] == nil {
		return Leader{}, "", nil
	}
	owner, _ := rec[0].(string)
	term, _ := rec[1].(string)
	since, _ := rec[2].(string)
	value, _ := rec[3].(string)
	t, err1 := strconv.ParseInt(term, 10, 64)
	s, err2 := strconv.ParseInt(since, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Leader{}, "", err
	}
	return newLeader(value, t, s), owner, nil
}

// candidates lists the queue, next in turn first, with what is left of
// each deadline by the server's clock.
func (r *reads) candidates() []Candidate {
	deadlines := make(map[string]float64, len(r.dl.Val()))
	for _, z := range r.dl.Val() {
		owner, _ := z.Member.(string)
		deadlines[owner] = z.Score
	}
	var cs []Candidate
	for _, owner := range r.queue.Val() {
		c := Candidate{Owner: owner} // no deadline: dead
		if d, ok := deadlines[owner]; ok {
			c.Deadline = time.UnixMilli(int64(d)).Sub(r.now.Val())
		}
		cs = append(cs, c)
	}
	return cs
}

// keys lists the election's keys that exist, with their expiry.
func (r *reads) keys() []Key {
	var ks []Key
	for i, k := range r.ks {
		if t := r.types[i].Val(); t != "none" {
			ks = append(ks, Key{Name: k, Type: t, TTL: max(r.ttls[i].Val(), -1)})
		}
	}
	return ks
}

func (e *Election) inspectErr(err error) error {
	return fmt.Errorf("election %q: inspect: %w", e.h.Name, errs.ReplyError(err))
}
