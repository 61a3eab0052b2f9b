package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/countdown"
)

// latchBatch: a coordinator sets a latch to 3; four processes wait on it;
// three workers count it down one after another, and the last count-down
// releases every waiter at once.
func (d *demo) latchBatch(ctx context.Context) error {
	const short, count, waiters = "batch", 3, 4
	name := d.key(short)
	ps, stop := d.procsN(1 + waiters + count)
	defer stop()
	coord, ws, workers := ps[0], ps[1:1+waiters], ps[1+waiters:]

	ok, err := countdown.New(coord.c, name).TrySetCount(ctx, count)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: latch %q was already set", errDemo, short)
	}
	d.logf(coord.name, "sets latch %q to %d: the batch waits for %d workers", short, count, count)

	b := &batch{d: d, short: short, name: name}
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range ws {
		g.Go(func() error { return b.wait(gctx, p) })
	}
	g.Go(func() error {
		// Wait until every waiter is subscribed, so the inspect shows them.
		if err := d.waitSubscribers(gctx, countdown.New(coord.c, name), waiters); err != nil {
			return err
		}
		if err := d.showInspect(gctx, short); err != nil {
			return err
		}
		return b.countDown(gctx, workers)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	d.stats.latchWaiters = len(b.released)
	for _, at := range b.released {
		d.stats.latchSpread = max(d.stats.latchSpread, at.Sub(b.lastDown))
	}
	return nil
}

// batch is the cast of latchBatch: the latch, when its last count-down
// started and when each waiter was released.
type batch struct {
	d           *demo
	short, name string

	mu       sync.Mutex // guards lastDown and released
	lastDown time.Time
	released []time.Time
}

// wait is a waiter (process p): it waits on the latch and checks that it
// was released no earlier than the last count-down.
func (b *batch) wait(ctx context.Context, p *proc) error {
	b.d.logf(p.name, "waits for the latch")
	if err := countdown.New(p.c, b.name).Wait(ctx); err != nil {
		return err
	}
	now := time.Now()
	b.mu.Lock()
	b.released = append(b.released, now)
	early := b.lastDown.IsZero()
	b.mu.Unlock()
	if early {
		return fmt.Errorf("%w: %s passed latch %q before it reached zero", errDemo, p.name, b.short)
	}
	b.d.logf(p.name, "released: the latch is open")
	return nil
}

// countDown has each worker count the latch down in turn, 300ms apart,
// checking the count after each.
func (b *batch) countDown(ctx context.Context, workers []*proc) error {
	count := len(workers)
	for i, p := range workers {
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
		l := countdown.New(p.c, b.name)
		if i == len(workers)-1 {
			b.mu.Lock()
			b.lastDown = time.Now()
			b.mu.Unlock()
		}
		left := int64(count - 1 - i)
		b.d.logf(p.name, "finishes its part and counts down: %d left", left)
		if err := l.CountDown(ctx); err != nil {
			return err
		}
		n, err := l.Count(ctx)
		if err != nil {
			return err
		}
		if n != left {
			return fmt.Errorf("%w: latch %q counts %d after %d count-downs, want %d", errDemo, b.short, n, i+1, left)
		}
	}
	return nil
}

// waitSubscribers waits until n clients wait on the latch's channel.
func (d *demo) waitSubscribers(ctx context.Context, l *countdown.Latch, n int64) error {
	ch := kindLatch.channel(l.Name())
	for {
		m, err := numSub(ctx, d.obs, ch)
		if err != nil {
			return err
		}
		if m[ch] >= n {
			return nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
