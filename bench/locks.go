package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// lockRun holds what one library needs in one lock scenario: its clients
// (each a go-redis client of its own, as separate processes would have),
// sessions, and the gave-up counter.
type lockRun struct {
	rdbs     []*redis.Client
	counters []*counter
	sessions []session
	gaveUp   *atomic.Int64
}

func (b *bench) openLockRun(lib library, clients int) *lockRun {
	r := &lockRun{gaveUp: &atomic.Int64{}}
	for range clients {
		rdb, cnt := newClient(b.addr)
		r.rdbs = append(r.rdbs, rdb)
		r.counters = append(r.counters, cnt)
		r.sessions = append(r.sessions, lib.open(rdb, r.gaveUp))
	}
	return r
}

func (r *lockRun) close() {
	for _, s := range r.sessions {
		s.close()
	}
	for _, rdb := range r.rdbs {
		_ = rdb.Close()
	}
}

// uncontended measures lock+unlock pairs from one goroutine on a lock
// nobody else wants.
func (b *bench) uncontended(ctx context.Context, lib library) (Result, error) {
	lr := b.openLockRun(lib, 1)
	defer lr.close()
	m := lr.sessions[0].mutex(b.key(lib.name, scUncontended))
	pair := func() error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	}
	for range b.cfg.warmupOps {
		if err := pair(); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	sp, err := beginSpan(ctx, b.meter, lr.counters)
	if err != nil {
		return Result{}, err
	}
	var lat []time.Duration
	start := time.Now()
	deadline := start.Add(b.cfg.Uncontended)
	for time.Now().Before(deadline) {
		t := time.Now()
		if err := pair(); err != nil {
			return Result{}, err
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	ops := int64(len(lat))
	res := Result{
		Library:   lib.name,
		Scenario:  scUncontended,
		OpsPerSec: f(float64(ops) / elapsed.Seconds()),
		Op:        "one Lock and one Unlock from one goroutine, nobody else on the lock",
		Latency:   "Lock+Unlock",
		Ops:       ops,
		Seconds:   round4(elapsed.Seconds()),
		Wait:      lib.wait,
		GaveUp:    lr.gaveUp.Load(),
	}
	res.quantiles(sortDurations(lat))
	res.perOp(u, ops)
	return res, nil
}

// waitingTimeout bounds the wait for a handoff waiter to start waiting.
const waitingTimeout = 10 * time.Second

// handoff measures the time from a holder's Unlock call to a waiter,
// already waiting on another client, returning from Lock.
//
// Each cycle: client A locks; client B calls Lock in a goroutine; once B
// has made its failed attempt(s) and is waiting (its client has completed
// lib.waitingAfter requests), A waits a random 0..HandoffHold more (so that
// the release falls at a random point of a polling waiter's retry delay,
// as it would in real use), takes the release timestamp, and unlocks; B's
// goroutine takes the acquisition timestamp right after its Lock returns.
// B then unlocks, outside the timed part.
func (b *bench) handoff(ctx context.Context, lib library) (Result, error) {
	lr := b.openLockRun(lib, 2)
	defer lr.close()
	key := b.key(lib.name, scHandoff)
	holder := lr.sessions[0].mutex(key)
	waiter := lr.sessions[1].mutex(key)
	waiterCounter := lr.counters[1]
	// Every library gets the same sequence of hold times.
	rng := rand.New(rand.NewPCG(b.cfg.Seed, b.cfg.Seed^0x9e3779b97f4a7c15))

	type acquired struct {
		at  time.Time
		err error
	}
	cycle := func() (time.Duration, error) {
		if err := holder.Lock(ctx); err != nil {
			return 0, fmt.Errorf("holder lock: %w", err)
		}
		target := waiterCounter.completed.Load() + lib.waitingAfter
		got := make(chan acquired, 1)
		go func() {
			err := waiter.Lock(ctx)
			got <- acquired{at: time.Now(), err: err}
		}()
		waitDeadline := time.Now().Add(waitingTimeout)
		for waiterCounter.completed.Load() < target {
			select {
			case a := <-got:
				_ = holder.Unlock(ctx)
				if a.err != nil {
					return 0, fmt.Errorf("waiter lock: %w", a.err)
				}
				return 0, errors.New("the waiter acquired a lock the holder still held")
			default:
			}
			if time.Now().After(waitDeadline) {
				// Unlocking lets the waiter's Lock return.
				_ = holder.Unlock(ctx)
				if a := <-got; a.err == nil {
					_ = waiter.Unlock(ctx)
				}
				return 0, fmt.Errorf("the waiter did not send its %d attempt request(s) within %v", lib.waitingAfter, waitingTimeout)
			}
			time.Sleep(50 * time.Microsecond)
		}
		if hold := b.cfg.HandoffHold; hold > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(hold) + 1)))
		}
		t0 := time.Now()
		if err := holder.Unlock(ctx); err != nil {
			return 0, fmt.Errorf("holder unlock: %w", err)
		}
		a := <-got
		if a.err != nil {
			return 0, fmt.Errorf("waiter lock: %w", a.err)
		}
		lat := a.at.Sub(t0)
		if err := waiter.Unlock(ctx); err != nil {
			return 0, fmt.Errorf("waiter unlock: %w", err)
		}
		return lat, nil
	}

	for range b.cfg.warmupHandoffs {
		if _, err := cycle(); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	sp, err := beginSpan(ctx, b.meter, lr.counters)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	lat := make([]time.Duration, 0, b.cfg.Handoffs)
	for range b.cfg.Handoffs {
		d, err := cycle()
		if err != nil {
			return Result{}, err
		}
		lat = append(lat, d)
	}
	elapsed := time.Since(start)
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	ops := int64(len(lat))
	res := Result{
		Library:  lib.name,
		Scenario: scHandoff,
		Op: fmt.Sprintf("one handoff cycle: A locks, B waits on another client, A unlocks 0–%v later, B gets the lock and unlocks",
			b.cfg.HandoffHold),
		Latency: "handoff time, from A's Unlock call to B's Lock returning",
		Ops:     ops,
		Seconds: round4(elapsed.Seconds()),
		Wait:    lib.wait,
		GaveUp:  lr.gaveUp.Load(),
	}
	res.quantiles(sortDurations(lat))
	res.perOp(u, ops)
	return res, nil
}

// contended measures acquisitions per second of Goroutines goroutines
// spread over Clients clients, all on one lock, each holding it for hold
// before unlocking and asking again.
func (b *bench) contended(ctx context.Context, lib library, scenario string, hold time.Duration) (Result, error) {
	lr := b.openLockRun(lib, b.cfg.Clients)
	defer lr.close()
	key := b.key(lib.name, scenario)
	mutexes := make([]mutex, b.cfg.Goroutines)
	for g := range mutexes {
		mutexes[g] = lr.sessions[g%len(lr.sessions)].mutex(key)
	}

	if _, err := contend(ctx, mutexes, b.cfg.warmup, hold); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	gaveUpBefore := lr.gaveUp.Load()
	sp, err := beginSpan(ctx, b.meter, lr.counters)
	if err != nil {
		return Result{}, err
	}
	cr, err := contend(ctx, mutexes, b.cfg.Duration, hold)
	if err != nil {
		return Result{}, err
	}
	ops := cr.acquisitions
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	holdText := "~0"
	if hold > 0 {
		holdText = hold.String()
	}
	res := Result{
		Library:   lib.name,
		Scenario:  scenario,
		OpsPerSec: f(float64(ops) / b.cfg.Duration.Seconds()),
		Op: fmt.Sprintf("one acquisition: %d goroutines over %d clients on one lock, each holding it %s",
			b.cfg.Goroutines, b.cfg.Clients, holdText),
		Latency: "wait for the lock, from the Lock call to its return",
		Ops:     ops,
		Seconds: round4(b.cfg.Duration.Seconds()),
		Wait:    lib.wait,
		GaveUp:  lr.gaveUp.Load() - gaveUpBefore,
	}
	res.quantiles(cr.waits)
	res.perOp(u, ops)
	cr.fairness(&res)
	return res, nil
}

// contention is what a contend window measured.
type contention struct {
	acquisitions int64   // completed within the window
	perGoroutine []int64 // acquisitions of each goroutine
	waits        []time.Duration
}

// busiestShare returns the fraction of acquisitions the busiest goroutine
// made: 1/goroutines when perfectly fair, near 1 when one goroutine keeps
// re-taking the lock it just released.
func (c contention) busiestShare() float64 {
	if c.acquisitions == 0 {
		return 0
	}
	return float64(slices.Max(c.perGoroutine)) / float64(c.acquisitions)
}

// fairness notes busiestShare in the result.
func (c contention) fairness(r *Result) {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	share := c.busiestShare()
	r.Extra["busiest_goroutine_share"] = round4(share)
	idle := 0
	for _, n := range c.perGoroutine {
		if n == 0 {
			idle++
		}
	}
	r.Extra["goroutines_without_acquisition"] = float64(idle)
	note := fmt.Sprintf("busiest goroutine %.0f%% of acquisitions", 100*share)
	if idle > 0 {
		note += fmt.Sprintf(", %d of %d took none", idle, len(c.perGoroutine))
	}
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += note
}

// contend runs one goroutine per mutex for d: each locks, holds for hold,
// unlocks and starts again. It returns the acquisitions that completed
// within d and their waits (Lock call to Lock returning). Goroutines
// waiting when d ends are cancelled; one holding then unlocks.
func contend(ctx context.Context, mutexes []mutex, d, hold time.Duration) (contention, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce sync.Once
		runErr  error
		wg      sync.WaitGroup
		lat     latencies
	)
	res := contention{perGoroutine: make([]int64, len(mutexes))}
	fail := func(err error) {
		errOnce.Do(func() { runErr = err })
		cancel()
	}
	deadline := time.Now().Add(d)
	timer := time.AfterFunc(d, cancel)
	defer timer.Stop()
	for i, m := range mutexes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() {
				res.perGoroutine[i] = int64(len(mine))
				lat.add(mine...)
			}()
			for runCtx.Err() == nil {
				t := time.Now()
				if err := m.Lock(runCtx); err != nil {
					if runCtx.Err() == nil {
						fail(fmt.Errorf("lock: %w", err))
					}
					return
				}
				got := time.Now()
				if hold > 0 {
					time.Sleep(hold)
				}
				// The release must happen even after the window closed.
				if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
					fail(fmt.Errorf("unlock: %w", err))
					return
				}
				if got.Before(deadline) {
					mine = append(mine, got.Sub(t))
				}
			}
		}()
	}
	wg.Wait()
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	res.waits = lat.sorted()
	res.acquisitions = int64(len(res.waits))
	return res, runErr
}
