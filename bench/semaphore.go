package main

import (
	"context"
	"fmt"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/semaphore"
)

// permit adapts a semaphore handle to the mutex interface: one permit.
type permit struct{ s *semaphore.Semaphore }

func (p permit) Lock(ctx context.Context) error   { return p.s.Acquire(ctx, 1) }
func (p permit) Unlock(ctx context.Context) error { return p.s.Release(ctx, 1) }

// newPermit is the lock kind of the clients-one-semaphore rows: a handle
// on semaphore key, one permit at a time.
func newPermit(c *redisync.Client, key string) mutex { return permit{semaphore.New(c, key)} }

// semaphore measures acquisitions per second of a semaphore with Permits
// permits under Goroutines contenders spread over Clients clients, each
// holding its permit for SemaphoreHold.
func (b *bench) semaphore(ctx context.Context) (Result, error) {
	rc := b.openRedisyncClients(b.cfg.Clients)
	defer rc.close()
	key := b.key("redisync", scSemaphore)
	ok, err := semaphore.New(rc.clients[0], key).TrySetPermits(ctx, int64(b.cfg.Permits))
	if err != nil {
		return Result{}, fmt.Errorf("set permits: %w", err)
	}
	if !ok {
		return Result{}, fmt.Errorf("semaphore %q already set", key)
	}
	mutexes := make([]mutex, b.cfg.Goroutines)
	for g := range mutexes {
		mutexes[g] = permit{semaphore.New(rc.clients[g%len(rc.clients)], key)}
	}
	hold := b.cfg.SemaphoreHold
	if _, err := contend(ctx, mutexes, b.cfg.warmup, hold); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	sp, err := beginSpan(ctx, b.meter, rc.counters)
	if err != nil {
		return Result{}, err
	}
	cr, err := contend(ctx, mutexes, b.cfg.Duration, hold)
	if err != nil {
		return Result{}, err
	}
	ops := cr.acquisitions
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Library:   "redisync",
		Scenario:  scSemaphore,
		OpsPerSec: f(float64(ops) / b.cfg.Duration.Seconds()),
		Op: fmt.Sprintf("one permit acquisition: %d permits, %d goroutines over %d clients, each holding its permit %v",
			b.cfg.Permits, b.cfg.Goroutines, b.cfg.Clients, hold),
		Latency: "wait for a permit, from the Acquire call to its return",
		Ops:     ops,
		Seconds: round4(b.cfg.Duration.Seconds()),
		Wait:    "pub/sub (one process woken per release: the semaphore's queue of waiting Clients)",
	}
	res.quantiles(cr.waits)
	res.perOp(u, ops)
	cr.fairness(&res)
	return res, nil
}
