package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// lockContention: three processes want the same lock; each holds it
// longer than the watchdog timeout, so only the watchdog's renewals keep
// it, and the waiters get it in turn when the holder unlocks.
func (d *demo) lockContention(ctx context.Context) error {
	const short, hold = "orders", 1800 * time.Millisecond
	ps, stop := d.procsN(3)
	defer stop()
	d.banner("every process has its own Client; a hold lasts %v (the watchdog timeout) unless renewed, and the watchdog renews it every %v.",
		demoWatchdog, (demoWatchdog / 3).Round(time.Millisecond))
	d.banner("each worker keeps the lock for %v, longer than the lease: only renewals keep it.", hold)

	cs := &contention{d: d, short: short, name: d.key(short), hold: hold}
	g, ctx := errgroup.WithContext(ctx)
	for i, p := range ps {
		g.Go(func() error { return cs.work(ctx, i, p) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if d.stats.maxLockHolders != 1 {
		return fmt.Errorf("%w: %d processes held %q at once", errDemo, d.stats.maxLockHolders, short)
	}
	return nil
}

// contention is the cast of lockContention: the contended lock, how long
// each worker holds it, and how many hold it now.
type contention struct {
	d           *demo
	short, name string
	hold        time.Duration
	inside      atomic.Int32
	mu          sync.Mutex // guards d.stats's lock figures
}

// work is worker i (process p): it locks, re-enters once if it is the
// first, keeps the lock for the hold while the watchdog renews it, and
// unlocks.
func (cs *contention) work(ctx context.Context, i int, p *proc) error {
	d, short := cs.d, cs.short
	if err := sleep(ctx, time.Duration(i)*30*time.Millisecond); err != nil {
		return err
	}
	// One owner per simulated request: it re-enters the lock below.
	ctx = redisync.WithOwner(ctx)
	l := rlock.New(p.c, cs.name, rlock.WithFencing())
	t0 := time.Now()
	ok, err := l.TryLock(ctx, 0)
	if err != nil {
		return err
	}
	if !ok {
		d.logf(p.name, "wants %q: it is held, so it waits (woken by the holder's unlock)", short)
		if err := l.Lock(ctx); err != nil {
			return err
		}
	}
	n := cs.inside.Add(1)
	cs.mu.Lock()
	d.stats.lockAcquisitions++
	d.stats.maxLockHolders = max(d.stats.maxLockHolders, int(n))
	cs.mu.Unlock()
	if ok {
		d.logf(p.name, "acquires %q at once (fencing token %d)", short, l.FencingToken())
	} else {
		d.logf(p.name, "acquires %q after waiting %s (fencing token %d)", short, secs(time.Since(t0)), l.FencingToken())
	}
	if i == 0 {
		if err := cs.reenter(ctx, p, l); err != nil {
			return err
		}
	}
	stopWatch := d.watchLease(ctx, p.name, cs.name)
	err = sleep(ctx, cs.hold)
	stopWatch()
	if err != nil {
		return err
	}
	cs.inside.Add(-1)
	d.logf(p.name, "unlocks %q after %v of work", short, cs.hold)
	return l.Unlock(ctx)
}

// reenter shows reentrancy: the owner holding l (in ctx) takes it again,
// then unlocks once and still holds it.
func (cs *contention) reenter(ctx context.Context, p *proc, l *rlock.Lock) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	c, err := l.HoldCount(ctx)
	if err != nil {
		return err
	}
	cs.d.logf(p.name, "re-enters %q: hold count %d (fencing token %d)", cs.short, c, l.FencingToken())
	if err := l.Unlock(ctx); err != nil {
		return err
	}
	c, err = l.HoldCount(ctx)
	if err != nil {
		return err
	}
	cs.d.logf(p.name, "unlocks once: hold count %d, still held", c)
	return nil
}

// watchLease narrates the watchdog's renewals of the lock name held by
// who: it polls the lock's TTL and reports each time it goes back up. The
// returned function stops it.
func (d *demo) watchLease(ctx context.Context, who, name string) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		last := time.Duration(-1)
		for {
			ttl, err := d.obs.PTTL(ctx, name).Result()
			if err == nil && ttl > 0 {
				if last > 0 && ttl > last+150*time.Millisecond {
					d.mu.Lock()
					d.stats.renewals++
					d.mu.Unlock()
					d.logf(who, "the watchdog renews the lease: %s → %s left", secs(last), secs(ttl))
				}
				last = ttl
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// lockCrash: the holder's process dies without unlocking. Nothing is
// published; the lock stays until its lease (the watchdog timeout) ends,
// and the waiter, which re-checks when the holder's lease is due to end,
// gets it then.
func (d *demo) lockCrash(ctx context.Context) error {
	const short = "ledger"
	name := d.key(short)
	ps, stop := d.procsN(2)
	defer stop()
	holder, waiter := ps[0], ps[1]

	if err := rlock.New(holder.c, name).Lock(ctx); err != nil {
		return err
	}
	d.logf(holder.name, "acquires %q", short)
	stopWatch := d.watchLease(ctx, holder.name, name)

	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	wl := rlock.New(waiter.c, name)
	go func() {
		d.logf(waiter.name, "wants %q: it is held, so it waits", short)
		err := wl.Lock(ctx)
		got <- result{time.Now(), err}
	}()

	if err := sleep(ctx, 900*time.Millisecond); err != nil {
		stopWatch()
		return err
	}
	stopWatch()
	crashed := time.Now()
	holder.crash()
	ttl, err := d.obs.PTTL(ctx, name).Result()
	if err != nil {
		return err
	}
	d.logf(holder.name, "CRASHES: the process dies without unlocking; its watchdog stops. %q stays locked for the %s left of its lease", short, secs(ttl))
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
	after := r.at.Sub(crashed)
	d.stats.crashExpiry = after
	if after < 0 {
		return fmt.Errorf("%w: %s got %q before its holder crashed", errDemo, waiter.name, short)
	}
	d.logf(waiter.name, "acquires %q %s after the crash: the lease ran out. No unlock was published; the waiter re-checked when the lease was due to end", short, secs(after))
	d.logf(waiter.name, "unlocks %q", short)
	if err := wl.Unlock(ctx); err != nil {
		return err
	}
	return nil
}
