package hold

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/replica"
)

// Holds are one client's live holds, one per Key, and the watchdog
// that renews them.
type Holds struct {
	mu      sync.Mutex
	m       map[Key]*Hold
	wd      watchdog
	closing <-chan struct{}
	log     *slog.Logger
	obs     Observer
}

// Config is what a client's holds need from it.
type Config struct {
	Redis    redis.UniversalClient
	Cluster  bool              // Redis is a Cluster client: renewals batch per slot
	Lease    time.Duration     // the lease of watchdog-renewed holds (WatchdogTimeout)
	Replicas *replica.Replicas // renewals wait for replicas as acquisitions do
	Closing  <-chan struct{}   // closed when the client closes: renewals stop
	Log      *slog.Logger
	Observer Observer
	// LeaseMillis is Lease in whole milliseconds, rounded up (core.Millis);
	// AckMillis bounds a renewal's WAIT for replicas, at least 1.
	LeaseMillis, AckMillis int64
}

// New returns a client's holds, none live. It does no I/O.
func New(cfg Config) *Holds {
	hs := &Holds{m: make(map[Key]*Hold), closing: cfg.Closing, log: cfg.Log, obs: cfg.Observer}
	hs.wd = watchdog{hs: hs, rdb: cfg.Redis, cluster: cfg.Cluster, lease: cfg.Lease, replicas: cfg.Replicas,
		leaseMillis: cfg.LeaseMillis, ackMillis: cfg.AckMillis}
	return hs
}

// Observer hears what the holds of a client do: core's client counts and
// reports it (Stats, hooks) and keeps its local lines.
type Observer interface {
	// Ending is told first when h ends; lost: not by a release that took
	// effect (h leaves its local line, whose head may have to be woken).
	Ending(h *Hold, lost bool)
	// Ended is told when h has ended with err, before Done closes.
	Ended(h *Hold, err error)
	// Renewed is told of each watchdog round.
	Renewed(t RenewalTick)
	// NotReplicated is told of n renewals the primary's replicas did not
	// acknowledge in time.
	NotReplicated(n int)
}

// RenewalTick describes one watchdog round.
type RenewalTick struct {
	Renewed  int // holds renewed
	Failed   int // holds whose renewal call failed with an error; retried soon
	Lost     int // holds found gone, or not renewed within their lease: lost
	Duration time.Duration
}

// Acquired is AcquiredAs, unlabelled and without a fencing token, with
// the current time as the send time.
func (hs *Holds) Acquired(key Key, count int64, lease time.Duration, renew *RenewSpec) *Hold {
	return hs.AcquiredAs("", time.Now(), key, count, 0, lease, renew)
}

// AcquiredAs records a successful acquisition of key by this client, after
// which the owner's hold count is count, as this client counts it (the
// script set it in Redis). sent is when the acquiring command was sent:
// Redis started the lease after that, so a local deadline counted from sent
// ends no later than the lease in Redis (Done closes before another owner
// can take the lock, never after). Without a live hold it starts one;
// otherwise it extends the live one. lease is what Redis was given; renew is
// nil for a fixed lease, which then ends by itself when the lease runs out.
// The caller serializes the owner's operations (ownerLocks).
//
// label names the primitive and side for observers (HoldEnd; "" when
// nobody observes). fence is the fencing token the acquisition took; it
// becomes the hold's when the acquisition starts the hold, and is ignored
// for a re-entry (the hold keeps its token).
func (hs *Holds) AcquiredAs(label string, sent time.Time, key Key, count, fence int64, lease time.Duration, renew *RenewSpec) *Hold {
	hs.mu.Lock()
	h := hs.m[key]
	if h == nil {
		h = &Hold{hs: hs, key: key, renew: renew, lease: lease, fence: fence, lastOK: sent, start: sent, primitive: label}
		hs.m[key] = h
	}
	hs.mu.Unlock()

	h.mu.Lock()
	h.count = count
	h.lease = lease
	if h.renew == nil {
		h.resetTimerLocked(sent)
	} else if sent.After(h.lastOK) {
		h.lastOK = sent // a reentrant acquisition re-set the lease too
	}
	startRenewal := h.renew != nil && !h.renewing
	if startRenewal {
		h.renewing = true
	}
	h.mu.Unlock()
	if startRenewal {
		hs.wd.add(h)
	}
	select {
	case <-hs.closing: // Close raced with the acquisition: no renewal will come
		h.end(fmt.Errorf("%w: client closed, renewal stopped (%w)", errs.ErrLockLost, errs.ErrClosed))
	default:
	}
	return h
}

// Live returns key's live hold in this client, or nil.
func (hs *Holds) Live(key Key) *Hold {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.m[key]
}

// Count returns the owner's hold count on key as this client counts it:
// 0 without a live hold.
func (hs *Holds) Count(key Key) int64 {
	h := hs.Live(key)
	if h == nil {
		return 0
	}
	return h.Count()
}

// End ends key's live hold, if any, with err.
func (hs *Holds) End(key Key, err error) {
	if h := hs.Live(key); h != nil {
		h.end(err)
	}
}

// Lower runs release, which sends a release of key that sets the owner's
// count to count and reports the owner's remaining count (negative: Redis
// did not have the hold). When count is 0 the hold's renewal stops before
// the release is sent, whatever its outcome.
//
// This client's count is the authority: it becomes count whatever the
// outcome. After a failed release (no reply) the hold ends when count is 0,
// and Redis keeps the stale count only until its lease runs out, never
// renewed and never adopted by a later acquisition; when count is above 0
// the hold goes on with count, and the next renewal sets it in Redis. When
// Redis says it did not have the hold, the hold was lost.
func (hs *Holds) Lower(key Key, count int64, release func() (int64, error)) (int64, error) {
	h := hs.Live(key)
	if h != nil && count == 0 {
		h.mu.Lock()
		stopped := h.renewing
		h.renewing = false
		h.mu.Unlock()
		if stopped {
			hs.wd.remove(h)
		}
	}
	sent := time.Now()
	remaining, err := release()
	if h == nil {
		return remaining, err
	}
	switch {
	case err != nil && count == 0:
		h.end(fmt.Errorf("%w: released by this client; the release failed (%v), so Redis keeps the hold until its lease ends", errs.ErrNotHeld, err))
	case err != nil:
		h.setCount(count, time.Time{})
	case remaining < 0:
		h.end(fmt.Errorf("%w: Redis no longer had it at release", errs.ErrLockLost))
	case remaining == 0:
		h.end(errs.ErrNotHeld)
	default:
		h.setCount(remaining, sent)
	}
	return remaining, err
}

// EndAll ends every live hold of this client on the Redis key (any owner)
// with err: for ForceUnlock and Delete, which remove the key whoever holds
// it. An empty key ends every live hold (Close).
func (hs *Holds) EndAll(key string, err error) {
	hs.mu.Lock()
	var ended []*Hold
	for k, h := range hs.m {
		if key == "" || k.Key == key {
			ended = append(ended, h)
		}
	}
	hs.mu.Unlock()
	for _, h := range ended {
		h.end(err)
	}
}

// Len returns the number of live holds.
func (hs *Holds) Len() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.m)
}

// Wait waits for the watchdog's goroutine to stop once the client closes.
func (hs *Holds) Wait() { hs.wd.wait() }
