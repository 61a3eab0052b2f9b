package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/semaphore"
)

// semaphoreCap: five jobs in five processes share two permits; never more
// than two run at once.
func (d *demo) semaphoreCap(ctx context.Context) error {
	const short, permits, jobs, work = "pool", 2, 5, 500 * time.Millisecond
	name := d.key(short)
	ps, stop := d.procsN(jobs)
	defer stop()

	ok, err := semaphore.New(ps[0].c, name).TrySetPermits(ctx, permits)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: semaphore %q was already set", errDemo, short)
	}
	d.logf(ps[0].name, "sets semaphore %q to %d permits", short, permits)
	d.stats.semPermits, d.stats.semJobs = permits, jobs

	var mu sync.Mutex
	running := 0
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range ps {
		g.Go(func() error {
			if err := sleep(gctx, time.Duration(i)*40*time.Millisecond); err != nil {
				return err
			}
			s := semaphore.New(p.c, name)
			t0 := time.Now()
			ok, err := s.TryAcquire(gctx, 1, 0)
			if err != nil {
				return err
			}
			if !ok {
				d.logf(p.name, "wants a permit: none left, waits")
				if err := s.Acquire(gctx, 1); err != nil {
					return err
				}
			}
			mu.Lock()
			running++
			n := running
			d.stats.semMax = max(d.stats.semMax, n)
			mu.Unlock()
			if n > permits {
				return fmt.Errorf("%w: %d jobs ran at once with %d permits", errDemo, n, permits)
			}
			if ok {
				d.logf(p.name, "acquires a permit at once: %d of %d jobs running", n, permits)
			} else {
				d.logf(p.name, "acquires a permit after %s: %d of %d jobs running", secs(time.Since(t0)), n, permits)
			}
			if err := sleep(gctx, work); err != nil {
				return err
			}
			mu.Lock()
			running--
			mu.Unlock()
			d.logf(p.name, "done, releases its permit")
			if err := s.Release(gctx, 1); err != nil {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		if err := sleep(gctx, 250*time.Millisecond); err != nil {
			return err
		}
		return d.showInspect(gctx, short)
	})
	return g.Wait()
}

// expirablePermit: a process takes the only permit of an expirable
// semaphore with a 1 s lease and crashes; the permit returns by itself
// when its lease ends, and the waiting process gets it.
func (d *demo) expirablePermit(ctx context.Context) error {
	const short, lease = "slots", time.Second
	name := d.key(short)
	ps, stop := d.procsN(2)
	defer stop()
	holder, waiter := ps[0], ps[1]

	if _, err := semaphore.NewExpirable(holder.c, name).TrySetPermits(ctx, 1); err != nil {
		return err
	}
	id, err := semaphore.NewExpirable(holder.c, name).Acquire(ctx, lease)
	if err != nil {
		return err
	}
	d.logf(holder.name, "acquires the only permit of %q, id %s, with a %v lease", short, id, lease)
	type result struct {
		id  string
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		d.logf(waiter.name, "wants a permit of %q: none left, waits", short)
		id, err := semaphore.NewExpirable(waiter.c, name).Acquire(ctx, 10*time.Second)
		got <- result{id, time.Now(), err}
	}()
	if err := sleep(ctx, 200*time.Millisecond); err != nil {
		return err
	}
	crashed := time.Now()
	holder.crash()
	d.logf(holder.name, "CRASHES holding permit %s; nobody will release it", id)
	if err := d.showInspect(ctx, short); err != nil {
		return err
	}
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	d.stats.expiryReturn = r.at.Sub(crashed)
	d.logf(waiter.name, "acquires permit %s %s after the crash: the crashed holder's lease ran out and its permit returned by itself", r.id, secs(d.stats.expiryReturn))
	d.logf(waiter.name, "releases permit %s", r.id)
	if err := semaphore.NewExpirable(waiter.c, name).Release(ctx, r.id); err != nil {
		return err
	}
	return nil
}
