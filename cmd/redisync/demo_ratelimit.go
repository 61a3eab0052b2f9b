package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/ratelimit"
)

// rateLimit: three processes share one budget of 4 calls per second
// (ratelimit.Limiter, Redisson's layout); each makes 3 calls, waiting up to
// 1.5s for a permit, and no second ever sees more than 4. Then a GCRA
// limiter of 2 per second with a burst of 3 allows its burst at once and
// tells the fourth caller when to come back.
func (d *demo) rateLimit(ctx context.Context) error {
	const short, rate, interval, calls = "api-rate", 4, time.Second, 3
	name := d.key(short)
	ps, stop := d.procsN(3)
	defer stop()

	if err := ratelimit.New(ps[0].c, name).SetRate(ctx, ratelimit.Overall, rate, interval); err != nil {
		return err
	}
	d.logf(ps[0].name, "sets rate limiter %q to %d calls per %s, one budget for every process", short, rate, interval)

	var grants grantLog
	rs := rateScene{d: d, name: name}
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range ps {
		g.Go(func() error { return rs.calls(gctx, p, calls, &grants) })
	}
	g.Go(func() error {
		if err := sleep(gctx, 200*time.Millisecond); err != nil {
			return err
		}
		return d.showInspect(gctx, short)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if err := grants.check(rate, interval); err != nil {
		return err
	}
	d.banner("%d calls granted, never more than %d in a second", len(grants.at), rate)
	return rs.gcraBurst(ctx, ps[1])
}

// grantLog collects when the rate limiter's permits were granted, across
// processes.
type grantLog struct {
	mu sync.Mutex
	at []time.Time
}

// add records a grant now.
func (g *grantLog) add() {
	g.mu.Lock()
	g.at = append(g.at, time.Now())
	g.mu.Unlock()
}

// check fails when more than rate grants fall within one interval.
// Grants are seen here a round trip after Redis made them; allow for
// that when checking that no second held more than the rate.
func (g *grantLog) check(rate int, interval time.Duration) error {
	grants := g.at
	sort.Slice(grants, func(i, j int) bool { return grants[i].Before(grants[j]) })
	for i := range grants {
		n := 0
		for j := i; j < len(grants) && grants[j].Sub(grants[i]) < interval-100*time.Millisecond; j++ {
			n++
		}
		if n > rate {
			return fmt.Errorf("%w: %d calls within a second with a rate of %d", errDemo, n, rate)
		}
	}
	return nil
}

// rateScene is the cast of rateLimit: the shared limiter's name.
type rateScene struct {
	d    *demo
	name string
}

// calls is one process making calls through the shared limiter, each
// waiting up to 1.5s for a permit, and logging it in grants.
func (rs rateScene) calls(ctx context.Context, p *proc, calls int, grants *grantLog) error {
	d := rs.d
	l := ratelimit.New(p.c, rs.name)
	for i := range calls {
		t0 := time.Now()
		ok, err := l.TryAcquire(ctx, 1, 1500*time.Millisecond)
		if err != nil {
			return err
		}
		if !ok {
			d.logf(p.name, "call %d: no permit within 1.5s; gave up at once, after %s", i+1, secs(time.Since(t0)))
			continue
		}
		grants.add()
		if waited := time.Since(t0); waited > 50*time.Millisecond {
			d.logf(p.name, "call %d: permit after waiting %s for the window to move", i+1, secs(waited))
		} else {
			d.logf(p.name, "call %d: permit", i+1)
		}
	}
	return nil
}

// gcraBurst: p's GCRA limiter of 2 per second with a burst of 3 allows its
// burst at once, tells the fourth caller when to come back, and Wait
// waits for that slot.
func (rs rateScene) gcraBurst(ctx context.Context, p *proc) error {
	d := rs.d
	gname := d.key("api-gcra")
	gc := ratelimit.NewGCRA(p.c, gname, ratelimit.Limit{Rate: 2, Period: time.Second, Burst: 3})
	for i := range 4 {
		r, err := gc.AllowN(ctx, 1)
		if err != nil {
			return err
		}
		if r.Allowed == 1 {
			d.logf(p.name, "GCRA request %d allowed; RateLimit-Remaining: %d", i+1, r.Remaining)
		} else {
			d.logf(p.name, "GCRA request %d refused; Retry-After: %s", i+1, secs(r.RetryAfter))
		}
	}
	t0 := time.Now()
	if err := gc.Wait(ctx); err != nil {
		return err
	}
	d.logf(p.name, "GCRA Wait: its slot came after %s", secs(time.Since(t0)))
	return gc.Reset(ctx)
}
