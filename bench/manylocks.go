package main

import (
	"context"
	"fmt"
	"time"
)

// manyLocksRun measures lock+unlock pairs per second of goroutines
// goroutines spread over clients clients, each on a lock of its own: many
// locks, none contended, all at once.
type manyLocksRun struct {
	b       *bench
	lib     library
	clients int
	lr      *lockRun
	mutexes []mutex
	gaveUp0 int64
	pairs   int64
	lat     []time.Duration
	window  time.Duration
	u       usage
}

func (b *bench) newManyLocks(ctx context.Context, lib library) (runner, error) {
	goroutines, clients := b.cfg.ManyLocksGoroutines, b.cfg.ManyLocksClients
	lr, err := b.openLockRun(lib, clients)
	if err != nil {
		return nil, err
	}
	r := &manyLocksRun{b: b, lib: lib, clients: clients, lr: lr, mutexes: make([]mutex, goroutines)}
	for g := range r.mutexes {
		r.mutexes[g] = lr.sessions[g%len(lr.sessions)].mutex(b.key(lib.name, scManyLocks, fmt.Sprint(g)))
	}
	if _, _, err := lockPairs(ctx, r.mutexes, b.cfg.warmup); err != nil {
		lr.close()
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	r.gaveUp0 = lr.gaveUp.Load()
	return r, nil
}

func (r *manyLocksRun) slice(ctx context.Context, i, n int) error {
	sp, err := beginSpan(ctx, r.b.meter, r.lr.counters)
	if err != nil {
		return err
	}
	d := time.Duration(share(int(r.b.cfg.Duration), i, n))
	pairs, lat, err := lockPairs(ctx, r.mutexes, d)
	if err != nil {
		return err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	r.u.add(u)
	r.window += d
	r.pairs += pairs
	r.lat = append(r.lat, lat...)
	return nil
}

func (r *manyLocksRun) result() Result {
	res := Result{
		Library:   r.lib.name,
		Scenario:  scManyLocks,
		OpsPerSec: f(float64(r.pairs) / r.window.Seconds()),
		Op: fmt.Sprintf("one Lock and one Unlock: %d goroutines over %d clients, each on a lock of its own",
			len(r.mutexes), r.clients),
		Latency: "Lock+Unlock",
		Ops:     r.pairs,
		Seconds: round4(r.window.Seconds()),
		GaveUp:  r.lr.gaveUp.Load() - r.gaveUp0,
		Note:    r.lib.note,
	}
	res.quantiles(sortDurations(r.lat))
	res.perOp(r.u, r.pairs)
	return res
}

func (r *manyLocksRun) close() { r.lr.close() }

// lockPairs runs one goroutine per mutex for d: each locks and unlocks at
// once, again and again. It returns the pairs that ended within d and
// their durations (Lock call to Unlock returning). A pair still running
// when d ends is finished (its Lock cancelled, or its Unlock let through)
// but not counted.
func lockPairs(ctx context.Context, mutexes []mutex, d time.Duration) (int64, []time.Duration, error) {
	var lat latencies
	err := window(ctx, mutexes, d, func(runCtx context.Context, _ int, m mutex, deadline time.Time, fail func(error)) {
		var mine []time.Duration
		defer func() { lat.add(mine...) }()
		for runCtx.Err() == nil {
			t := time.Now()
			if err := m.Lock(runCtx); err != nil {
				if runCtx.Err() == nil {
					fail(fmt.Errorf("lock: %w", err))
				}
				return
			}
			// The release must happen even after the window closed.
			if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
				fail(fmt.Errorf("unlock: %w", err))
				return
			}
			if end := time.Now(); end.Before(deadline) {
				mine = append(mine, end.Sub(t))
			}
		}
	})
	l := lat.sorted()
	return int64(len(l)), l, err
}
