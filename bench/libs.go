package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// mutex is one goroutine's handle on a lock of one library. Lock waits
// with the library's waiting strategy until it holds the lock or ctx ends.
type mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// session is one library's client over one go-redis client: the handles
// it makes share that client, as the goroutines of one process would.
type session interface {
	mutex(key string) mutex
	close()
}

// library describes one contender.
type library struct {
	name string // as in results.json
	wait string // its waiting strategy, for the notes of the waiting scenarios
	// note is shown in the notes of its rows in the scenarios where
	// nobody waits (a reference's "not a lock").
	note string
	// waitingAfter is how many requests a Lock call that finds the lock
	// taken has completed once it is waiting: redisync's lock and fair
	// lock try, subscribe (not counted: pub/sub bypasses hooks) and try
	// again; its spin lock tries once; redsync sends SET NX and then its
	// release script; redislock sends its obtain script; rueidislock its
	// acquisition script for the first of its three keys.
	waitingAfter int64
	// open makes a session over c (the go-redis libraries use c.rdb;
	// rueidislock opens a rueidis client of its own to c.addr and counts
	// its requests in c.cnt). gaveUp counts the library's lock calls that
	// returned without the lock before ctx ended and were called again
	// (redsync after its 32 tries, redislock with a retry strategy when it
	// ran out).
	open func(c conn, gaveUp *atomic.Int64) (session, error)
}

// conn is one client's connection to the server: a go-redis client with a
// counting hook, and the address, for libraries that bring their own
// client.
type conn struct {
	addr string
	rdb  *redis.Client
	cnt  *counter
}

// replicaRun is set when the tool's server has a replica (-replica): the
// uncontended and handoff rows then compare redisync with and without
// replica acknowledgement.
var replicaRun bool

// leaseTTL is the lease of redsync (its default expiry) and of redislock
// (which has no default), so that neither expires during a measurement.
// redisync uses its default: the watchdog (30 s lease, renewed every 10 s).
const leaseTTL = 8 * time.Second

// lockLibraries returns the contenders of lock scenario sc. redisync runs
// its plain lock and its spin lock (which polls, as the peers do) in every
// one, and its fair lock in the uncontended and contended ones: handoff has
// a single waiter, so there is no order to keep, and is left out to keep
// the run short. Uncontended runs, and many-locks (every goroutine on a
// lock of its own), need no waiting strategy, so redislock appears there
// once, as "redislock"; the waiting scenarios run both of its strategies.
// rueidislock runs in every one. The references that are no peers come
// last: the handoff scenario ends with the pub/sub floor (floorLib), the
// uncontended and many-locks ones with the redisson-floor
// (redissonFloorLib).
func lockLibraries(sc string) []library {
	plain := library{
		name:         "redisync",
		wait:         "pub/sub (default)",
		waitingAfter: 2,
		open:         openRedisync(newPlain),
	}
	fair := library{
		name: "redisync-fair",
		wait: "FIFO queue; pub/sub to the queue's head only",
		// Tries (joining the queue), subscribes (not counted), tries again.
		waitingAfter: 2,
		open:         openRedisync(newFair),
	}
	spin := library{
		name:         "redisync-spin",
		wait:         "retry after 1, 2, 4 … 128 ms (upper half at random; default)",
		waitingAfter: 1,
		open:         openRedisync(newSpin),
	}
	redsyncLib := library{
		name:         "redsync",
		wait:         "retry every rand(50–250) ms, 32 tries (default)",
		waitingAfter: 2,
		open:         openRedsync,
	}
	rueidis := rueidislockLib()
	if replicaRun && (sc == scUncontended || sc == scHandoff) {
		// The cost of replica acknowledgement: the lock as "redisync"
		// (on by default) and with it off.
		nosync := library{
			name:         "redisync-nosync",
			wait:         "pub/sub (default), WithReplicaSync(0, 0)",
			waitingAfter: 2,
			open: func(c conn, _ *atomic.Int64) (session, error) {
				return &redisyncSession{c: newRedisync(c.rdb, redisync.WithReplicaSync(0, 0)), kind: newPlain}, nil
			},
		}
		if sc == scHandoff {
			return []library{plain, nosync, floorLib()}
		}
		return []library{plain, nosync, {
			name:         "redislock",
			waitingAfter: 1,
			open:         func(c conn, _ *atomic.Int64) (session, error) { return openRedislock(c.rdb, nil, nil), nil },
		}, redissonFloorLib()}
	}
	switch sc {
	case scUncontended, scManyLocks:
		return []library{plain, fair, spin, redsyncLib, {
			name:         "redislock",
			wait:         "",
			waitingAfter: 1,
			open:         func(c conn, _ *atomic.Int64) (session, error) { return openRedislock(c.rdb, nil, nil), nil },
		}, autoPipelinedRedislock(), rueidis, redissonFloorLib()}
	case scHandoff:
		return append(append([]library{plain, spin, redsyncLib}, redislockWaiting()...), rueidis, floorLib())
	}
	return append(append([]library{plain, fair, spin, redsyncLib}, redislockWaiting()...), rueidis)
}

// redislockWaiting returns redislock with a 10 ms linear backoff and with
// its default strategy.
func redislockWaiting() []library {
	return []library{
		{
			name:         "redislock-linear10ms",
			wait:         "LinearBackoff(10 ms)",
			waitingAfter: 1,
			open: func(c conn, gaveUp *atomic.Int64) (session, error) {
				return openRedislock(c.rdb, redislock.LinearBackoff(10*time.Millisecond), gaveUp), nil
			},
		},
		{
			name:         "redislock-default",
			wait:         "NoRetry (default): Obtain again at once, a spin",
			waitingAfter: 1,
			open:         func(c conn, _ *atomic.Int64) (session, error) { return openRedislock(c.rdb, nil, nil), nil },
		},
	}
}

// --- redisync --------------------------------------------------------------

// redisyncSession makes handles of one lock kind over one redisync client.
type redisyncSession struct {
	c    *redisync.Client
	kind func(c *redisync.Client, key string) mutex
}

// openRedisync returns the open function of a redisync lock kind.
func openRedisync(kind func(c *redisync.Client, key string) mutex) func(conn, *atomic.Int64) (session, error) {
	return func(c conn, _ *atomic.Int64) (session, error) {
		return &redisyncSession{c: newRedisync(c.rdb), kind: kind}, nil
	}
}

// The lock kinds, with their defaults.
func newPlain(c *redisync.Client, key string) mutex { return rlock.New(c, key) }
func newFair(c *redisync.Client, key string) mutex  { return rlock.NewFair(c, key) }
func newSpin(c *redisync.Client, key string) mutex  { return rlock.NewSpin(c, key) }

// mutex returns a new handle: each goroutine gets one, and, used without a
// context owner, each handle is its own owner, as each goroutine of the
// peers is with its own mutex.
func (s *redisyncSession) mutex(key string) mutex { return s.kind(s.c, key) }
func (s *redisyncSession) close()                 { _ = s.c.Close() }

// redisyncClients opens n redisync clients, each over a go-redis client of
// its own.
type redisyncClients struct {
	rdbs     []*redis.Client
	counters []*counter
	clients  []*redisync.Client
}

func (b *bench) openRedisyncClients(n int) *redisyncClients {
	r := &redisyncClients{}
	for range n {
		rdb, cnt := newClient(b.addr)
		r.rdbs = append(r.rdbs, rdb)
		r.counters = append(r.counters, cnt)
		r.clients = append(r.clients, newRedisync(rdb))
	}
	return r
}

func (r *redisyncClients) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
	for _, rdb := range r.rdbs {
		_ = rdb.Close()
	}
}

// completed returns the requests the clients have had answered, and
// whether none is in flight.
func (r *redisyncClients) completed() (int64, bool) {
	var n int64
	idle := true
	for _, c := range r.counters {
		n += c.completed.Load()
		if c.inFlight() != 0 {
			idle = false
		}
	}
	return n, idle
}

// --- redsync ---------------------------------------------------------------

type redsyncSession struct {
	rs     *redsync.Redsync
	gaveUp *atomic.Int64
}

func openRedsync(c conn, gaveUp *atomic.Int64) (session, error) {
	return &redsyncSession{rs: redsync.New(redsyncgoredis.NewPool(c.rdb)), gaveUp: gaveUp}, nil
}

func (s *redsyncSession) mutex(key string) mutex {
	return &redsyncMutex{m: s.rs.NewMutex(key), gaveUp: s.gaveUp}
}
func (s *redsyncSession) close() {}

type redsyncMutex struct {
	m      *redsync.Mutex
	gaveUp *atomic.Int64
}

// Lock calls LockContext (default 32 tries, rand(50,250) ms apart) until it
// succeeds or ctx ends: after its tries are spent redsync returns ErrFailed
// or *ErrTaken, and a caller that needs the lock calls again.
func (m *redsyncMutex) Lock(ctx context.Context) error {
	for {
		err := m.m.LockContext(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redsync: %w", ctx.Err())
		}
		var taken *redsync.ErrTaken
		if !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
			return fmt.Errorf("redsync: %w", err)
		}
		if m.gaveUp != nil {
			m.gaveUp.Add(1)
		}
	}
}

func (m *redsyncMutex) Unlock(ctx context.Context) error {
	ok, err := m.m.UnlockContext(ctx)
	if err != nil {
		return fmt.Errorf("redsync: unlock: %w", err)
	}
	if !ok {
		return errors.New("redsync: unlock: not held")
	}
	return nil
}

// --- redislock -------------------------------------------------------------

type redislockSession struct {
	c      *redislock.Client
	opts   *redislock.Options
	gaveUp *atomic.Int64
}

// openRedislock returns a redislock session; strategy nil is the default
// (NoRetry).
func openRedislock(rdb *redis.Client, strategy redislock.RetryStrategy, gaveUp *atomic.Int64) session {
	s := &redislockSession{c: redislock.New(rdb), gaveUp: gaveUp}
	if strategy != nil {
		s.opts = &redislock.Options{RetryStrategy: strategy}
	}
	return s
}

func (s *redislockSession) mutex(key string) mutex {
	return &redislockMutex{s: s, key: key}
}
func (s *redislockSession) close() {}

type redislockMutex struct {
	s    *redislockSession
	key  string
	lock *redislock.Lock
}

// Lock calls Obtain until it succeeds or ctx ends. With the default
// strategy Obtain makes one attempt, and this loop calls it again at once;
// with a retry strategy Obtain retries until ctx's deadline (or, with no
// deadline, for the lease), and this loop calls it again after that.
func (m *redislockMutex) Lock(ctx context.Context) error {
	for {
		l, err := m.s.c.Obtain(ctx, m.key, leaseTTL, m.s.opts)
		if err == nil {
			m.lock = l
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redislock: %w", ctx.Err())
		}
		if !errors.Is(err, redislock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("redislock: %w", err)
		}
		if m.s.gaveUp != nil {
			m.s.gaveUp.Add(1)
		}
	}
}

func (m *redislockMutex) Unlock(ctx context.Context) error {
	if m.lock == nil {
		return redislock.ErrLockNotHeld
	}
	err := m.lock.Release(ctx)
	m.lock = nil
	if err != nil {
		return fmt.Errorf("redislock: release: %w", err)
	}
	return nil
}
