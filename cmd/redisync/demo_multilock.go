package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// multiLockTransfer: a transfer needs two account locks at once. While one
// is busy the MultiLock waits for it holding neither, so another process
// can use the free account meanwhile; then it takes both.
func (d *demo) multiLockTransfer(ctx context.Context) error {
	const acc1, acc2 = "account:1", "account:2"
	ps, stop := d.procsN(3)
	defer stop()
	other, transfer, single := ps[0], ps[1], ps[2]

	busy := rlock.New(other.c, d.key(acc2))
	if err := busy.Lock(ctx); err != nil {
		return err
	}
	d.logf(other.name, "locks %q for 800ms", acc2)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := sleep(gctx, 800*time.Millisecond); err != nil {
			return err
		}
		d.logf(other.name, "unlocks %q", acc2)
		if err := busy.Unlock(gctx); err != nil {
			return err
		}
		return nil
	})
	g.Go(func() error {
		if err := sleep(gctx, 50*time.Millisecond); err != nil {
			return err
		}
		l1, l2 := rlock.New(transfer.c, d.key(acc1)), rlock.New(transfer.c, d.key(acc2))
		ml := multilock.New(l1, l2)
		t0 := time.Now()
		ok, err := ml.TryLock(gctx, 0)
		if err != nil {
			return err
		}
		if !ok {
			d.logf(transfer.name, "wants %q and %q together: %q is busy, so it waits for it holding neither", acc1, acc2, acc2)
			if err := ml.Lock(gctx); err != nil {
				return err
			}
		}
		for _, l := range []*rlock.Lock{l1, l2} {
			held, err := l.IsHeld(gctx)
			if err != nil {
				return err
			}
			if !held {
				return fmt.Errorf("%w: the MultiLock returned without holding %q", errDemo, l.Name())
			}
		}
		d.stats.multiWaited = time.Since(t0)
		d.logf(transfer.name, "holds %q and %q after %s: it moves the money", acc1, acc2, secs(d.stats.multiWaited))
		if err := sleep(gctx, 200*time.Millisecond); err != nil {
			return err
		}
		d.logf(transfer.name, "unlocks both")
		if err := ml.Unlock(gctx); err != nil {
			return err
		}
		return nil
	})
	g.Go(func() error {
		if err := sleep(gctx, 200*time.Millisecond); err != nil {
			return err
		}
		l := rlock.New(single.c, d.key(acc1))
		ok, err := l.TryLock(gctx, 0)
		if err != nil {
			return err
		}
		if ok {
			d.stats.multiFree = true
			d.logf(single.name, "locks %q at once: the waiting transfer does not hold it", acc1)
		} else {
			d.logf(single.name, "wants %q: busy, waits", acc1)
			if err := l.Lock(gctx); err != nil {
				return err
			}
			d.logf(single.name, "locks %q", acc1)
		}
		if err := sleep(gctx, 300*time.Millisecond); err != nil {
			return err
		}
		d.logf(single.name, "unlocks %q", acc1)
		if err := l.Unlock(gctx); err != nil {
			return err
		}
		return nil
	})
	return g.Wait()
}
