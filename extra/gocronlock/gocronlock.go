package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// ErrNotLeader is returned by Elector.IsLeader when this scheduler does
// not lead.
var ErrNotLeader = errors.New("gocronlock: not the leader")

// Option configures a Locker.
type Option func(*Locker)

// WithKeyPrefix sets what is put before a job's name to make its lock's
// name. The default is "gocron:".
func WithKeyPrefix(prefix string) Option { return func(l *Locker) { l.prefix = prefix } }

// WithMinHold holds every job's lock at least d from its acquisition
// (rlock.WithMinHold). The default is no minimum hold; ForInterval sets
// one from a job's interval.
func WithMinHold(d time.Duration) Option { return func(l *Locker) { l.minHold = d } }

// WithLease gives every job's lock a watchdog lease of its own
// (rlock.WithWatchdogTimeout): a scheduler that dies mid-job frees the
// job within d, and a tick that falls within it is skipped. The default
// is the Client's watchdog timeout.
func WithLease(d time.Duration) Option { return func(l *Locker) { l.lease = d } }

// Locker is a gocron.Locker on redisync: one rlock.Lock per job name,
// taken with a single attempt (a scheduler that finds it taken skips the
// tick).
type Locker struct {
	c       *redisync.Client
	prefix  string
	minHold time.Duration
	lease   time.Duration
}

// NewLocker returns a Locker on c. It does no I/O.
func NewLocker(c *redisync.Client, opts ...Option) *Locker {
	l := &Locker{c: c, prefix: "gocron:"}
	for _, o := range opts {
		if o != nil {
			o(l)
		}
	}
	return l
}

// ForInterval returns a copy of l whose locks are held at least half of
// every (the job's interval): schedulers whose clocks differ by less than
// every/2 run each tick once, and the lock is free before the next tick.
// Give it to the job with gocron.WithDistributedJobLocker.
func (l *Locker) ForInterval(every time.Duration) *Locker {
	cp := *l
	cp.minHold = every / 2
	return &cp
}

// Lock takes the job's lock in one attempt. It returns an error wrapping
// ErrJobTaken when another scheduler holds it, so that gocron skips the
// run, and any other error when Redis could not be asked (the run is
// skipped too). With a minimum hold, an attempt that has not succeeded
// within half of it gives up (and its acquisition, if it was on its way,
// is undone): a scheduler that slow could take the lock after the
// minimum hold of the run that took this tick, and run the tick again.
// Cutting a request on its way needs a go-redis client with
// ContextTimeoutEnabled.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	var opts []rlock.Option
	if l.lease > 0 {
		opts = append(opts, rlock.WithWatchdogTimeout(l.lease))
	}
	if l.minHold > 0 {
		opts = append(opts, rlock.WithMinHold(l.minHold))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.minHold/2)
		defer cancel()
	}
	lk := rlock.New(l.c, l.prefix+key, opts...)
	ok, err := lk.TryLock(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, ErrJobTaken)
	}
	return &jobLock{lk: lk}, nil
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
