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
	ps, stop := d.procsN(5)
	defer stop()
	readers, writer, late := ps[:3], ps[3], ps[4]
	s := &rwScene{d: d, short: short, name: d.key(short)}

	g, gctx := errgroup.WithContext(ctx)
	for i, p := range readers {
		g.Go(func() error { return s.reader(gctx, p, time.Duration(600+200*i)*time.Millisecond) })
	}
	g.Go(func() error { return s.writer(gctx, writer) })
	g.Go(func() error { return s.lateReader(gctx, late) })
	g.Go(func() error {
		if err := sleep(gctx, 400*time.Millisecond); err != nil {
			return err
		}
		return d.showInspect(gctx, short)
	})
	return g.Wait()
}

// rwScene is the read-write lock scene's shared state: who is inside.
type rwScene struct {
	d           *demo
	short, name string

	mu               sync.Mutex
	reading, writing int
}

// enter counts a reader or the writer in and returns how many of each are
// inside.
func (s *rwScene) enter(write bool) (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if write {
		s.writing++
	} else {
		s.reading++
		s.d.stats.rwReaders++
		s.d.stats.rwMaxReaders = max(s.d.stats.rwMaxReaders, s.reading)
	}
	return s.reading, s.writing
}

// leave counts a reader or the writer out.
func (s *rwScene) leave(write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if write {
		s.writing--
	} else {
		s.reading--
	}
}

// reader read-locks at once and reads for dur.
func (s *rwScene) reader(ctx context.Context, p *proc, dur time.Duration) error {
	rw := rwlock.New(p.c, s.name)
	if err := rw.RLock(ctx); err != nil {
		return err
	}
	r, w := s.enter(false)
	if w > 0 {
		return fmt.Errorf("%w: %s read %q while it was written", errDemo, p.name, s.short)
	}
	s.d.logf(p.name, "read-locks %q: %s inside", s.short, plural(r, "reader"))
	if err := sleep(ctx, dur); err != nil {
		return err
	}
	s.leave(false)
	s.d.logf(p.name, "stops reading")
	return rw.RUnlock(ctx)
}

// writer comes after the readers, waits for them to leave and writes.
func (s *rwScene) writer(ctx context.Context, p *proc) error {
	if err := sleep(ctx, 150*time.Millisecond); err != nil {
		return err
	}
	rw := rwlock.New(p.c, s.name)
	t0 := time.Now()
	ok, err := rw.TryLock(ctx, 0)
	if err != nil {
		return err
	}
	if !ok {
		s.d.logf(p.name, "wants to write %q: readers hold it, so it waits", s.short)
		if err := rw.Lock(ctx); err != nil {
			return err
		}
	}
	r, _ := s.enter(true)
	if r > 0 {
		return fmt.Errorf("%w: %s wrote %q while %d read it", errDemo, p.name, s.short, r)
	}
	s.d.logf(p.name, "write-locks %q after %s: it writes alone", s.short, secs(time.Since(t0)))
	if err := sleep(ctx, 600*time.Millisecond); err != nil {
		return err
	}
	s.leave(true)
	s.d.logf(p.name, "unlocks the write lock")
	return rw.Unlock(ctx)
}

// lateReader comes while the writer writes and waits for it.
func (s *rwScene) lateReader(ctx context.Context, p *proc) error {
	if err := sleep(ctx, 1300*time.Millisecond); err != nil {
		return err
	}
	rw := rwlock.New(p.c, s.name)
	t0 := time.Now()
	ok, err := rw.TryRLock(ctx, 0)
	if err != nil {
		return err
	}
	if !ok {
		s.d.logf(p.name, "wants to read %q: the writer holds it, so it waits", s.short)
		if err := rw.RLock(ctx); err != nil {
			return err
		}
	}
	r, w := s.enter(false)
	if w > 0 {
		return fmt.Errorf("%w: %s read %q while it was written", errDemo, p.name, s.short)
	}
	s.d.logf(p.name, "read-locks %q after %s: %s inside", s.short, secs(time.Since(t0)), plural(r, "reader"))
	s.leave(false)
	s.d.logf(p.name, "stops reading")
	return rw.RUnlock(ctx)
}
