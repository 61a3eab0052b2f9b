package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/keys"
)

// Elections in inspect: an election (package election) is a fair lock on
// its name plus its leader record {name}:leader and the records' log
// {name}:leaders. It is recognised by those two keys, under its name or
// under the name of either of them; inspect.go calls inspectElection
// before its own recognition, and writeElection for the text. The state
// comes from election.Election.Inspect, so the CLI and the API agree.

// kindElection is an election (in allKinds, inspect_kind.go).
const kindElection kind = "election"

// ElectionReport is what inspect reports of an election besides its
// lock's lease (Report's ttl_ms), the last term issued (Report's
// fence_token) and its candidates (Report's queue, next in turn first).
type ElectionReport struct {
	// Leader is the latest leader record: the leader's when Leading, else
	// the last leader's; absent when no record exists.
	Leader *LeaderRecord `json:"leader,omitempty"`
	// Leading reports whether Leader leads: the owner that wrote the
	// record holds the election's lock.
	Leading bool `json:"leading"`
	// Holder is the owner holding the election's lock; absent when it is
	// free. When Leading it is the leader; otherwise an owner that is no
	// candidate (a Redisson RLock on the name), or a candidate that has
	// just won and not yet written its record.
	Holder *OwnerRef `json:"holder,omitempty"`
	// Records is how many leader records the log {name}:leaders keeps
	// (the latest 64).
	Records int64 `json:"records"`
	// Keys are the election's keys that exist: the lock (its name), the
	// record, the log, the queue, the queue's deadlines and the fencing
	// counter. Only the lock has an expiry, its lease: the others stay
	// until "redisync delete" (election.Election.Delete) removes them.
	Keys []ElectionKey `json:"keys"`
	// Channel is where the election's new records are published, and
	// Observers how many clients subscribe to it (election.Election.Observe).
	Channel   string `json:"channel"`
	Observers int64  `json:"observers"`
}

// LeaderRecord is an election's leader record: what the leader
// proclaimed, its term, since when, and the owner that wrote it (its
// field in the lock hash while it leads).
type LeaderRecord struct {
	Value string `json:"value"`
	Term  int64  `json:"term"`
	// Since is when the term began, by the Redis server's clock.
	Since time.Time `json:"since"`
	OwnerRef
}

// OwnerRef is an owner "<client id>:<owner token>" and its parts, as a
// Holder's.
type OwnerRef struct {
	Owner      string `json:"owner"`
	ClientID   string `json:"client_id"`
	OwnerToken string `json:"owner_token"`
}

// newOwnerRef splits owner as newHolder does.
func newOwnerRef(owner string) OwnerRef {
	h := newHolder(owner, "", 0)
	return OwnerRef{Owner: owner, ClientID: h.ClientID, OwnerToken: h.OwnerToken}
}

// ElectionKey is one key of an election.
type ElectionKey struct {
	Key  string `json:"key"`
	Type string `json:"type"` // the Redis type
	// TTLMillis is the remaining time to live, -1 without expiry.
	TTLMillis int64 `json:"ttl_ms"`
}

// electionOf returns the name of the election that name is, or whose
// leader record or log name is, and how it was recognised; "" when it is
// none. A record key "{x}:leader" is the record of an election called x
// or "{x}" (the same keys but the lock): the one whose lock exists, else x.
func electionOf(ctx context.Context, rdb redis.UniversalClient, name string) (string, string, error) {
	own := []string{keys.ElectionLeader(name), keys.ElectionLog(name)}
	var of []string // elections whose record or log name is
	if tag, ok := strings.CutSuffix(name, ":leader"); ok {
		of = electionsTagged(tag)
	} else if tag, ok := strings.CutSuffix(name, ":leaders"); ok {
		of = electionsTagged(tag)
	}
	var types []*redis.StatusCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range append(append(own, name), of...) {
			types = append(types, p.Type(ctx, k))
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if types[0].Val() == "hash" || types[1].Val() == "list" {
		return name, electionEvidence(name, types[0].Val() == "hash", types[1].Val() == "list"), nil
	}
	self := types[2].Val()
	if len(of) == 0 || (strings.HasSuffix(name, ":leader") && self != "hash") || (strings.HasSuffix(name, ":leaders") && self != "list") {
		return "", "", nil
	}
	e := of[0]
	for i, n := range of {
		if types[3+i].Val() == "hash" {
			e = n
			break
		}
	}
	what := "leader record"
	if strings.HasSuffix(name, ":leaders") {
		what = "leader records' log"
	}
	return e, fmt.Sprintf("%s is the %s of the election %q", name, what, e), nil
}

// electionsTagged lists the names whose braced tag is tag: "{x}" is the
// tag of x and of "{x}" itself; a tag with braces inside is its own.
func electionsTagged(tag string) []string {
	if !strings.Contains(tag, "{") {
		return nil
	}
	if inner, ok := strings.CutPrefix(tag, "{"); ok && strings.HasSuffix(inner, "}") {
		if inner = strings.TrimSuffix(inner, "}"); inner != "" && !strings.Contains(inner, "{") {
			return []string{inner, tag}
		}
	}
	return []string{tag}
}

// electionEvidence names an election's record keys that exist, for a
// reason.
func electionEvidence(name string, record, log bool) string {
	switch {
	case record && log:
		return "a leader record " + keys.ElectionLeader(name) + " and its log " + keys.ElectionLog(name)
	case record:
		return "a leader record " + keys.ElectionLeader(name)
	}
	return "a leader records' log " + keys.ElectionLog(name)
}

// inspectElection reports name as an election when it is one, or the
// record or log of one (or forced is kindElection); ok is false to let
// inspect recognise the other kinds.
func inspectElection(ctx context.Context, rdb redis.UniversalClient, name string, forced kind) (r *Report, ok bool, err error) {
	if forced != "" && forced != kindElection {
		return nil, false, nil
	}
	ename, reason, err := electionOf(ctx, rdb, name)
	switch {
	case err != nil:
		return nil, true, err
	case ename == "" && forced == "":
		return nil, false, nil
	case ename == "":
		ename, reason = name, "set with -type; no leader record "+keys.ElectionLeader(name)
	}
	c := redisync.New(rdb)
	defer c.Close()
	info, err := election.New(c, ename).Inspect(ctx)
	if err != nil {
		return nil, true, err
	}
	r = electionReport(ename, reason, info)
	channels := []string{r.Election.Channel}
	for _, e := range r.Queue {
		channels = append(channels, keys.FairChannel(ename, e.Owner))
	}
	subs, err := numSub(ctx, rdb, channels...)
	if err != nil {
		return nil, true, err
	}
	r.Election.Observers = subs[r.Election.Channel]
	for _, e := range r.Queue {
		r.Waiters += subs[keys.FairChannel(ename, e.Owner)]
	}
	return r, true, nil
}

// electionReport is the report of the election called name as info
// shows it.
func electionReport(name, reason string, info election.Info) *Report {
	r := &Report{Name: name, Type: kindElection, Reason: reason, Exists: info.Holder != "", Channel: keys.LockChannel(name),
		Election: &ElectionReport{Leading: info.Leading, Records: info.Records, Keys: []ElectionKey{}, Channel: keys.ElectionChannel(name)}}
	if info.Holder != "" {
		ttl := info.TTL.Milliseconds()
		r.TTLMillis = &ttl
		o := newOwnerRef(info.Holder)
		r.Election.Holder = &o
	}
	if info.LastTerm > 0 {
		r.FenceToken = &info.LastTerm
	}
	if info.Owner != "" {
		r.Election.Leader = &LeaderRecord{Value: info.Leader.Value, Term: info.Leader.Term, Since: info.Leader.Since.UTC(),
			OwnerRef: newOwnerRef(info.Owner)}
	}
	r.Queue = make([]QueueEntry, 0, len(info.Candidates))
	for _, c := range info.Candidates {
		h := newHolder(c.Owner, "", 0)
		r.Queue = append(r.Queue, QueueEntry{Owner: c.Owner, ClientID: h.ClientID, OwnerToken: h.OwnerToken,
			DeadlineMillisLeft: c.Deadline.Milliseconds(), Dead: c.Dead()})
	}
	for _, k := range info.Keys {
		ttl := ttlMillis(k.TTL)
		r.Election.Keys = append(r.Election.Keys, ElectionKey{Key: k.Name, Type: k.Type, TTLMillis: ttl})
	}
	return r
}

// writeElection prints an election's state for people: the leader, the
// lock's holder, the candidates, the last term, the records and keys.
func (r *Report) writeElection(w io.Writer) {
	el := r.Election
	r.writeLeader(w)
	r.writeCandidates(w)
	if r.FenceToken != nil {
		fmt.Fprintf(w, "terms:\tlast term issued %d (%s); the next leader's is larger\n", *r.FenceToken, keys.FenceCounter(r.Name))
	}
	fmt.Fprintf(w, "records:\t%s in %s\n", plural(int(el.Records), "leader record"), keys.ElectionLog(r.Name))
	for _, k := range el.Keys {
		ttl := keyTTLText(k.TTLMillis)
		if k.Key == r.Name {
			ttl = leaseText(k.TTLMillis) // the lock's
		}
		fmt.Fprintf(w, "key:\t%s\t%s\t%s\n", k.Key, k.Type, ttl)
	}
	fmt.Fprintf(w, "observers:\t%s subscribed to %s\n", clients(el.Observers), el.Channel)
	fmt.Fprintf(w, "waiters:\t%s subscribed to the candidates' channels %s:<owner>\n", clients(r.Waiters), r.Channel)
}

// writeLeader prints an election's leader (or last leader) and its
// lock's state and holder.
func (r *Report) writeLeader(w io.Writer) {
	el := r.Election
	switch l := el.Leader; {
	case l == nil:
		fmt.Fprintf(w, "leader:\tnone: no leader record\n")
	case el.Leading:
		fmt.Fprintf(w, "leader:\t%q, term %d, since %s (%s ago)\n", l.Value, l.Term, l.Since.Format(time.RFC3339Nano), since(time.Now(), l.Since))
		fmt.Fprintf(w, "leader's owner:\tclient %s\towner token %s\n", l.ClientID, tokenText(l.OwnerToken))
	default:
		fmt.Fprintf(w, "leader:\tnone: the last leader, %q (term %d, since %s), no longer holds the lock\n",
			l.Value, l.Term, l.Since.Format(time.RFC3339Nano))
	}
	switch {
	case !r.Exists:
		fmt.Fprintf(w, "lock:\tfree\n")
	case el.Leading:
		fmt.Fprintf(w, "lock:\theld by the leader, %s\n", leaseText(*r.TTLMillis))
	default:
		fmt.Fprintf(w, "lock:\theld by an owner that wrote no leader record (a lock that is no candidate's, or a winner about to write its record), %s\n",
			leaseText(*r.TTLMillis))
		fmt.Fprintf(w, "holder:\tclient %s\towner token %s\n", el.Holder.ClientID, tokenText(el.Holder.OwnerToken))
	}
}

// writeCandidates prints an election's candidates, next in turn first.
func (r *Report) writeCandidates(w io.Writer) {
	r.writeWaiting(w, waitingText{label: "candidates", entry: "candidate", noun: "candidate",
		empty: "none waiting", order: "next in turn first"})
}

// keyTTLText describes an election key's expiry.
func keyTTLText(ms int64) string {
	if ms < 0 {
		return "no expiry (kept until deleted)"
	}
	return "expires in " + msText(ms)
}

// since is how long ago t was at now, to the millisecond; 0 for a time
// after now (clocks apart).
func since(now, t time.Time) time.Duration {
	return max(now.Sub(t), 0).Truncate(time.Millisecond)
}
