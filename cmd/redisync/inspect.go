package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// kind is a primitive as recognised from its Redis layout. Its value is
// the report's JSON "type" and the -type value: one spelling, snake_case.
type kind string

const (
	kindLock        kind = "lock"
	kindFair        kind = "fair_lock" // a lock with a waiting queue
	kindRWLock      kind = "rwlock"
	kindSemaphore   kind = "semaphore"
	kindExpirable   kind = "expirable_semaphore"
	kindLatch       kind = "latch"
	kindRateLimiter kind = "rate_limiter" // Redisson RRateLimiter's config hash
	// kindNone is the type of a report on a name under which nothing is
	// stored (Redis's TYPE says "none" too). It is not a -type value.
	kindNone kind = "none"
)

var allKinds = []kind{kindLock, kindFair, kindRWLock, kindSemaphore, kindExpirable, kindLatch, kindRateLimiter}

// ownChannel reports whether the kind's waiters subscribe to a channel no
// other kind uses: an expirable semaphore shares the semaphore's, a fair
// lock's waiters each have their own, under the lock's channel, and a rate
// limiter has none.
func (k kind) ownChannel() bool { return k != kindExpirable && k != kindFair && !k.rateLimit() }

// title is the kind's name in prose.
func (k kind) title() string {
	switch k {
	case kindFair:
		return "fair lock"
	case kindRWLock:
		return "read-write lock"
	case kindExpirable:
		return "expirable semaphore"
	case kindRateLimiter:
		return "rate limiter"
	}
	return string(k)
}

// isLock reports whether the kind is one that unlock frees.
func (k kind) isLock() bool { return k == kindLock || k == kindFair || k == kindRWLock }

// withArticle returns the kind's name in prose after "a" or "an": "a lock",
// "an expirable semaphore".
func (k kind) withArticle() string { return withArticle(k.title()) }

// withArticle puts "a" or "an" before phrase, chosen by its first letter:
// "an" before a vowel. That is right for every word inspect and unlock put
// after an article; words like "unit" or "hour" would need a list.
func withArticle(phrase string) string {
	if phrase != "" && strings.ContainsRune("aeiouAEIOU", rune(phrase[0])) {
		return "an " + phrase
	}
	return "a " + phrase
}

// channel is where the primitive's waiters subscribe; for a fair lock, the
// prefix of its waiters' channels (<channel>:<owner>); "" for a rate
// limiter, which has no channel.
func (k kind) channel(name string) string {
	switch k {
	case kindLock, kindFair:
		return keys.LockChannel(name)
	case kindRWLock:
		return keys.RWChannel(name)
	case kindLatch:
		return keys.LatchChannel(name)
	case kindRateLimiter:
		return ""
	}
	return keys.SemaphoreChannel(name)
}

// kindValue is a flag.Value holding a kind ("" when not set).
type kindValue struct{ k kind }

func (v *kindValue) String() string { return string(v.k) }

// Set takes a kind's -type value, which is also the type a report gives,
// so a script can pass back what a report said.
func (v *kindValue) Set(s string) error {
	for _, k := range allKinds {
		if s == string(k) {
			v.k = k
			return nil
		}
	}
	return fmt.Errorf("unknown type %q (want one of %s)", s, kindNames())
}

// kindNames lists the -type values, comma-separated.
func kindNames() string {
	names := make([]string, len(allKinds))
	for i, k := range allKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// errNotPrimitive reports a key whose layout is not one of a
// redisync/Redisson primitive: an application's hash, list, set, …
var errNotPrimitive = errors.New("not a redisync/Redisson primitive")

// errNotLockHash is errNotPrimitive for a hash, which unlock -any deletes
// anyway.
var errNotLockHash = fmt.Errorf("%w", errNotPrimitive)

// neverExpires is the expiry score (epoch ms) Redisson gives a permit
// acquired without a lease.
const neverExpires = 922337203685477

// maxReadHolds bounds how many read-hold timeout keys inspect looks up.
const maxReadHolds = 1000

// Report is what inspect prints: one primitive as found in Redis. Its JSON
// form (inspect -json) is the interface for scripts. Fields that do not
// apply to the primitive's type are left out.
type Report struct {
	Name string `json:"name"`
	// Type is lock, fair_lock, rwlock, semaphore, expirable_semaphore,
	// latch or rate_limiter; none when nothing is stored under the name
	// (then Exists is false and inspect exits with status 1).
	Type kind `json:"type"`
	// Guessed is true when the layout alone could not tell a semaphore from
	// a latch and the type was inferred (see Reason); -type forces it.
	Guessed bool `json:"guessed"`
	// Reason says how the type was recognised.
	Reason string `json:"reason"`
	// Exists reports whether the primitive's main key (its name) exists.
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
	// redisson_lock_queue:{name}); an empty array when none waits.
	Queue []QueueEntry `json:"queue,omitzero"`
	// FenceToken is the last fencing token issued for a lock or fair lock
	// (the counter redisson_lock_token:{name}), when it exists.
	FenceToken *int64 `json:"fence_token,omitempty"`
	// Permits is a semaphore's count of available permits (0 when the key
	// does not exist; it may be negative).
	Permits *int64 `json:"permits,omitempty"`
	// Acquired lists an expirable semaphore's acquired permits.
	Acquired []Permit `json:"acquired,omitempty"`
	// Count is a latch's count (0: open).
	Count *int64 `json:"count,omitempty"`
	// RateLimit is a rate limiter's state (inspect_ratelimit.go).
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Channel is the pub/sub channel the primitive's waiters subscribe to;
	// absent when Type is none, rate_limiter or gcra (a rate limiter has
	// no channel: its waiters sleep until Redis says permits are back). A
	// fair lock's waiters each subscribe to their own channel, Channel +
	// ":" + their owner.
	Channel string `json:"channel,omitempty"`
	// Waiters is how many connections are subscribed to Channel: one per
	// waiting client (a redisync Client or a Redisson instance), however
	// many of its goroutines or threads wait. For a fair lock it is the
	// sum over the queued owners' channels: one per queued owner whose
	// client listens. On a Redis Cluster the counts of every node are
	// added up.
	Waiters int64 `json:"waiters"`
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
	// TTLMillis is the time left in milliseconds: -1 never expires, 0 or
	// less expired (it goes back to the available permits with the
	// semaphore's next operation).
	TTLMillis int64 `json:"ttl_ms"`
}

// errNotFound reports a name under which nothing is stored.
var errNotFound = errors.New("nothing stored")

type inspectOptions struct {
	redis string
	json  bool
	typ   kindValue
}

const inspectHead = `usage: redisync inspect [-redis URL] [-json] [-type TYPE] NAME

Inspect shows the lock, fair lock, read-write lock, semaphore, expirable
semaphore, latch or rate limiter stored under NAME in Redisson's layout:
its holders (client id, owner token, hold count), mode, leases, last
fencing token issued, permits, count, and how many clients wait on its
channel. An owner token is a redisync owner token or a Java thread id. It
recognises the type from the keys it finds. A semaphore and a latch are
stored alike (a string); inspect then tells them apart by which channel
has waiters, says in its output that it guessed, and -type sets the type
instead.

A lock is a hash whose fields are owners "<client id>:<n>" holding hold
counts; a read-write lock's hash also has a mode field (read or write)
and its writer is "<client id>:<n>:write"; a rate limiter's hash has
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

Waiters are the connections subscribed to the primitive's channel: one per
waiting client, however many of its goroutines or threads wait; for a fair
lock, one per queued owner whose client listens on the owner's channel.
On a Redis Cluster the counts of all nodes are added up.

-json prints the report as a JSON object. Its "type" is one of lock,
fair_lock, rwlock, semaphore, expirable_semaphore, latch, rate_limiter
(the -type values) or none. A fair lock's has a "queue" array (owner,
client_id, owner_token, deadline_ms_left, dead), head first. When nothing is stored under NAME
(no key, no permit zset, no fair lock queue, no fencing counter, no
waiters), inspect fails with exit status 1; with -json it still prints an
object, with "exists": false and "type": "none".

The server is the -redis URL, else $REDIS_URL. Inspect only reads.
`

func inspectFlags() (*flag.FlagSet, *inspectOptions) {
	o := &inspectOptions{}
	fs := newFlagSet("inspect", inspectHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL")
	fs.BoolVar(&o.json, "json", false, "print a JSON object instead of text")
	fs.Var(&o.typ, "type", "treat NAME as this `TYPE`: "+kindNames())
	return fs, o
}

func runInspect(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs, o := inspectFlags()
	name, err := parseName(fs, args, stdout)
	if err != nil {
		return err
	}
	srv, err := dialFor(ctx, o.redis)
	if err != nil {
		return err
	}
	rdb := srv.rdb
	defer rdb.Close()
	r, err := inspect(ctx, rdb, name, o.typ.k, false)
	if o.json && r != nil {
		// Also when nothing is stored (r.Type none, err errNotFound):
		// scripts read "exists": false, and the exit status is still 1.
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(r); jerr != nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
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

// snapshot is the raw state of the keys a primitive called name may use.
type snapshot struct {
	typ       string             // TYPE name
	zsetType  string             // TYPE {name}:timeout
	queueType string             // TYPE redisson_lock_queue:{name}
	fairType  string             // TYPE redisson_lock_timeout:{name}
	hash      map[string]string  // HGETALL name, for a hash
	value     string             // GET name, for a string
	pttl      int64              // PTTL name
	permits   []redis.Z          // ZRANGE {name}:timeout WITHSCORES, for a zset
	queue     []string           // LRANGE redisson_lock_queue:{name}, for a list
	deadlines map[string]float64 // redisson_lock_timeout:{name}'s scores, for a zset
	fence     *int64             // GET redisson_lock_token:{name}
	now       time.Time          // the server's clock
	subs      map[string]int64   // subscribers of every kind's channel and of each queued owner's
}

// keyTypes are the Redis types (TYPE) of the keys a primitive called name
// may use: the name, the permit zset, a fair lock's queue and timeouts.
type keyTypes [4]string

// keyNames lists the keys whose types keyTypes holds, in its order.
func keyNames(name string) [4]string {
	return [4]string{name, keys.SemaphoreTimeouts(name), keys.FairQueue(name), keys.FairTimeouts(name)}
}

// isFair reports whether a fair lock's queue or timeouts zset exists.
func (s *snapshot) isFair() bool { return s.queueType == "list" || s.fairType == "zset" }

// maxSnapshotTries bounds how often readSnapshot starts over when a key
// changes type between its two reads.
const maxSnapshotTries = 5

// readSnapshot reads everything inspect shows about name. The keys are read
// in one MULTI/EXEC (they share name's cluster slot), so holders, TTLs,
// permits and queue are one consistent picture; read-hold leases and
// waiter counts are read right after.
func readSnapshot(ctx context.Context, rdb redis.UniversalClient, name string) (*snapshot, error) {
	var s *snapshot
	for try := 0; ; try++ {
		types, err := readTypes(ctx, rdb, name)
		if err != nil {
			return nil, err
		}
		s, err = readKeys(ctx, rdb, name, types)
		if err != nil {
			return nil, err
		}
		if s != nil {
			break
		}
		if try == maxSnapshotTries {
			return nil, fmt.Errorf("%q keeps changing type; try again", name)
		}
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("TIME: %w", err)
	}
	s.now = now
	channels := make([]string, 0, len(allKinds)+len(s.queue))
	for _, k := range allKinds {
		if k.ownChannel() {
			channels = append(channels, k.channel(name))
		}
	}
	for _, owner := range s.queue {
		channels = append(channels, keys.FairChannel(name, owner))
	}
	if s.subs, err = numSub(ctx, rdb, channels...); err != nil {
		return nil, err
	}
	return s, nil
}

// readTypes reads the types of name's keys in one transaction.
func readTypes(ctx context.Context, rdb redis.UniversalClient, name string) (keyTypes, error) {
	var cmds [4]*redis.StatusCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keyNames(name) {
			cmds[i] = p.Type(ctx, key)
		}
		return nil
	})
	var types keyTypes
	if err != nil {
		return types, err
	}
	for i, c := range cmds {
		types[i] = c.Val()
	}
	return types, nil
}

// readKeys reads name's keys given the types just seen, in one
// transaction that checks the types again; it returns nil, nil when they
// changed meanwhile.
func readKeys(ctx context.Context, rdb redis.UniversalClient, name string, types keyTypes) (*snapshot, error) {
	kn := keyNames(name)
	var (
		typeCmds [4]*redis.StatusCmd
		hashCmd  *redis.MapStringStringCmd
		getCmd   *redis.StringCmd
		pttlCmd  *redis.Cmd
		zCmd     *redis.ZSliceCmd
		queueCmd *redis.StringSliceCmd
		fairCmd  *redis.ZSliceCmd
		fenceCmd *redis.StringCmd
	)
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range kn {
			typeCmds[i] = p.Type(ctx, key)
		}
		pttlCmd = p.Do(ctx, "pttl", name)
		fenceCmd = p.Get(ctx, keys.FenceCounter(name))
		switch types[0] {
		case "hash":
			hashCmd = p.HGetAll(ctx, name)
		case "string":
			getCmd = p.Get(ctx, name)
		}
		zCmd = ifType(types[1], "zset", func() *redis.ZSliceCmd { return p.ZRangeWithScores(ctx, kn[1], 0, -1) })
		queueCmd = ifType(types[2], "list", func() *redis.StringSliceCmd { return p.LRange(ctx, kn[2], 0, -1) })
		fairCmd = ifType(types[3], "zset", func() *redis.ZSliceCmd { return p.ZRangeWithScores(ctx, kn[3], 0, -1) })
		return nil
	})
	if retry, err := txFailure(cmds, err); retry || err != nil {
		return nil, err
	}
	for i, c := range typeCmds {
		if c.Val() != types[i] {
			return nil, nil
		}
	}
	s := &snapshot{typ: types[0], zsetType: types[1], queueType: types[2], fairType: types[3]}
	s.pttl, _ = pttlCmd.Int64()
	if v, err := fenceCmd.Int64(); err == nil {
		s.fence = &v
	}
	if hashCmd != nil {
		s.hash = hashCmd.Val()
	}
	if getCmd != nil {
		s.value = getCmd.Val()
	}
	if zCmd != nil {
		s.permits = zCmd.Val()
	}
	if queueCmd != nil {
		s.queue = queueCmd.Val()
	}
	if fairCmd != nil {
		s.deadlines = make(map[string]float64, len(fairCmd.Val()))
		for _, z := range fairCmd.Val() {
			owner, _ := z.Member.(string)
			s.deadlines[owner] = z.Score
		}
	}
	return s, nil
}

// ifType queues a read with add when the key's type is want, and returns
// its command; nil otherwise.
func ifType[C any](typ, want string, add func() *C) *C {
	if typ != want {
		return nil
	}
	return add()
}

// txFailure looks at each command of a failed transaction (Exec reports
// the first failed one): a missing key read with GET is fine, a key that
// changed type means starting over (retry), anything else is an error.
func txFailure(cmds []redis.Cmder, err error) (retry bool, _ error) {
	if err == nil {
		return false, nil
	}
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil, errors.Is(err, redis.Nil):
		case isWrongType(err):
			return true, nil
		default:
			return false, err
		}
	}
	if len(cmds) == 0 {
		return false, err
	}
	return false, nil
}

func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
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

// fill sets the fields of r that depend on its type, from s.
func (r *Report) fill(ctx context.Context, rdb redis.UniversalClient, s *snapshot) error {
	var err error
	switch r.Type {
	case kindLock:
		r.FenceToken = s.fence
		r.Holders = lockHolders(s.hash)
	case kindFair:
		r.FenceToken = s.fence
		r.Holders = lockHolders(s.hash)
		r.Queue = fairQueue(s.queue, s.deadlines, s.now)
		r.Waiters = 0
		for _, e := range r.Queue {
			r.Waiters += s.subs[keys.FairChannel(r.Name, e.Owner)]
		}
	case kindRWLock:
		r.Mode = s.hash["mode"]
		r.Holders, err = rwHolders(ctx, rdb, r.Name, s.hash)
	case kindSemaphore, kindExpirable:
		p := stringInt(s)
		r.Permits = &p
		r.Acquired = permits(s.permits, s.now)
	case kindLatch:
		c := stringInt(s)
		r.Count = &c
	}
	return err
}

// stringInt is the integer a string key holds, 0 when there is none.
func stringInt(s *snapshot) int64 {
	n := int64(0)
	if s.typ == "string" {
		n, _ = strconv.ParseInt(s.value, 10, 64)
	}
	return n
}

// classify recognises the primitive from the snapshot: its kind, whether
// that is a guess, and why; kindNone when nothing is stored under name. A
// key laid out as no primitive is an error wrapping errNotPrimitive; with
// anyHash, a hash of any layout is taken as a lock (a read-write lock with
// a mode field), for unlock -any.
func classify(s *snapshot, name string, forced kind, anyHash bool) (kind, bool, string, error) {
	switch s.typ {
	case "hash":
		return classifyHash(s, name, forced, anyHash)
	case "string":
		return classifyString(s, name, forced)
	case "none":
		return classifyNone(s, name, forced)
	}
	return "", false, "", fmt.Errorf("%q is a Redis %s: %w (locks, read-write locks and rate limiters are hashes; semaphores and latches are strings)", name, s.typ, errNotPrimitive)
}

// classifyHash recognises a hash: a read-write lock (a mode field, read or
// write, and owner fields), a lock (owner fields only; a fair lock when a
// waiting queue or timeouts zset exists too) or a rate limiter's config
// (rate, interval, type, keepAliveTime). An owner field is
// "<client id>:<n>" (a read-write lock's writer "<client id>:<n>:write")
// and holds a hold count, a positive integer. Any other hash is not a
// primitive, unless anyHash. -type lock shows a fair lock as a lock (it is
// one, without its queue); -type fair_lock shows a lock as a fair lock
// with nobody queued.
func classifyHash(s *snapshot, name string, forced kind, anyHash bool) (kind, bool, string, error) {
	if isLimiterHash(s.hash) {
		if forced == "" || forced == kindRateLimiter {
			return kindRateLimiter, false, limiterReason(s.hash), nil
		}
		return "", false, "", fmt.Errorf("%q is a hash with rate, interval and type fields: a rate limiter, not %s", name, forced.withArticle())
	}
	_, rw := s.hash["mode"]
	what := "a hash of owner fields"
	if rw {
		what = "a hash with a mode field"
	}
	if bad, ok := badLockField(s.hash); ok {
		if !anyHash {
			return "", false, "", fmt.Errorf("%q is %w: a hash with %s (a lock's fields are owners \"<client id>:<n>\" holding hold counts, a read-write lock's also a mode read or write; a rate limiter's are rate, interval and type)",
				name, errNotLockHash, fieldsText(s.hash, bad))
		}
		what = fmt.Sprintf("a hash with %s, not a lock's layout; taken as a lock because of -any", fieldsText(s.hash, bad))
		if rw {
			what = fmt.Sprintf("a hash with a mode field and %s, not a read-write lock's layout; taken as one because of -any", fieldsText(s.hash, bad))
		}
	}
	if rw {
		if forced == "" || forced == kindRWLock {
			return kindRWLock, false, what, nil
		}
		return "", false, "", fmt.Errorf("%q is a hash with a mode field: a read-write lock, not %s", name, forced.withArticle())
	}
	fair := s.isFair()
	switch {
	case fair && (forced == "" || forced == kindFair):
		return kindFair, false, what + " and " + fairEvidence(s, name), nil
	case forced == "" || forced == kindLock:
		return kindLock, false, what, nil
	case forced == kindFair:
		return kindFair, false, what + ", set with -type; no waiting queue " + keys.FairQueue(name), nil
	case fair:
		return "", false, "", fmt.Errorf("%q is a hash without a mode field, with a waiting queue: a fair lock, not %s", name, forced.withArticle())
	}
	return "", false, "", fmt.Errorf("%q is a hash without a mode field: a lock, not %s", name, forced.withArticle())
}

// badLockField returns a field of hash that no lock or read-write lock
// has: not an owner holding a positive hold count, nor (with a mode field)
// the mode read or write, nor a writer "<owner>:write". ok is false when
// every field is a lock's.
func badLockField(hash map[string]string) (field string, ok bool) {
	_, rw := hash["mode"]
	for _, f := range sortedFields(hash) {
		v := hash[f]
		switch {
		case rw && f == "mode":
			if v == "read" || v == "write" {
				continue
			}
		case isOwnerField(f) && isHoldCount(v):
			continue
		case rw && isOwnerField(strings.TrimSuffix(f, keys.RWWriteField(""))) && strings.HasSuffix(f, keys.RWWriteField("")) && isHoldCount(v):
			continue
		}
		return f, true
	}
	return "", false
}

// isOwnerField reports whether f is an owner, "<client id>:<n>": a
// non-empty client id (a UUID, or a redisync Client's WithID), a colon,
// and a decimal token (a redisync owner token or a Java thread id).
func isOwnerField(f string) bool {
	i := strings.LastIndexByte(f, ':')
	return i > 0 && isDigits(f[i+1:])
}

// isHoldCount reports whether v is a hold count: a positive integer.
func isHoldCount(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n > 0
}

// limiterFields are the fields of a Redisson RRateLimiter's config hash:
// rate, interval (ms) and type (0 overall, 1 per client) always,
// keepAliveTime (ms) from Redisson 3.44 on.
var limiterFields = []string{"rate", "interval", "type", "keepAliveTime"}

// isLimiterHash reports whether hash is a rate limiter's config: rate,
// interval and type, perhaps keepAliveTime, each an integer, and nothing
// else.
func isLimiterHash(hash map[string]string) bool {
	found := 0
	for _, f := range limiterFields {
		v, ok := hash[f]
		if !ok {
			continue
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return false
		}
		found++
	}
	_, hasKeepAlive := hash["keepAliveTime"]
	return found == len(hash) && (found == 3 && !hasKeepAlive || found == 4)
}

// limiterReason describes a rate limiter's config hash for a report.
func limiterReason(hash map[string]string) string {
	typ := map[string]string{"0": "overall", "1": "per client"}[hash["type"]]
	if typ == "" {
		typ = "type " + hash["type"]
	}
	reason := fmt.Sprintf("a hash of rate %s per interval %s ms, %s", hash["rate"], hash["interval"], typ)
	if ka, ok := hash["keepAliveTime"]; ok {
		reason += ", keepAliveTime " + ka + " ms"
	}
	return reason + ": Redisson's RRateLimiter config"
}

// sortedFields returns hash's fields in order.
func sortedFields(hash map[string]string) []string {
	fs := make([]string, 0, len(hash))
	for f := range hash {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}

// maxFieldsShown bounds how many fields a message about a hash names.
const maxFieldsShown = 4

// fieldsText names a hash's fields for a message, bad first: `fields
// "email", "name" (2 in all)`.
func fieldsText(hash map[string]string, bad string) string {
	shown := []string{strconv.Quote(truncate(bad))}
	for _, f := range sortedFields(hash) {
		if len(shown) == maxFieldsShown {
			break
		}
		if f != bad {
			shown = append(shown, strconv.Quote(truncate(f)))
		}
	}
	if len(hash) == 1 {
		return "field " + shown[0]
	}
	text := "fields " + strings.Join(shown, ", ")
	if len(hash) > len(shown) {
		text += fmt.Sprintf(", … (%d in all)", len(hash))
	}
	return text
}

// fairEvidence names the fair lock's keys that exist, for a reason.
func fairEvidence(s *snapshot, name string) string {
	switch {
	case s.queueType == "list" && s.fairType == "zset":
		return "a waiting queue " + keys.FairQueue(name) + " with its timeouts " + keys.FairTimeouts(name)
	case s.queueType == "list":
		return "a waiting queue " + keys.FairQueue(name)
	}
	return "a waiter timeouts zset " + keys.FairTimeouts(name)
}

// classifyString tells a semaphore, expirable semaphore and latch apart:
// they are all stored as a string holding an integer.
func classifyString(s *snapshot, name string, forced kind) (kind, bool, string, error) {
	n, err := strconv.ParseInt(s.value, 10, 64)
	if err != nil {
		return "", false, "", fmt.Errorf("%q is a string holding %q: %w (a semaphore's or latch's string holds an integer)", name, truncate(s.value), errNotPrimitive)
	}
	if forced.isLock() || forced == kindRateLimiter {
		return "", false, "", fmt.Errorf("%q is a string: a semaphore or latch, not %s", name, forced.withArticle())
	}
	if forced != "" {
		return forced, false, "set with -type", nil
	}
	if s.zsetType == "zset" {
		return kindExpirable, false, "a string with a permit zset " + keys.SemaphoreTimeouts(name), nil
	}
	if n < 0 {
		return kindSemaphore, false, "a negative string value: only a semaphore's permits go below zero", nil
	}
	k, reason := guessCounter(s.subs[keys.SemaphoreChannel(name)], s.subs[keys.LatchChannel(name)])
	return k, true, reason, nil
}

// guessCounter decides between a semaphore and a latch by the waiters on
// their channels.
func guessCounter(semSubs, latchSubs int64) (kind, string) {
	switch {
	case semSubs > 0 && latchSubs == 0:
		return kindSemaphore, fmt.Sprintf("a string, as a semaphore or a latch is; %s on the semaphore channel, none on the latch channel; -type latch if it is a latch", waitText(semSubs))
	case latchSubs > 0 && semSubs == 0:
		return kindLatch, fmt.Sprintf("a string, as a semaphore or a latch is; %s on the latch channel, none on the semaphore channel; -type semaphore if it is a semaphore", waitText(latchSubs))
	case latchSubs > 0:
		return kindSemaphore, "a string, as a semaphore or a latch is, with waiters on both channels; -type latch if it is a latch"
	}
	return kindSemaphore, "a string, as a semaphore or a latch is, and no waiters to tell them apart; -type latch if it is a latch"
}

// classifyNone recognises a primitive whose main key does not exist by
// its other keys (a permit zset, a fair lock's queue, a fencing counter)
// or, failing those, by the one channel that has waiters.
func classifyNone(s *snapshot, name string, forced kind) (kind, bool, string, error) {
	switch {
	case forced != "":
		return forced, false, "set with -type; no key " + name, nil
	case s.zsetType == "zset":
		return kindExpirable, false, "no key (no permits available) and a permit zset " + keys.SemaphoreTimeouts(name), nil
	case s.isFair():
		return kindFair, false, "no key (free) and " + fairEvidence(s, name), nil
	case s.fence != nil:
		return kindLock, false, "no key (free) and a fencing counter " + keys.FenceCounter(name), nil
	}
	var waited []kind
	for _, k := range allKinds {
		if k.ownChannel() && s.subs[k.channel(name)] > 0 {
			waited = append(waited, k)
		}
	}
	if len(waited) == 1 {
		k := waited[0]
		return k, true, fmt.Sprintf("no key, but %s on the %s channel", waitText(s.subs[k.channel(name)]), k.title()), nil
	}
	return kindNone, false, "no key, no permit zset, no fencing counter and no waiters on its channels", nil
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

// rwHolders lists a read-write lock's writer, then its readers with the
// remaining leases of their read holds.
func rwHolders(ctx context.Context, rdb redis.UniversalClient, name string, hash map[string]string) ([]Holder, error) {
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
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Side != hs[j].Side {
			return hs[i].Side == "write"
		}
		return hs[i].Owner < hs[j].Owner
	})
	// The remaining lease of each read hold, in one pipeline.
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
			key := keys.RWTimeoutPrefix(name, hs[i].Owner) + ":" + keys.Itoa(n)
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

// newHolder splits an owner "<client id>:<owner token>" at its last colon.
func newHolder(owner, side string, count int64) Holder {
	h := Holder{Owner: owner, ClientID: owner, Side: side, Count: count}
	if i := strings.LastIndexByte(owner, ':'); i >= 0 && i < len(owner)-1 && isDigits(owner[i+1:]) {
		h.ClientID, h.OwnerToken = owner[:i], owner[i+1:]
	}
	return h
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// permits lists an expirable semaphore's acquired permits, soonest expiry
// first (the zset's order).
func permits(zs []redis.Z, now time.Time) []Permit {
	var ps []Permit
	for _, z := range zs {
		id, _ := z.Member.(string)
		p := Permit{ID: hex.EncodeToString([]byte(id)), TTLMillis: -1}
		if z.Score < neverExpires {
			at := time.UnixMilli(int64(z.Score)).UTC()
			p.ExpiresAt = &at
			p.TTLMillis = at.Sub(now).Milliseconds()
		}
		ps = append(ps, p)
	}
	return ps
}

// writeText prints the report for people.
func (r *Report) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label+":", fmt.Sprintf(format, args...))
	}
	line("name", "%s", r.Name)
	if r.Guessed {
		line("type", "%s (guessed: %s)", r.Type.title(), r.Reason)
	} else {
		line("type", "%s (%s)", r.Type.title(), r.Reason)
	}
	if r.RateLimit != nil {
		r.writeRateLimit(line)
		return tw.Flush()
	}
	switch r.Type {
	case kindLock, kindFair, kindRWLock:
		r.writeHolders(tw)
		if r.Type == kindFair {
			r.writeQueue(tw)
		}
		if r.FenceToken != nil {
			line("fencing", "last fencing token issued %d (%s)", *r.FenceToken, keys.FenceCounter(r.Name))
		}
	case kindSemaphore, kindExpirable:
		r.writePermits(tw)
	case kindRateLimiter:
		switch {
		case !r.Exists:
		case *r.TTLMillis < 0:
			line("expiry", "none: the config stays until deleted")
		default:
			line("expiry", "in %s unless the limiter is used (keepAliveTime)", msText(*r.TTLMillis))
		}
	case kindLatch:
		state := "open"
		if *r.Count > 0 {
			state = "closed"
		}
		line("count", "%d (%s)", *r.Count, state)
	}
	switch {
	case r.Type == kindFair:
		line("waiters", "%s subscribed to the queued owners' channels %s:<owner>", clients(r.Waiters), r.Channel)
	case r.Channel != "":
		line("waiters", "%s subscribed to %s", clients(r.Waiters), r.Channel)
	}
	return tw.Flush()
}

// writeHolders prints a lock's, fair lock's or read-write lock's state and
// holders.
func (r *Report) writeHolders(w io.Writer) {
	state := "free"
	if r.Exists {
		state = fmt.Sprintf("held by %s", plural(owners(r.Holders), "owner"))
		if r.Mode != "" {
			state = fmt.Sprintf("%s-locked, %s", r.Mode, state)
		}
		state += ", " + leaseText(*r.TTLMillis)
	}
	fmt.Fprintf(w, "state:\t%s\n", state)
	for _, h := range r.Holders {
		label := "holder"
		if h.Side != "" {
			label = map[string]string{"read": "reader", "write": "writer"}[h.Side]
		}
		extra := ""
		if len(h.HoldTTLsMillis) > 0 {
			leases := make([]string, len(h.HoldTTLsMillis))
			for i, ms := range h.HoldTTLsMillis {
				leases[i] = msText(ms)
			}
			extra = "\thold leases " + strings.Join(leases, ", ")
		}
		fmt.Fprintf(w, "%s:\tclient %s\towner token %s\tcount %d%s\n", label, h.ClientID, tokenText(h.OwnerToken), h.Count, extra)
	}
}

// tokenText is an owner token as printed: "-" when there is none.
func tokenText(token string) string {
	if token == "" {
		return "-"
	}
	return token
}

// writeQueue prints a fair lock's waiting line, head first, with each
// entry's deadline. The scripts drop dead entries from the head of the
// queue only, so a dead entry behind a live one stays until it is at the
// head.
func (r *Report) writeQueue(w io.Writer) {
	dead := 0
	for _, e := range r.Queue {
		if e.Dead {
			dead++
		}
	}
	switch {
	case len(r.Queue) == 0:
		fmt.Fprintf(w, "queue:\tempty: no owner waits its turn\n")
	case dead == 0:
		fmt.Fprintf(w, "queue:\t%s waiting, head first\n", plural(len(r.Queue), "owner"))
	default:
		fmt.Fprintf(w, "queue:\t%s waiting, head first, %d of them dead\n", plural(len(r.Queue), "owner"), dead)
	}
	atHead := true // no live entry before this one
	for i, e := range r.Queue {
		atHead = atHead && e.Dead
		fmt.Fprintf(w, "queued:\t#%d\tclient %s\towner token %s\t%s\n", i+1, e.ClientID, tokenText(e.OwnerToken), e.deadlineText(atHead))
	}
}

// deadlineText says how long the entry has left, or that it is dead and
// when it goes: atHead is true when only dead entries are before it.
func (e QueueEntry) deadlineText(atHead bool) string {
	if !e.Dead {
		return "deadline in " + msText(e.DeadlineMillisLeft)
	}
	text := "dead: deadline passed " + msText(-e.DeadlineMillisLeft) + " ago"
	if e.noDeadline {
		text = "dead: no deadline"
	}
	if atHead {
		return text + "; the next operation drops it"
	}
	return text + "; dropped once it is at the head"
}

// writePermits prints a semaphore's permits and an expirable semaphore's
// acquired ones.
func (r *Report) writePermits(w io.Writer) {
	avail := fmt.Sprintf("%d available", *r.Permits)
	if r.Type == kindExpirable {
		avail += fmt.Sprintf(", %d acquired", len(r.Acquired))
	}
	fmt.Fprintf(w, "permits:\t%s\n", avail)
	for _, p := range r.Acquired {
		switch {
		case p.ExpiresAt == nil:
			fmt.Fprintf(w, "permit:\t%s\tnever expires\n", p.ID)
		case p.TTLMillis > 0:
			fmt.Fprintf(w, "permit:\t%s\texpires in %s (%s)\n", p.ID, msText(p.TTLMillis), p.ExpiresAt.Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(w, "permit:\t%s\texpired %s ago; returns with the next operation\n", p.ID, msText(-p.TTLMillis))
		}
	}
}

// leaseText describes a key's PTTL.
func leaseText(ms int64) string {
	if ms < 0 {
		return "no expiry"
	}
	return "lease " + msText(ms) + " left"
}

// msText prints milliseconds as a duration; -2 (a missing key) as "gone".
func msText(ms int64) string {
	switch {
	case ms == -2:
		return "gone"
	case ms == -1:
		return "no expiry"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func clients(n int64) string { return plural(int(n), "client") }

// waitText says how many clients wait: "1 client waits", "2 clients wait".
func waitText(n int64) string {
	if n == 1 {
		return "1 client waits"
	}
	return clients(n) + " wait"
}

// owners counts the distinct owners among holders (a writer that also
// holds the read side is one owner).
func owners(hs []Holder) int {
	seen := make(map[string]bool, len(hs))
	for _, h := range hs {
		seen[h.Owner] = true
	}
	return len(seen)
}

// truncate shortens s, a value quoted in a message, to 40 bytes.
func truncate(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
