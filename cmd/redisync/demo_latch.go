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

	var mu sync.Mutex
	var lastDown time.Time
	var released []time.Time
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range ws {
		g.Go(func() error {
			d.logf(p.name, "waits for the latch")
			if err := countdown.New(p.c, name).Wait(gctx); err != nil {
				return err
			}
			now := time.Now()
			mu.Lock()
			released = append(released, now)
			early := lastDown.IsZero()
			mu.Unlock()
			if early {
				return fmt.Errorf("%w: %s passed latch %q before it reached zero", errDemo, p.name, short)
			}
			d.logf(p.name, "released: the latch is open")
			return nil
		})
	}
	g.Go(func() error {
		// Wait until every waiter is subscribed, so the inspect shows them.
		if err := d.waitSubscribers(gctx, countdown.New(coord.c, name), waiters); err != nil {
			return err
		}
		if err := d.showInspect(gctx, short); err != nil {
			return err
		}
		for i, p := range workers {
			if err := sleep(gctx, 300*time.Millisecond); err != nil {
				return err
			}
			l := countdown.New(p.c, name)
			if i == len(workers)-1 {
				mu.Lock()
				lastDown = time.Now()
				mu.Unlock()
			}
			left := int64(count - 1 - i)
			d.logf(p.name, "finishes its part and counts down: %d left", left)
			if err := l.CountDown(gctx); err != nil {
				return err
			}
			n, err := l.Count(gctx)
			if err != nil {
				return err
			}
			if n != left {
				return fmt.Errorf("%w: latch %q counts %d after %d count-downs, want %d", errDemo, short, n, i+1, left)
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	d.stats.latchWaiters = len(released)
	for _, at := range released {
		d.stats.latchSpread = max(d.stats.latchSpread, at.Sub(lastDown))
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
