package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/rwlock"
)

// rwReadersWriter: three readers read together; a writer waits until the
// last one leaves, then writes alone while a late reader waits for it.
func (d *demo) rwReadersWriter(ctx context.Context) error {
	const short = "config"
	name := d.key(short)
	ps, stop := d.procsN(5)
	defer stop()
	readers, writer, late := ps[:3], ps[3], ps[4]

	var mu sync.Mutex
	reading, writing := 0, 0
	enter := func(write bool) (int, int) {
		mu.Lock()
		defer mu.Unlock()
		if write {
			writing++
		} else {
			reading++
			d.stats.rwReaders++
			d.stats.rwMaxReaders = max(d.stats.rwMaxReaders, reading)
		}
		return reading, writing
	}
	leave := func(write bool) {
		mu.Lock()
		defer mu.Unlock()
		if write {
			writing--
		} else {
			reading--
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	for i, p := range readers {
		g.Go(func() error {
			rw := rwlock.New(p.c, name)
			if err := rw.RLock(gctx); err != nil {
				return err
			}
			r, w := enter(false)
			if w > 0 {
				return fmt.Errorf("%w: %s read %q while it was written", errDemo, p.name, short)
			}
			d.logf(p.name, "read-locks %q: %s inside", short, plural(r, "reader"))
			if err := sleep(gctx, time.Duration(600+200*i)*time.Millisecond); err != nil {
				return err
			}
			leave(false)
			d.logf(p.name, "stops reading")
			if err := rw.RUnlock(gctx); err != nil {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		if err := sleep(gctx, 150*time.Millisecond); err != nil {
			return err
		}
		rw := rwlock.New(writer.c, name)
		t0 := time.Now()
		ok, err := rw.TryLock(gctx, 0)
		if err != nil {
			return err
		}
		if !ok {
			d.logf(writer.name, "wants to write %q: readers hold it, so it waits", short)
			if err := rw.Lock(gctx); err != nil {
				return err
			}
		}
		r, _ := enter(true)
		if r > 0 {
			return fmt.Errorf("%w: %s wrote %q while %d read it", errDemo, writer.name, short, r)
		}
		d.logf(writer.name, "write-locks %q after %s: it writes alone", short, secs(time.Since(t0)))
		if err := sleep(gctx, 600*time.Millisecond); err != nil {
			return err
		}
		leave(true)
		d.logf(writer.name, "unlocks the write lock")
		if err := rw.Unlock(gctx); err != nil {
			return err
		}
		return nil
	})
	g.Go(func() error {
		if err := sleep(gctx, 1300*time.Millisecond); err != nil {
			return err
		}
		rw := rwlock.New(late.c, name)
		t0 := time.Now()
		ok, err := rw.TryRLock(gctx, 0)
		if err != nil {
			return err
		}
		if !ok {
			d.logf(late.name, "wants to read %q: the writer holds it, so it waits", short)
			if err := rw.RLock(gctx); err != nil {
				return err
			}
		}
		r, w := enter(false)
		if w > 0 {
			return fmt.Errorf("%w: %s read %q while it was written", errDemo, late.name, short)
		}
		d.logf(late.name, "read-locks %q after %s: %s inside", short, secs(time.Since(t0)), plural(r, "reader"))
		leave(false)
		d.logf(late.name, "stops reading")
		if err := rw.RUnlock(gctx); err != nil {
			return err
		}
		return nil
	})
	g.Go(func() error {
		if err := sleep(gctx, 400*time.Millisecond); err != nil {
			return err
		}
		return d.showInspect(gctx, short)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return nil
}
