package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/ratelimit"
)

// Rate limiter scenarios (issue 26):
//
//   - gcra-1, gcra-64: allowed decisions per second and the Redis CPU per
//     decision of redisync's GCRA ("redisync-gcra") against
//     go-redis/redis_rate v10 ("redis_rate"), both GCRA on one key, from 1
//     goroutine, and from -many-goroutines goroutines over -many-clients
//     clients (64 over 16), for -duration each. The limit (a million per
//     second, a burst of a million) allows every decision, so each one
//     writes: the dearer case.
//   - ratelimiter-1000: redisync's Redisson-layout Limiter at 1,000 permits
//     per second, -goroutines goroutines over -clients clients calling
//     Acquire(ctx, 1) for -duration: acquisitions per second (the limit,
//     if the limiter keeps up), and the size of the grants zset, largest
//     seen (sampled every 10 ms) and at the end.
const (
	scGCRA1           = "gcra-1"
	scGCRA64          = "gcra-64"
	scRateLimiter1000 = "ratelimiter-1000"
)

func init() { allScenarios = append(allScenarios, scGCRA1, scGCRA64, scRateLimiter1000) }

// rateLimit runs one rate limiter scenario: a row per library.
func (b *bench) rateLimit(ctx context.Context, sc string) ([]Result, error) {
	if sc == scRateLimiter1000 {
		if !b.cfg.library("redisync") {
			return nil, nil
		}
		r, err := b.limiter1000(ctx)
		if err != nil {
			return nil, err
		}
		return []Result{r}, nil
	}
	goroutines, clients := 1, 1
	if sc == scGCRA64 {
		goroutines, clients = b.cfg.ManyGoroutines, b.cfg.ManyClients
	}
	var out []Result
	for _, lib := range []string{"redisync-gcra", "redis_rate"} {
		if !b.cfg.library(lib) {
			continue
		}
		r, err := b.gcra(ctx, sc, lib, goroutines, clients)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lib, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// gcra measures one library's decisions from goroutines over clients.
func (b *bench) gcra(ctx context.Context, sc, lib string, goroutines, clients int) (Result, error) {
	rc := b.openRedisyncClients(clients)
	defer rc.close()
	key := b.key(lib, sc)
	const perSec = 1_000_000
	allow := make([]func(context.Context) (bool, error), clients)
	for i := range clients {
		switch lib {
		case "redisync-gcra":
			g := ratelimit.NewGCRA(rc.clients[i], key, ratelimit.Limit{Rate: perSec, Period: time.Second, Burst: perSec})
			allow[i] = g.Allow
		default:
			l := redis_rate.NewLimiter(rc.rdbs[i])
			allow[i] = func(ctx context.Context) (bool, error) {
				r, err := l.Allow(ctx, key, redis_rate.PerSecond(perSec))
				if err != nil {
					return false, err
				}
				return r.Allowed == 1, nil
			}
		}
	}
	run := func(d time.Duration) (ops, allowed int64, lat []time.Duration, err error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		var first error
		stop := time.Now().Add(d)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				var n, ok int64
				for time.Now().Before(stop) {
					t0 := time.Now()
					yes, err := allow[g%clients](ctx)
					if err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
						return
					}
					mine = append(mine, time.Since(t0))
					n++
					if yes {
						ok++
					}
				}
				mu.Lock()
				ops, allowed, lat = ops+n, allowed+ok, append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return ops, allowed, lat, first
	}
	if _, _, _, err := run(b.cfg.warmup); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	sp, err := beginSpan(ctx, b.meter, rc.counters)
	if err != nil {
		return Result{}, err
	}
	ops, allowed, lat, err := run(b.cfg.Duration)
	if err != nil {
		return Result{}, err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	slices.Sort(lat)
	res := Result{
		Library:   lib,
		Scenario:  sc,
		OpsPerSec: f(float64(allowed) / b.cfg.Duration.Seconds()),
		Op: fmt.Sprintf("one allowed decision (Allow) of a GCRA limiter of %d per second, burst %d: %d goroutines over %d clients",
			perSec, perSec, goroutines, clients),
		Latency: "one Allow call",
		Ops:     ops,
		Seconds: round4(b.cfg.Duration.Seconds()),
		Extra:   map[string]float64{"allowed_share": round4(float64(allowed) / float64(max(ops, 1)))},
	}
	res.quantiles(lat)
	res.perOp(u, ops)
	return res, nil
}

// limiter1000 measures the Redisson-layout Limiter at 1,000 permits/s.
func (b *bench) limiter1000(ctx context.Context) (Result, error) {
	rc := b.openRedisyncClients(b.cfg.Clients)
	defer rc.close()
	key := b.key("redisync", scRateLimiter1000)
	const rate = 1000
	if err := ratelimit.New(rc.clients[0], key).SetRate(ctx, ratelimit.Overall, rate, time.Second); err != nil {
		return Result{}, err
	}
	zset := "{" + key + "}:permits"
	ll := &limiterLoad{b: b, rc: rc, key: key, zset: zset}
	if _, _, err := ll.run(ctx, b.cfg.warmup); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	// The warm-up may take the whole window's permits at once (a burst
	// of rate): a measured window shorter than the rate's interval could
	// then see none come back. It lasts at least 1.5 intervals.
	window := max(b.cfg.Duration, 1500*time.Millisecond)
	sp, err := beginSpan(ctx, b.meter, rc.counters)
	if err != nil {
		return Result{}, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { ll.sample(ctx, stop); close(done) }()
	ops, lat, err := ll.run(ctx, window)
	close(stop)
	<-done
	if err != nil {
		return Result{}, err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	end, err := b.meter.ZCard(ctx, zset).Result()
	if err != nil && err != redis.Nil {
		return Result{}, err
	}
	slices.Sort(lat)
	res := Result{
		Library:   "redisync-limiter",
		Scenario:  scRateLimiter1000,
		OpsPerSec: f(float64(ops) / window.Seconds()),
		Op: fmt.Sprintf("one Acquire(ctx, 1) of a Limiter (Redisson layout) of %d permits per second: %d goroutines over %d clients",
			rate, b.cfg.Goroutines, b.cfg.Clients),
		Latency: "wait for a permit, from the Acquire call to its return",
		Ops:     ops,
		Seconds: round4(window.Seconds()),
		Wait:    "local line; the head sleeps the delay Redis returns",
		Extra:   map[string]float64{"zset_members_peak": float64(ll.peak.Load()), "zset_members_end": float64(end)},
	}
	res.quantiles(lat)
	res.perOp(u, ops)
	return res, nil
}

// limiterLoad is the rate-limiter-1000 scenario's load: Goroutines
// goroutines acquiring permits of the limiter key, one at a time, and the
// peak size of its grants zset.
type limiterLoad struct {
	b    *bench
	rc   *redisyncClients
	key  string
	zset string // the Limiter's grants
	peak atomic.Int64
}

// sample records the zset's size every 10ms in peak, the largest seen,
// until stop is closed.
func (ll *limiterLoad) sample(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if n, err := ll.b.meter.ZCard(ctx, ll.zset).Result(); err == nil && n > ll.peak.Load() {
				ll.peak.Store(n)
			}
		}
	}
}

// run has every goroutine acquire permits for d, and returns the permits
// acquired, each one's wait, and the first error other than the window's
// end.
func (ll *limiterLoad) run(ctx context.Context, d time.Duration) (int64, []time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ops int64
	var lat []time.Duration
	var first error
	for g := range ll.b.cfg.Goroutines {
		l := ratelimit.New(ll.rc.clients[g%len(ll.rc.clients)], ll.key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, err := acquireUntilEnd(rctx, l)
			mu.Lock()
			if err != nil {
				first = err
			}
			ops, lat = ops+int64(len(mine)), append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ops, lat, first
}

// acquireUntilEnd acquires permits of l one at a time until ctx's window
// ends, and returns each one's wait; the error is one other than the
// window's end.
func acquireUntilEnd(ctx context.Context, l *ratelimit.Limiter) ([]time.Duration, error) {
	var mine []time.Duration
	for {
		t0 := time.Now()
		if err := l.Acquire(ctx, 1); err != nil {
			// The window's end: ctx ended, or the next permit
			// comes after it (Acquire fails fast).
			if !errors.Is(err, context.DeadlineExceeded) {
				return mine, err
			}
			return mine, nil
		}
		mine = append(mine, time.Since(t0))
	}
}
