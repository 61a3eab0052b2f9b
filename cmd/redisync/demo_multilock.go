package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// multiLockTransfer: a transfer needs two account locks at once. While one
// is busy the MultiLock waits for it holding neither, so another process
// can use the free account meanwhile; then it takes both.
func (d *demo) multiLockTransfer(ctx context.Context) error {
	ps, stop := d.procsN(3)
	defer stop()
	other, transfer, single := ps[0], ps[1], ps[2]
	t := transferScene{d: d, acc1: "account:1", acc2: "account:2"}

	busy := rlock.New(other.c, d.key(t.acc2))
	if err := busy.Lock(ctx); err != nil {
		return err
	}
	d.logf(other.name, "locks %q for 800ms", t.acc2)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return t.freeBusy(gctx, other, busy) })
	g.Go(func() error { return t.transfer(gctx, transfer) })
	g.Go(func() error { return t.useFree(gctx, single) })
	return g.Wait()
}

// transferScene is the cast of multiLockTransfer: the two accounts, acc2
// busy at first, that a transfer locks together.
type transferScene struct {
	d          *demo
	acc1, acc2 string
}

// freeBusy unlocks busy, the other process's lock of acc2, 800ms in.
func (t transferScene) freeBusy(ctx context.Context, p *proc, busy *rlock.Lock) error {
	if err := sleep(ctx, 800*time.Millisecond); err != nil {
		return err
	}
	t.d.logf(p.name, "unlocks %q", t.acc2)
	return busy.Unlock(ctx)
}

// transfer takes both accounts with one MultiLock, waiting for the busy
// one while holding neither, checks that it holds both, and moves the
// money.
func (t transferScene) transfer(ctx context.Context, p *proc) error {
	d := t.d
	if err := sleep(ctx, 50*time.Millisecond); err != nil {
		return err
	}
	l1, l2 := rlock.New(p.c, d.key(t.acc1)), rlock.New(p.c, d.key(t.acc2))
	ml := multilock.New(l1, l2)
	// The transfer is one owner: the MultiLock takes both locks for it,
	// and checkHeld asks whether that owner holds each.
	ctx = redisync.WithOwner(ctx)
	t0 := time.Now()
	ok, err := ml.TryLock(ctx, 0)
	if err != nil {
		return err
	}
	if !ok {
		d.logf(p.name, "wants %q and %q together: %q is busy, so it waits for it holding neither", t.acc1, t.acc2, t.acc2)
		if err := ml.Lock(ctx); err != nil {
			return err
		}
	}
	if err := checkHeld(ctx, l1, l2); err != nil {
		return err
	}
	d.stats.multiWaited = time.Since(t0)
	d.logf(p.name, "holds %q and %q after %s: it moves the money", t.acc1, t.acc2, secs(d.stats.multiWaited))
	if err := sleep(ctx, 200*time.Millisecond); err != nil {
		return err
	}
	d.logf(p.name, "unlocks both")
	return ml.Unlock(ctx)
}

// checkHeld checks that a MultiLock that returned holds each of its
// locks for the owner ctx carries.
func checkHeld(ctx context.Context, ls ...*rlock.Lock) error {
	for _, l := range ls {
		held, err := l.IsHeld(ctx)
		if err != nil {
			return err
		}
		if !held {
			return fmt.Errorf("%w: the MultiLock returned without holding %q", errDemo, l.Name())
		}
	}
	return nil
}

// useFree locks acc1 alone while the transfer waits: at once, since a
// waiting MultiLock holds neither account.
func (t transferScene) useFree(ctx context.Context, p *proc) error {
	d := t.d
	if err := sleep(ctx, 200*time.Millisecond); err != nil {
		return err
	}
	l := rlock.New(p.c, d.key(t.acc1))
	ok, err := l.TryLock(ctx, 0)
	if err != nil {
		return err
	}
	if ok {
		d.stats.multiFree = true
		d.logf(p.name, "locks %q at once: the waiting transfer does not hold it", t.acc1)
	} else {
		d.logf(p.name, "wants %q: busy, waits", t.acc1)
		if err := l.Lock(ctx); err != nil {
			return err
		}
		d.logf(p.name, "locks %q", t.acc1)
	}
	if err := sleep(ctx, 300*time.Millisecond); err != nil {
		return err
	}
	d.logf(p.name, "unlocks %q", t.acc1)
	return l.Unlock(ctx)
}
