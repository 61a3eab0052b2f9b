package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/rlock"
)

// ErrJobTaken is returned by Locker.Lock when another scheduler holds
// the job's lock: it runs the job at this tick, or ran it within the
// minimum hold.
var ErrJobTaken = errors.New("gocronlock: job taken by another scheduler")

// ErrLockLate is returned by Locker.Lock, beside ErrJobTaken (errors.Is
// matches both), when the job's lock was taken but its reply came past
// half the minimum hold: too late to trust the tick to this scheduler, so
// the lock is given back and the run skipped. It tells a slow Redis (a
// replica acknowledging late, a request go-redis did not cut) from
// another scheduler's run.
var ErrLockLate = errors.New("gocronlock: the job's lock came too late to trust this tick to the scheduler")

// ErrNotLeader is returned by Elector.IsLeader when this scheduler does
// not lead.
var ErrNotLeader = errors.New("gocronlock: not the leader")

// Option configures a Locker.
type Option func(*Locker)

// WithLockPrefix sets what is put before a job's name to make its lock's
// name: the job "report" is locked as the rlock.Lock "gocron:report" by
// default. It is not the Client's key prefix (redisync.WithKeyPrefix),
// which goes before every key the Client derives, this lock's included.
// The default is "gocron:".
func WithLockPrefix(prefix string) Option { return func(l *Locker) { l.prefix = prefix } }

// WithMinHold holds every job's lock at least d from its acquisition
// (rlock.WithMinHold). The default is no minimum hold; ForInterval sets
// one from a job's interval.
func WithMinHold(d time.Duration) Option { return func(l *Locker) { l.minHold = d } }

// WithLease gives every job's lock a watchdog lease of its own
// (rlock.WithWatchdogTimeout): a scheduler that dies mid-job frees the
// job within d, and a tick that falls within it is skipped. The default
// is the job's interval for a Locker made by ForInterval, else the
// Client's watchdog timeout.
func WithLease(d time.Duration) Option { return func(l *Locker) { l.lease = d } }

// WithOnUnrun calls f when a Locker made by ForInterval finds a job's
// lock held by a run of an earlier tick: a run still going past its
// interval, or a scheduler that died while running it and whose lease has
// not run out. Then no scheduler runs this tick. f gets the job's name
// and when the holding run took the lock; it runs on gocron's goroutine
// before Lock returns, so keep it short (count, log, alert). Every
// scheduler that finds the tick unrun calls it (and counts it: Unrun).
func WithOnUnrun(f func(job string, heldSince time.Time)) Option {
	return func(l *Locker) { l.onUnrun = f }
}

// Locker is a gocron.Locker on redisync: one rlock.Lock per job name,
// taken with a single attempt (a scheduler that finds it taken skips the
// tick).
type Locker struct {
	c       *redisync.Client
	prefix  string
	minHold time.Duration
	lease   time.Duration
	every   time.Duration // ForInterval's interval; 0: none
	onUnrun func(job string, heldSince time.Time)
	unrun   *atomic.Int64 // shared by the copies ForInterval makes
}

// NewLocker returns a Locker on c. It does no I/O.
func NewLocker(c *redisync.Client, opts ...Option) *Locker {
	l := &Locker{c: c, prefix: "gocron:", unrun: new(atomic.Int64)}
	for _, o := range opts {
		if o != nil {
			o(l)
		}
	}
	return l
}

// ForInterval returns a copy of l for jobs that run every interval. Their
// locks are held at least half of every: schedulers whose clocks differ
// by less than every/2 run each tick once, and the lock is free before
// the next tick. Unless WithLease set one, the locks' watchdog lease is
// every: a scheduler killed during a run frees the job within one
// interval of its last renewal, so a kill delays the next run by at most
// about one interval (never the Client's whole lease). The locks are
// fenced (rlock.WithFencing), which tells a lock taken at this tick from
// one still held by a run of an earlier tick: such a tick runs nowhere,
// and is counted (Unrun) and reported (WithOnUnrun). Give it to the job
// with gocron.WithDistributedJobLocker.
func (l *Locker) ForInterval(every time.Duration) *Locker {
	cp := *l
	cp.minHold = every / 2
	cp.every = every
	if cp.lease == 0 {
		cp.lease = every
	}
	return &cp
}

// Unrun returns how many ticks this Locker (and the copies ForInterval
// made of it) found unrun: the job's lock held by a run of an earlier
// tick (see WithOnUnrun). An alert on its growth catches a job stuck or a
// scheduler dead while running it.
func (l *Locker) Unrun() int64 { return l.unrun.Load() }

// Lock takes the job's lock in one attempt. It returns an error wrapping
// ErrJobTaken when another scheduler holds it, so that gocron skips the
// run, and any other error when Redis could not be asked (the run is
// skipped too). With a minimum hold, an attempt that has not succeeded
// within half of it gives up (and its acquisition, if it was on its way,
// is undone): a scheduler that slow could take the lock after the
// minimum hold of the run that took this tick, and run the tick again.
// A lock whose reply came later than that all the same (a request not cut
// at its deadline) is given back and the run skipped, with ErrJobTaken and
// ErrLockLate.
// Cutting a request on its way needs a go-redis client with
// ContextTimeoutEnabled.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	var opts []rlock.Option
	if l.lease > 0 {
		opts = append(opts, rlock.WithWatchdogTimeout(l.lease))
	}
	if l.every > 0 {
		opts = append(opts, rlock.WithFencing())
	}
	if l.minHold > 0 {
		opts = append(opts, rlock.WithMinHold(l.minHold))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.minHold/2)
		defer cancel()
	}
	lk := rlock.New(l.c, l.prefix+key, opts...)
	start := time.Now()
	ok, err := lk.TryLock(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, err)
	}
	if !ok {
		l.checkUnrun(ctx, lk, key)
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, ErrJobTaken)
	}
	if late := time.Since(start); l.minHold > 0 && late > l.minHold/2 {
		// The reply came too late to trust the tick to this scheduler (a
		// request go-redis did not cut at ctx's deadline: without
		// ContextTimeoutEnabled): another may have run it already, past
		// this hold's minimum hold. The hold is given back (it stays until
		// its minimum hold ends) and the run skipped.
		_ = lk.Unlock(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("gocronlock: job %q: the lock came %v after the call, past half the minimum hold: %w: %w", key, late.Round(time.Millisecond), ErrLockLate, ErrJobTaken)
	}
	return &jobLock{lk: lk}, nil
}

// checkUnrun counts and reports the tick as unrun when the job's lock
// (lk, found taken) is held by a run of an earlier tick. A fenced lock's
// token is never below the Redis server's clock, in microseconds, when
// it was issued (docs/fencing.md): the holding run took the lock
// then, as the server's clock (TIME) tells. Taken more than half an interval ago, it is not this tick's run
// (that one takes it within the clock splay ForInterval allows).
func (l *Locker) checkUnrun(ctx context.Context, lk *rlock.Lock, key string) {
	if l.every <= 0 {
		return
	}
	info, err := lk.Inspect(ctx)
	if err != nil || len(info.Holders) == 0 || info.FencingToken <= 0 {
		return // freed meanwhile, or Redis cannot say
	}
	// The token is by the server's clock: compare it with the server's
	// clock, not this scheduler's, which may be off by more than the
	// splay.
	now, err := l.c.Redis().Time(ctx).Result()
	if err != nil {
		return
	}
	since := time.UnixMicro(info.FencingToken)
	if now.Sub(since) <= l.every/2 {
		return // this tick's run
	}
	l.unrun.Add(1)
	if l.onUnrun != nil {
		l.onUnrun(key, since)
	}
}

// jobLock is one run's hold of a job's lock.
type jobLock struct{ lk *rlock.Lock }

// Unlock releases the job's lock; within the minimum hold it stays until
// the minimum hold ends. It runs even when ctx is cancelled.
func (j *jobLock) Unlock(ctx context.Context) error { return j.lk.Unlock(ctx) }

// Elector is a gocron.Elector on a redisync election: it campaigns from
// NewElector until Close, and IsLeader reports whether it leads now.
type Elector struct {
	e      *election.Election
	value  string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	leader *election.Leadership
}

// NewElector starts campaigning in the election called name on c, with
// value (what election.Leader reports while this scheduler leads, e.g. its
// host name), until Close. It campaigns again whenever its leadership
// ends. opts configure the election (election.WithLease).
func NewElector(c *redisync.Client, name, value string, opts ...election.Option) *Elector {
	ctx, cancel := context.WithCancel(context.Background())
	el := &Elector{e: election.New(c, name, opts...), value: value, cancel: cancel, done: make(chan struct{})}
	go el.run(ctx)
	return el
}

// run campaigns until ctx ends.
func (el *Elector) run(ctx context.Context) {
	defer close(el.done)
	for ctx.Err() == nil {
		l, err := el.e.Campaign(ctx, el.value)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redisync.ErrClosed) || errors.Is(err, redisync.ErrInvalidArgument) {
				return
			}
			t := time.NewTimer(time.Second) // Redis unreachable: try again soon
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		el.mu.Lock()
		el.leader = l
		el.mu.Unlock()
		select {
		case <-l.Done():
		case <-ctx.Done():
			_ = l.Resign(context.Background())
		}
		el.mu.Lock()
		el.leader = nil
		el.mu.Unlock()
	}
}

// IsLeader returns nil while this scheduler leads, else an error wrapping
// ErrNotLeader. It sends nothing to Redis: the leadership's state is
// local, and ends by this process's clock before another scheduler can
// lead.
func (el *Elector) IsLeader(context.Context) error {
	el.mu.Lock()
	l := el.leader
	el.mu.Unlock()
	if l == nil || l.Err() != nil {
		return ErrNotLeader
	}
	return nil
}

// Leadership returns the current leadership, nil when this scheduler does
// not lead: run a job's work under its Context to stop it when the
// leadership ends, and fence writes with its Term.
func (el *Elector) Leadership() *election.Leadership {
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.leader == nil || el.leader.Err() != nil {
		return nil
	}
	return el.leader
}

// Close stops campaigning and resigns the leadership, if any; the next
// scheduler leads at once.
func (el *Elector) Close() error {
	el.cancel()
	<-el.done
	return nil
}

var (
	_ gocron.Locker  = (*Locker)(nil)
	_ gocron.Elector = (*Elector)(nil)
)
