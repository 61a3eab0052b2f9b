package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// errNotPrimitive reports a key whose layout is not one of a
// redisync/Redisson primitive: an application's hash, list, set, …
var errNotPrimitive = errors.New("not a redisync/Redisson primitive")

// errNotLockHash is errNotPrimitive for a hash, which unlock -any deletes
// anyway.
var errNotLockHash = fmt.Errorf("%w", errNotPrimitive)

// maxReadHolds bounds how many read-hold timeout keys inspect looks up.
const maxReadHolds = 1000

// Report is what inspect prints: one primitive as found in Redis. Its JSON
// form (inspect -json) is the interface for scripts. Fields that do not
// apply to the primitive's type are left out.
type Report struct {
	Name string `json:"name"`
	// Type is lock, fair_lock, rwlock, semaphore, expirable_semaphore,
	// latch, rate_limiter, gcra (only with -type gcra: its key is a
	// plain string) or election; latch_or_semaphore for a string holding
	// an integer ≥ 0 that no waiter tells apart (Count and Permits then
	// both hold it; -type latch or -type semaphore says which); none when
	// nothing is stored under the name (then Exists is false, and inspect
	// exits with status 0: nothing stored is an answer, not an error).
	Type kind `json:"type"`
	// Guessed is true when the layout alone could not tell a semaphore from
	// a latch and the type was inferred from the one channel that has
	// waiters (see Reason); -type forces it.
	Guessed bool `json:"guessed"`
	// Reason says how the type was recognised.
	Reason string `json:"reason"`
	// Exists reports whether the primitive's main key (its name) exists;
	// for an election, whether its lock is held.
	Exists bool `json:"exists"`
	// TTLMillis is the main key's remaining time to live in milliseconds,
	// -1 without expiry; absent when the key does not exist. For a lock it
	// is the remaining lease.
	TTLMillis *int64 `json:"ttl_ms,omitempty"`
	// Mode is a read-write lock's mode: read or write.
	Mode string `json:"mode,omitempty"`
	// Holders are a lock's, fair lock's or read-write lock's owners.
	Holders []Holder `json:"holders,omitempty"`
	// Queue is a fair lock's line of waiting owners, head first (the list
	// redisson_lock_queue:{name}), an election's candidates; an empty
	// array when none waits.
	Queue []QueueEntry `json:"queue,omitzero"`
	// FenceToken is the last fencing token issued for a lock or fair lock
	// (the counter redisson_lock_token:{name}), when it exists; for an
	// election, the last term issued.
	FenceToken *int64 `json:"fence_token,omitempty"`
	// Permits is a semaphore's count of available permits (0 when the key
	// does not exist; it may be negative). An expirable semaphore's
	// includes its expired permits, which its next operation gives back.
	Permits *int64 `json:"permits,omitempty"`
	// Acquired lists an expirable semaphore's acquired permits.
	Acquired []Permit `json:"acquired,omitempty"`
	// Count is a latch's count (0: open); for latch_or_semaphore, the
	// value as a latch would read it.
	Count *int64 `json:"count,omitempty"`
	// RateLimit is a rate limiter's state (inspect_ratelimit.go).
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Election is an election's leader, lock holder, records and keys
	// (inspect_election.go); its candidates are Queue.
	Election *ElectionReport `json:"election,omitempty"`
	// Channel is the pub/sub channel the primitive's waiters subscribe to;
	// absent when Type is none, rate_limiter or gcra (a rate limiter has
	// no channel: its waiters sleep until Redis says permits are back). A
	// fair lock's waiters (an election's candidates) each subscribe to
	// their own channel, Channel + ":" + their owner.
	Channel string `json:"channel,omitempty"`
	// Waiters is how many connections are subscribed to Channel (for
	// latch_or_semaphore, to the latch's and the semaphore's): one per
	// waiting client (a redisync Client or a Redisson instance), however
	// many of its goroutines or threads wait. For a fair lock it is the
	// sum over the queued owners' channels: one per queued owner whose
	// client listens. On a Redis Cluster the counts of every node are
	// added up.
	Waiters int64 `json:"waiters"`
	// WaitingClients, for a lock, are the redisync Clients (processes)
	// queued for it, first first: a release wakes the first live one
	// (docs/wake.md). For a lock, Waiters counts those that listen on
	// their own channel plus the other subscribers of Channel (Redisson
	// waiters).
	WaitingClients []WaitingClient `json:"waiting_clients,omitempty"`
}

// WaitingClient is one redisync Client queued for a lock.
type WaitingClient struct {
	// ClientID is the Client's id.
	ClientID string `json:"client_id"`
	// JoinedMillis is how long ago it joined the queue, in milliseconds
	// by the server's clock.
	JoinedMillis int64 `json:"joined_ms_ago"`
	// AliveMillis is how long it still counts as alive without another
	// attempt (negative: its time ran out; the next release passes it
	// over).
	AliveMillis int64 `json:"alive_ms"`
	// Listening: its Client listens on its own channel
	// (redisync_lock_wake:{name}:<client id>); a queued Client that does
	// not (its process died) is passed over by the next release.
	Listening bool `json:"listening"`
}

// QueueEntry is one owner waiting in a fair lock's queue.
type QueueEntry struct {
	// Owner is the queued owner, "<client id>:<owner token>".
	Owner string `json:"owner"`
	// ClientID and OwnerToken are Owner's parts, as a Holder's.
	ClientID   string `json:"client_id"`
	OwnerToken string `json:"owner_token"`
	// DeadlineMillisLeft is how long the entry has left, by the server's
	// clock, until its deadline (its score in redisson_lock_timeout:{name}):
	// a live waiter pushes its deadline further each time it re-checks. 0
	// or less when the deadline has passed.
	DeadlineMillisLeft int64 `json:"deadline_ms_left"`
	// Dead reports that the deadline has passed (or the entry has none):
	// the waiter stopped re-checking, and is dropped once it is at the
	// head of the queue, by the next operation on the lock.
	Dead bool `json:"dead"`

	noDeadline bool // no score in the timeouts zset
}

// Holder is one owner of a lock or read-write lock.
type Holder struct {
	// Owner is the hash field naming the owner, "<client id>:<owner token>"
	// (without a write hold's ":write" suffix).
	Owner string `json:"owner"`
	// ClientID is the client's id: a redisync Client's ID or a Redisson
	// instance's UUID.
	ClientID string `json:"client_id"`
	// OwnerToken is the owner token within the client: a redisync owner token or
	// a Java thread id. Empty when the field does not end in ":<digits>".
	OwnerToken string `json:"owner_token"`
	// Side is "read" or "write" for a read-write lock, empty for a lock.
	Side string `json:"side,omitempty"`
	// Count is the hold count: how many unlocks free the lock.
	Count int64 `json:"count"`
	// HoldTTLsMillis are the remaining leases of a reader's holds, one per
	// hold ({name}:<owner>:rwlock_timeout:<n>), -2 for a hold whose timeout
	// key is gone.
	HoldTTLsMillis []int64 `json:"hold_ttls_ms,omitempty"`
}

// Permit is one acquired permit of an expirable semaphore.
type Permit struct {
	// ID is the permit id: its 16 bytes as 32 hex characters.
	ID string `json:"id"`
	// ExpiresAt is when the permit expires; absent when it never does.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// TTLMillis is the time left in milliseconds, -1 when it never
	// expires. Expired permits are not listed: they are counted in
	// Permits, as the semaphore's next operation gives them back
	// (semaphore.ExpirableSemaphore.Inspect).
	TTLMillis int64 `json:"ttl_ms"`
}

// errNotFound reports a name under which nothing is stored.
var errNotFound = errors.New("nothing stored")

type inspectOptions struct {
	redis  string
	prefix string // put before NAME (-prefix), as redisync.WithKeyPrefix does
	json   bool
	typ    kindValue
}

const inspectHead = `usage: redisync inspect [-redis URL] [-json] [-type TYPE] NAME

Inspect shows the lock, fair lock, read-write lock, semaphore, expirable
semaphore, latch, rate limiter or election stored under NAME in Redisson's
layout:
its holders (client id, owner token, hold count), mode, leases, last
fencing token issued, permits, count, and how many clients wait on its
channel. An owner token is a redisync owner token or a Java thread id. It
recognises the type from the keys it finds. A semaphore and a latch are
stored alike (a string holding an integer); inspect then tells them
apart by which channel has waiters, and says that it guessed; with no
waiters (or waiters on both) it shows "latch or semaphore". -type sets
the type instead.

A lock is a hash whose fields are owners "<client id>:<owner token>" holding hold
counts; a read-write lock's hash also has a mode field (read or write)
and its writer is "<client id>:<owner token>:write"; a rate limiter's hash has
rate, interval, type and perhaps keepAliveTime. Anything else (an
application's hash, a list, a string that is not an integer) is "not a
redisync/Redisson primitive": inspect says which fields or type it found
and exits with status 1.

A lock with a waiting queue (redisson_lock_queue:{NAME}) or a waiter
timeouts zset (redisson_lock_timeout:{NAME}) is a fair lock. Inspect shows
its holders, then its queue head first: each owner and how long it has
left before its deadline, on the server's clock. A live waiter pushes its
deadline further each time it re-checks; an owner whose deadline has
passed is dead, and is dropped once it is at the head of the queue, by
the next operation on the lock. A fair lock nobody waits for looks like a
lock; -type fair_lock shows it as a fair lock.

An election (package election) is a fair lock on NAME with a leader
record {NAME}:leader and its log {NAME}:leaders; NAME may also be either
of those two keys. Inspect shows its leader (the value it proclaimed, its
term and since when, by the server's clock) or the last leader when
nobody leads, who holds its lock, the candidates waiting, next in turn
first, with their deadlines as a fair lock's queue, the last term issued,
how many records the log keeps, every key of the election with its
expiry (only the lock has one: 'redisync delete' removes the others), and
the clients observing it (subscribed to redisync_election:{NAME}).
-type fair_lock shows an election's lock alone.

A GCRA limiter's key (a string) is shown only with -type gcra: its
theoretical arrival time (TAT), which is when the limiter is back to a
full burst, and how long until then. The key holds no limit, so inspect
does not say when the next event is allowed: with burst B and emission
interval T = period/rate, n events are allowed from TAT − (B − n)·T on.

Waiters are the connections subscribed to the primitive's channel: one per
waiting client, however many of its goroutines or threads wait; for a fair
lock, one per queued owner whose client listens on the owner's channel.
On a Redis Cluster the counts of all nodes are added up.

-json prints the report as a JSON object. Its "type" is one of lock,
fair_lock, rwlock, semaphore, expirable_semaphore, latch, rate_limiter,
gcra, election (the -type values) or none. A fair lock's has a "queue"
array (owner, client_id, owner_token, deadline_ms_left, dead), head
first; so has an election's, of its candidates, and an "election" object:
"leader" (value, term, since, owner, client_id, owner_token), "leading",
"holder", "records", "keys" (key, type, ttl_ms: -1 without expiry),
"channel" and "observers".

When nothing is stored under NAME (no key, no permit zset, no fair lock
queue, no fencing counter, no waiters), inspect says so ("nothing stored")
and exits with status 0: a free lock, or a semaphore or latch never set,
leaves no key in Redis, so that is an answer, not a failure. With -json it
prints an object with "exists": false and "type": "none".

The server is the -redis URL, else $REDIS_URL. Inspect only reads.
`

func inspectFlags() (*flag.FlagSet, *inspectOptions) {
	o := &inspectOptions{}
	fs := newFlagSet("inspect", inspectHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL")
	fs.BoolVar(&o.json, "json", false, "print a JSON object instead of text")
	prefixFlag(fs, &o.prefix)
	fs.Var(&o.typ, "type", "treat NAME as this `TYPE`: "+kindNames())
	return fs, o
}

func runInspect(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs, o := inspectFlags()
	name, err := parseName(fs, args, stdout)
	if err != nil {
		return err
	}
	if name, err = withPrefix(o.prefix, name); err != nil {
		return err
	}
	srv, err := dialFor(ctx, o.redis)
	if err != nil {
		return err
	}
	rdb := srv.rdb
	defer rdb.Close()
	r, err := inspect(ctx, rdb, name, o.typ.k, false)
	if errors.Is(err, errNotFound) {
		// Nothing stored is an answer, not a failure: a free lock, an
		// unused semaphore or latch leaves no key. The report (type none)
		// says so, and the exit status is 0.
		err = nil
	}
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.writeText(stdout)
}

// dialFor connects to the server of the -redis flag or $REDIS_URL, for the
// commands that need one named.
func dialFor(ctx context.Context, flagValue string) (*server, error) {
	u := serverURL(flagValue)
	if u == "" {
		return nil, usagef("no Redis server: pass -redis URL or set REDIS_URL (e.g. redis://localhost:6379)")
	}
	return dial(ctx, u)
}

// inspect reads the primitive stored under name and reports it. forced,
// when not empty, is the type -type set. When nothing is stored under name
// it returns both a report of type none and an error wrapping errNotFound;
// when the key is not laid out as a primitive, an error wrapping
// errNotPrimitive, unless anyHash and it is a hash (see classify).
func inspect(ctx context.Context, rdb redis.UniversalClient, name string, forced kind, anyHash bool) (*Report, error) {
	if r, ok, err := inspectRateLimit(ctx, rdb, name, forced); ok {
		return r, err
	}
	if r, ok, err := inspectElection(ctx, rdb, name, forced); ok {
		return r, err
	}
	s, err := readSnapshot(ctx, rdb, name)
	if err != nil {
		return nil, err
	}
	k, guessed, reason, err := classify(s, name, forced, anyHash)
	if err != nil {
		return nil, err
	}
	if k == kindNone {
		r := &Report{Name: name, Type: kindNone, Reason: reason}
		return r, fmt.Errorf("%w under %q: %s", errNotFound, name, reason)
	}
	r := &Report{
		Name:    name,
		Type:    k,
		Guessed: guessed,
		Reason:  reason,
		Exists:  s.typ != "none",
		Channel: k.channel(name),
		Waiters: s.subs[k.channel(name)],
	}
	if r.Exists {
		ttl := s.pttl
		r.TTLMillis = &ttl
	}
	if err := r.fill(ctx, rdb, s); err != nil {
		return nil, err
	}
	return r, nil
}

// fill sets the fields of r that depend on its type: the primitive's
// state from the library's Inspect of its kind (rlock, rwlock, semaphore,
// countdown), so that the CLI and the API cannot disagree, and what only
// the CLI shows (a fair lock's waiters' deadlines, read holds' leases,
// subscribers) from s. A hash that -any let through as a lock is no lock
// for the library (ErrWrongType): its fields are then shown as they are.
func (r *Report) fill(ctx context.Context, rdb redis.UniversalClient, s *snapshot) error {
	c := redisync.New(rdb)
	defer c.Close()
	switch r.Type {
	case kindLock, kindFair:
		return r.fillLock(ctx, c, s)
	case kindRWLock:
		return r.fillRWLock(ctx, c, rdb, s)
	case kindSemaphore:
		info, err := semaphore.New(c, r.Name).Inspect(ctx)
		if err != nil {
			return err
		}
		r.Permits = &info.Available
	case kindExpirable:
		info, err := semaphore.NewExpirable(c, r.Name).Inspect(ctx)
		if err != nil {
			return err
		}
		r.Permits = &info.Available
		r.Acquired = permits(info.Permits, s.now)
	case kindLatch:
		info, err := countdown.New(c, r.Name).Inspect(ctx)
		if err != nil {
			return err
		}
		r.Count = &info.Count
	case kindCounter: // one value, read as both
		info, err := semaphore.New(c, r.Name).Inspect(ctx)
		if err != nil {
			return err
		}
		n := info.Available
		r.Permits, r.Count = &n, &n
		r.Waiters = s.subs[keys.SemaphoreChannel(r.Name)] + s.subs[keys.LatchChannel(r.Name)]
	}
	return nil
}

// fillLock fills a lock's or fair lock's report from rlock's Inspect.
func (r *Report) fillLock(ctx context.Context, c *redisync.Client, s *snapshot) error {
	var (
		info rlock.Info
		err  error
	)
	if r.Type == kindFair {
		info, err = rlock.NewFair(c, r.Name).Inspect(ctx)
	} else {
		info, err = rlock.New(c, r.Name).Inspect(ctx)
	}
	switch {
	case errors.Is(err, redisync.ErrWrongType) && s.typ == "hash":
		// -any: a hash of another layout, shown as it is
		r.FenceToken = s.fence
		r.Holders = lockHolders(s.hash)
		info.Queue = s.queue
	case err != nil:
		return err
	default:
		for _, h := range info.Holders {
			r.Holders = append(r.Holders, newHolder(h.Owner, "", h.Count))
		}
		if info.FencingToken > 0 { // INCR starts at 1: 0 is no counter
			r.FenceToken = &info.FencingToken
		}
		if r.Exists {
			ttl := ttlMillis(info.TTL)
			r.TTLMillis = &ttl
		}
	}
	if r.Type == kindLock {
		return r.fillWaitingClients(ctx, c.Redis(), s)
	}
	if r.Type == kindFair {
		r.Queue = fairQueue(info.Queue, s.deadlines, s.now)
		r.Waiters = 0
		for _, e := range r.Queue {
			r.Waiters += s.subs[keys.FairChannel(r.Name, e.Owner)]
		}
	}
	return nil
}

// fillWaitingClients reads a lock's (or a read-write lock's write side's)
// queue of waiting Clients (read right
// after the snapshot s) and counts the lock's waiters: the queued Clients
// that listen on their own channel, and the other subscribers of the
// lock's channel (the first queued Client listens there too while the
// holder is one the queue did not record: counted once).
func (r *Report) fillWaitingClients(ctx context.Context, rdb redis.UniversalClient, s *snapshot) error {
	queued, err := rdb.ZRangeWithScores(ctx, keys.LockWaiters(r.Name), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("ZRANGE %s: %w", keys.LockWaiters(r.Name), err)
	}
	if len(queued) == 0 {
		return nil
	}
	state, err := rdb.HGetAll(ctx, keys.LockWaitState(r.Name)).Result()
	if err != nil {
		return fmt.Errorf("HGETALL %s: %w", keys.LockWaitState(r.Name), err)
	}
	channels := make([]string, len(queued))
	for i, z := range queued {
		channels[i] = keys.LockWakePrefix(r.Name) + fmt.Sprint(z.Member)
	}
	subs, err := numSub(ctx, rdb, channels...)
	if err != nil {
		return err
	}
	now := s.now.UnixMilli()
	var listening int64
	for i, z := range queued {
		id := fmt.Sprint(z.Member)
		alive, _ := strconv.ParseInt(state[id], 10, 64)
		w := WaitingClient{ClientID: id, JoinedMillis: now - int64(z.Score), AliveMillis: alive - now, Listening: subs[channels[i]] > 0}
		if w.Listening {
			listening++
		}
		r.WaitingClients = append(r.WaitingClients, w)
	}
	recorded := false
	for _, h := range r.Holders {
		// a read-write lock records its writer's field, "<owner>:write"
		recorded = recorded || (state[""] != "" && (h.Owner == state[""] || h.Owner+":write" == state[""]))
	}
	if r.WaitingClients[0].Listening && !recorded && r.Waiters > 0 {
		r.Waiters-- // the first queued Client, on the lock's channel too
	}
	r.Waiters += listening
	return nil
}

// fillRWLock fills a read-write lock's report from rwlock's Inspect, and
// the leases of the read holds.
func (r *Report) fillRWLock(ctx context.Context, c *redisync.Client, rdb redis.UniversalClient, s *snapshot) error {
	info, err := rwlock.New(c, r.Name).Inspect(ctx)
	var hs []Holder
	switch {
	case errors.Is(err, redisync.ErrWrongType) && s.typ == "hash":
		r.Mode = s.hash["mode"] // -any: shown as it is
		hs = rwFields(s.hash)
	case err != nil:
		return err
	default:
		r.Mode = info.Mode
		if info.Writer != nil {
			hs = append(hs, newHolder(info.Writer.Owner, "write", info.Writer.Count))
		}
		for _, h := range info.Readers {
			hs = append(hs, newHolder(h.Owner, "read", h.Count))
		}
		if r.Exists {
			ttl := ttlMillis(info.TTL)
			r.TTLMillis = &ttl
		}
	}
	if r.Holders, err = readLeases(ctx, rdb, r.Name, hs); err != nil {
		return err
	}
	return r.fillWaitingClients(ctx, rdb, s) // the write side's queue
}

// ttlMillis is a library TTL as the report's ttl_ms: -1 without expiry.
func ttlMillis(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// fairQueue lists a fair lock's queued owners, head first, with what is
// left of each one's deadline at now. The result is empty, not nil, when
// nobody is queued.
func fairQueue(queue []string, deadlines map[string]float64, now time.Time) []QueueEntry {
	q := make([]QueueEntry, 0, len(queue))
	for _, owner := range queue {
		h := newHolder(owner, "", 0)
		e := QueueEntry{Owner: owner, ClientID: h.ClientID, OwnerToken: h.OwnerToken, Dead: true, noDeadline: true}
		if d, ok := deadlines[owner]; ok {
			// The scripts keep a waiter while its deadline > now.
			e.DeadlineMillisLeft = int64(d) - now.UnixMilli()
			e.Dead, e.noDeadline = e.DeadlineMillisLeft <= 0, false
		}
		q = append(q, e)
	}
	return q
}

// lockHolders lists a lock's owners, sorted by field.
func lockHolders(hash map[string]string) []Holder {
	var hs []Holder
	for field, v := range hash {
		n, _ := strconv.ParseInt(v, 10, 64)
		hs = append(hs, newHolder(field, "", n))
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Owner < hs[j].Owner })
	return hs
}

// rwFields lists a read-write lock hash's writer and readers as they are
// stored (for a hash that -any let through).
func rwFields(hash map[string]string) []Holder {
	var hs []Holder
	for field, v := range hash {
		if field == "mode" {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		if owner, ok := strings.CutSuffix(field, keys.RWWriteField("")); ok {
			hs = append(hs, newHolder(owner, "write", n))
		} else {
			hs = append(hs, newHolder(field, "read", n))
		}
	}
	return hs
}

// readLeases sorts a read-write lock's holders, the writer first, and
// reads the remaining lease of each read hold, in one pipeline.
func readLeases(ctx context.Context, rdb redis.UniversalClient, name string, hs []Holder) ([]Holder, error) {
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Side != hs[j].Side {
			return hs[i].Side == "write"
		}
		return hs[i].Owner < hs[j].Owner
	})
	type ref struct {
		h   int
		cmd *redis.Cmd
	}
	var refs []ref
	pipe := rdb.Pipeline()
	total := 0
	for i := range hs {
		if hs[i].Side != "read" {
			continue
		}
		for n := int64(1); n <= hs[i].Count && total < maxReadHolds; n++ {
			key := keys.RWTimeoutKey(name, hs[i].Owner, n)
			refs = append(refs, ref{i, pipe.Do(ctx, "pttl", key)})
			total++
		}
	}
	if len(refs) == 0 {
		return hs, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read hold leases: %w", err)
	}
	for _, r := range refs {
		ms, _ := r.cmd.Int64()
		hs[r.h].HoldTTLsMillis = append(hs[r.h].HoldTTLsMillis, ms)
	}
	return hs, nil
}

// newHolder splits an owner "<client id>:<owner token>" at its last
// colon (the token of another client of Redisson's protocol may be no
// number: node-redisson's is a UUID).
func newHolder(owner, side string, count int64) Holder {
	h := Holder{Owner: owner, ClientID: owner, Side: side, Count: count}
	if i := strings.LastIndexByte(owner, ':'); i >= 0 && i < len(owner)-1 {
		h.ClientID, h.OwnerToken = owner[:i], owner[i+1:]
	}
	return h
}

// permits lists an expirable semaphore's acquired permits as the
// library's Inspect gives them (expired permits are counted as available
// there, as the next script does), soonest expiry first, with their
// expiry by the server's clock now.
func permits(ps []semaphore.Permit, now time.Time) []Permit {
	var out []Permit
	for _, p := range ps {
		q := Permit{ID: p.ID, TTLMillis: -1}
		if p.Lease >= 0 {
			at := now.Add(p.Lease).UTC().Truncate(time.Millisecond)
			q.ExpiresAt = &at
			q.TTLMillis = p.Lease.Milliseconds()
		}
		out = append(out, q)
	}
	return out
}
