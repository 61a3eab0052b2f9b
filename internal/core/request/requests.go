package request

import (
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/bg"
)

// Requests is one client's side of exactly-once requests: their ids, their
// deadlines by the server's clock, and the re-sends, settles and undos of
// requests whose reply was lost.
type Requests struct {
	rdb redis.UniversalClient
	log *slog.Logger
	bg  *bg.Group
	ttl time.Duration
	id  string // random, base 36: the part of ID before the sequence number
	seq atomic.Uint64
	// clock is the measured offset to the server's clock (deadline.go).
	clock serverClock
	// undoFailed counts undos that never got an answer (Stats.UndosFailed),
	// releaseFailed lost releases that could not be completed
	// (Stats.ReleasesFailed).
	undoFailed, releaseFailed *atomic.Uint64
	// ledger numbers the counted semaphores' requests (ledger.go), made
	// on first use.
	ledgerOnce sync.Once
	ledger     *Ledger
}

// New returns the requests of a client over rdb (nil: none are sent),
// logging to log, running its background work in g and counting failed
// undos in undoFailed and lost releases it could not complete in
// releaseFailed. It does no I/O.
func New(rdb redis.UniversalClient, log *slog.Logger, g *bg.Group, undoFailed, releaseFailed *atomic.Uint64) *Requests {
	r := &Requests{rdb: rdb, log: log, bg: g, id: strconv.FormatUint(rand.Uint64(), 36),
		undoFailed: undoFailed, releaseFailed: releaseFailed}
	if rdb != nil {
		r.ttl = TTLOf(rdb)
	}
	return r
}

// TTL is how long after it was sent a request may still apply: the time
// go-redis may take to re-send it (TTLOf).
func (r *Requests) TTL() time.Duration { return r.ttl }

// Prefix is the part of every ID before its sequence number, with the dot.
func (r *Requests) Prefix() string { return r.id + "." }

// Next returns the next sequence number of an ID.
func (r *Requests) Next() uint64 { return r.seq.Add(1) }

// ID returns a fresh request id: with keys.Request, the key under
// which a state-changing script records its result. It is a random number
// drawn for the client and a sequence number, both in base 36: short, and
// unique among the clients that share a server while their records live
// (minutes). It never holds ':', so it never equals an owner field
// ("<client id>:<token>"), a fresh hold's request id (see core.Lock).
func (r *Requests) ID() string {
	return r.id + "." + strconv.FormatUint(r.Next(), 36)
}

// TTLOf derives the lifetime of recorded results from the go-redis
// client's retry settings: every attempt may take a write and a read
// timeout plus the back-off before it.
func TTLOf(rdb redis.UniversalClient) time.Duration {
	read, write, retries, backoff := 3*time.Second, 3*time.Second, 3, 512*time.Millisecond
	set := func(r, w time.Duration, n int, b time.Duration) {
		if r > 0 {
			read = r
		}
		if w > 0 {
			write = w
		}
		if n != 0 {
			retries = max(n, 0)
		}
		if b > 0 {
			backoff = b
		}
	}
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.MaxRetryBackoff)
	case *redis.ClusterClient:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, max(o.MaxRetries, o.MaxRedirects), o.MaxRetryBackoff)
	case *redis.Ring:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.MaxRetryBackoff)
	}
	ttl := time.Duration(retries+1)*(read+write+backoff) + time.Second
	return min(max(ttl, MinTTL), MaxTTL)
}

// The bounds of every client's request lifetime (TTLOf): no request
// is applied later than MaxTTL after it was sent.
const (
	MinTTL = 5 * time.Second
	MaxTTL = 5 * time.Minute
)
