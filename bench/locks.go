package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
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

func (b *bench) openLockRun(lib library, clients int) (*lockRun, error) {
	r := &lockRun{gaveUp: &atomic.Int64{}}
	for range clients {
		rdb, cnt := newClient(b.addr)
		r.rdbs = append(r.rdbs, rdb)
		r.counters = append(r.counters, cnt)
		s, err := lib.open(conn{addr: b.addr, rdb: rdb, cnt: cnt}, r.gaveUp)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("open: %w", err)
		}
		r.sessions = append(r.sessions, s)
	}
	return r, nil
}

func (r *lockRun) close() {
	for _, s := range r.sessions {
		s.close()
	}
	for _, rdb := range r.rdbs {
		_ = rdb.Close()
	}
}

// runner measures one library in one scenario, in slices, so that the
// libraries of a scenario can take turns.
type runner interface {
	// slice runs the i-th of n slices of the measurement.
	slice(ctx context.Context, i, n int) error
	result() Result
	close()
}

// interleave runs n slices of every runner, the libraries taking turns
// (round i starts with runner i mod len(runners)), so that load from
// outside the benchmark (other processes on the machine) falls on every
// library alike instead of on whichever ran at the wrong moment.
func interleave(ctx context.Context, runners []runner, names []string, n int) error {
	for i := range n {
		for j := range runners {
			k := (i + j) % len(runners)
			if err := runners[k].slice(ctx, i, n); err != nil {
				return fmt.Errorf("%s: %w", names[k], err)
			}
		}
	}
	return nil
}

// share returns the part of total that slice i of n gets.
func share(total, i, n int) int { return total*(i+1)/n - total*i/n }

// uncontendedRun measures lock+unlock pairs from one goroutine on a lock
// nobody else wants.
type uncontendedRun struct {
	b       *bench
	lib     library
	lr      *lockRun
	m       mutex
	gaveUp0 int64
	lat     []time.Duration
	u       usage
	elapsed time.Duration
	// mallocs and allocBytes are the process's heap allocations (count
	// and bytes, runtime.MemStats) during the measured loops.
	mallocs, allocBytes uint64
}

func (b *bench) newUncontended(ctx context.Context, lib library) (runner, error) {
	lr, err := b.openLockRun(lib, 1)
	if err != nil {
		return nil, err
	}
	r := &uncontendedRun{b: b, lib: lib, lr: lr, m: lr.sessions[0].mutex(b.key(lib.name, scUncontended))}
	for range b.cfg.warmupOps {
		if err := r.pair(ctx); err != nil {
			lr.close()
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	r.gaveUp0 = lr.gaveUp.Load()
	return r, nil
}

func (r *uncontendedRun) pair(ctx context.Context) error {
	if err := r.m.Lock(ctx); err != nil {
		return err
	}
	return r.m.Unlock(ctx)
}

func (r *uncontendedRun) slice(ctx context.Context, i, n int) error {
	sp, err := beginSpan(ctx, r.b.meter, r.lr.counters)
	if err != nil {
		return err
	}
	// The latencies' room is made before the loop, so that the loop's
	// allocations are the library's (and its go-redis client's).
	d := time.Duration(share(int(r.b.cfg.Uncontended), i, n))
	r.lat = slices.Grow(r.lat, r.capacityFor(d))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) {
		t := time.Now()
		if err := r.pair(ctx); err != nil {
			return err
		}
		r.lat = append(r.lat, time.Since(t))
	}
	r.elapsed += time.Since(start)
	runtime.ReadMemStats(&m1)
	r.mallocs += m1.Mallocs - m0.Mallocs
	r.allocBytes += m1.TotalAlloc - m0.TotalAlloc
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	r.u.add(u)
	return nil
}

// capacityFor estimates the pairs a loop of d will measure, from the
// rate so far (at least 10,000 per second at first), with room to spare.
func (r *uncontendedRun) capacityFor(d time.Duration) int {
	rate := 10000.0
	if r.elapsed > 0 {
		rate = max(rate, 2*float64(len(r.lat))/r.elapsed.Seconds())
	}
	return int(rate*d.Seconds()) + 64
}

func (r *uncontendedRun) result() Result {
	ops := int64(len(r.lat))
	res := Result{
		Library:   r.lib.name,
		Scenario:  scUncontended,
		OpsPerSec: f(float64(ops) / r.elapsed.Seconds()),
		Op:        "one Lock and one Unlock from one goroutine, nobody else on the lock",
		Latency:   "Lock+Unlock",
		Ops:       ops,
		Seconds:   round4(r.elapsed.Seconds()),
		GaveUp:    r.lr.gaveUp.Load() - r.gaveUp0,
		Note:      r.lib.note,
	}
	res.quantiles(sortDurations(r.lat))
	res.perOp(r.u, ops)
	if ops > 0 {
		res.AllocsPerOp = f(float64(r.mallocs) / float64(ops))
		res.AllocBytesPerOp = f(float64(r.allocBytes) / float64(ops))
	}
	return res
}

func (r *uncontendedRun) close() { r.lr.close() }

// waitingTimeout bounds the wait for a handoff waiter to start waiting.
const waitingTimeout = 10 * time.Second

// handoffRun measures the time from a holder's Unlock call to a waiter,
// already waiting on another client, returning from Lock.
//
// Each cycle: client A locks; client B calls Lock in a goroutine; once B
// has made its failed attempt(s) and is waiting (its client has completed
// lib.waitingAfter requests), A waits a random 0..HandoffHold more (so that
// the release falls at a random point of a polling waiter's retry delay,
// as it would in real use), takes the release timestamp, and unlocks; B's
// goroutine takes the acquisition timestamp right after its Lock returns.
// B then unlocks, outside the timed part.
type handoffRun struct {
	b              *bench
	lib            library
	lr             *lockRun
	holder, waiter mutex
	rng            *rand.Rand
	gaveUp0        int64
	lat            []time.Duration
	u              usage
	elapsed        time.Duration
}

func (b *bench) newHandoff(ctx context.Context, lib library) (runner, error) {
	lr, err := b.openLockRun(lib, 2)
	if err != nil {
		return nil, err
	}
	key := b.key(lib.name, scHandoff)
	r := &handoffRun{
		b: b, lib: lib, lr: lr,
		holder: lr.sessions[0].mutex(key),
		waiter: lr.sessions[1].mutex(key),
		// Every library gets the same sequence of hold times.
		rng: rand.New(rand.NewPCG(b.cfg.Seed, b.cfg.Seed^0x9e3779b97f4a7c15)),
	}
	for range b.cfg.warmupHandoffs {
		if _, err := r.cycle(ctx); err != nil {
			lr.close()
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	r.gaveUp0 = lr.gaveUp.Load()
	return r, nil
}

func (r *handoffRun) cycle(ctx context.Context) (time.Duration, error) {
	type acquired struct {
		at  time.Time
		err error
	}
	waiterCounter := r.lr.counters[1]
	if err := r.holder.Lock(ctx); err != nil {
		return 0, fmt.Errorf("holder lock: %w", err)
	}
	target := waiterCounter.completed.Load() + r.lib.waitingAfter
	got := make(chan acquired, 1)
	go func() {
		err := r.waiter.Lock(ctx)
		got <- acquired{at: time.Now(), err: err}
	}()
	waitDeadline := time.Now().Add(waitingTimeout)
	for waiterCounter.completed.Load() < target {
		select {
		case a := <-got:
			_ = r.holder.Unlock(ctx)
			if a.err != nil {
				return 0, fmt.Errorf("waiter lock: %w", a.err)
			}
			return 0, errors.New("the waiter acquired a lock the holder still held")
		default:
		}
		if time.Now().After(waitDeadline) {
			// Unlocking lets the waiter's Lock return.
			_ = r.holder.Unlock(ctx)
			if a := <-got; a.err == nil {
				_ = r.waiter.Unlock(ctx)
			}
			return 0, fmt.Errorf("the waiter did not send its %d attempt request(s) within %v", r.lib.waitingAfter, waitingTimeout)
		}
		time.Sleep(50 * time.Microsecond)
	}
	if hold := r.b.cfg.HandoffHold; hold > 0 {
		time.Sleep(time.Duration(r.rng.Int64N(int64(hold) + 1)))
	}
	t0 := time.Now()
	if err := r.holder.Unlock(ctx); err != nil {
		return 0, fmt.Errorf("holder unlock: %w", err)
	}
	a := <-got
	if a.err != nil {
		return 0, fmt.Errorf("waiter lock: %w", a.err)
	}
	lat := a.at.Sub(t0)
	if err := r.waiter.Unlock(ctx); err != nil {
		return 0, fmt.Errorf("waiter unlock: %w", err)
	}
	return lat, nil
}

func (r *handoffRun) slice(ctx context.Context, i, n int) error {
	sp, err := beginSpan(ctx, r.b.meter, r.lr.counters)
	if err != nil {
		return err
	}
	start := time.Now()
	for range share(r.b.cfg.Handoffs, i, n) {
		d, err := r.cycle(ctx)
		if err != nil {
			return err
		}
		r.lat = append(r.lat, d)
	}
	r.elapsed += time.Since(start)
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	r.u.add(u)
	return nil
}

func (r *handoffRun) result() Result {
	ops := int64(len(r.lat))
	res := Result{
		Library:  r.lib.name,
		Scenario: scHandoff,
		Op: fmt.Sprintf("one handoff cycle: A locks, B waits on another client, A unlocks 0–%v later, B gets the lock and unlocks",
			r.b.cfg.HandoffHold),
		Latency: "handoff time, from A's Unlock call to B's Lock returning",
		Ops:     ops,
		Seconds: round4(r.elapsed.Seconds()),
		Wait:    r.lib.wait,
		GaveUp:  r.lr.gaveUp.Load() - r.gaveUp0,
	}
	res.quantiles(sortDurations(r.lat))
	res.perOp(r.u, ops)
	return res
}

func (r *handoffRun) close() { r.lr.close() }

// contendedRun measures acquisitions per second of goroutines goroutines
// spread over clients clients, all on one lock, each holding it for hold
// before unlocking and asking again.
type contendedRun struct {
	b        *bench
	lib      library
	scenario string
	hold     time.Duration
	clients  int
	lr       *lockRun
	mutexes  []mutex
	gaveUp0  int64
	total    contention
	window   time.Duration
	u        usage
}

func (b *bench) newContended(ctx context.Context, lib library, scenario string, hold time.Duration, goroutines, clients int) (runner, error) {
	lr, err := b.openLockRun(lib, clients)
	if err != nil {
		return nil, err
	}
	key := b.key(lib.name, scenario)
	r := &contendedRun{b: b, lib: lib, scenario: scenario, hold: hold, clients: clients, lr: lr, mutexes: make([]mutex, goroutines)}
	for g := range r.mutexes {
		r.mutexes[g] = lr.sessions[g%len(lr.sessions)].mutex(key)
	}
	if _, err := contend(ctx, r.mutexes, b.cfg.warmup, hold); err != nil {
		lr.close()
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	r.gaveUp0 = lr.gaveUp.Load()
	r.total.perGoroutine = make([]int64, len(r.mutexes))
	return r, nil
}

func (r *contendedRun) slice(ctx context.Context, i, n int) error {
	sp, err := beginSpan(ctx, r.b.meter, r.lr.counters)
	if err != nil {
		return err
	}
	d := time.Duration(share(int(r.b.cfg.Duration), i, n))
	c, err := contend(ctx, r.mutexes, d, r.hold)
	if err != nil {
		return err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return err
	}
	r.u.add(u)
	r.window += d
	r.total.add(c)
	return nil
}

func (r *contendedRun) result() Result {
	holdText := "~0"
	if r.hold > 0 {
		holdText = r.hold.String()
	}
	ops := r.total.acquisitions
	res := Result{
		Library:   r.lib.name,
		Scenario:  r.scenario,
		OpsPerSec: f(float64(ops) / r.window.Seconds()),
		Op: fmt.Sprintf("one acquisition: %d goroutines over %d clients on one lock, each holding it %s",
			len(r.mutexes), r.clients, holdText),
		Latency: "wait for the lock, from the Lock call to its return; a wait still going on when the window closed counts as long as it had lasted",
		Ops:     ops,
		Seconds: round4(r.window.Seconds()),
		Wait:    r.lib.wait,
		GaveUp:  r.lr.gaveUp.Load() - r.gaveUp0,
	}
	res.quantiles(sortDurations(slices.Concat(r.total.waits, r.total.unfinished)))
	res.perOp(r.u, ops)
	r.total.fairness(&res)
	res.Extra["unfinished_waits"] = float64(len(r.total.unfinished))
	return res
}

func (r *contendedRun) close() { r.lr.close() }

// contention is what a contend window measured.
type contention struct {
	acquisitions int64   // completed within the window
	perGoroutine []int64 // acquisitions of each goroutine
	waits        []time.Duration
	// unfinished: waits still going on when the window closed, counted as
	// long as they had lasted then (the quantiles include them).
	unfinished []time.Duration
	// retakes counts the acquisitions within the window made by the
	// goroutine that made the one before: a lock that lets its releaser
	// take it again at once (barging past the waiters, as a poller's
	// release does) re-takes; one that hands it to a waiter does not.
	retakes int64
}

// add adds the counts of d to c (same goroutines).
func (c *contention) add(d contention) {
	c.acquisitions += d.acquisitions
	c.retakes += d.retakes
	for i, n := range d.perGoroutine {
		c.perGoroutine[i] += n
	}
	c.waits = append(c.waits, d.waits...)
	c.unfinished = append(c.unfinished, d.unfinished...)
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

// fairness records in r how evenly the goroutines shared the
// acquisitions: the busiest goroutine's share (busiestShare), the least
// busy one's, and the share each would have if all had the same, 1/N.
// Goroutines that took none are noted.
func (c contention) fairness(r *Result) {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	r.Extra["busiest_goroutine_share"] = round4(c.busiestShare())
	r.Extra["ideal_share"] = round4(1 / float64(len(c.perGoroutine)))
	least, idle := 0.0, 0
	if c.acquisitions > 0 {
		least = float64(slices.Min(c.perGoroutine)) / float64(c.acquisitions)
	}
	for _, n := range c.perGoroutine {
		if n == 0 {
			idle++
		}
	}
	r.Extra["least_goroutine_share"] = round4(least)
	if c.acquisitions > 0 {
		r.Extra["retake_share"] = round4(float64(c.retakes) / float64(c.acquisitions))
	}
	r.Extra["goroutines_without_acquisition"] = float64(idle)
	if idle > 0 {
		if r.Note != "" {
			r.Note += "; "
		}
		r.Note += fmt.Sprintf("%d of %d goroutines took none", idle, len(c.perGoroutine))
	}
}

// contend runs one goroutine per mutex for d: each locks, holds for hold,
// unlocks and starts again. It returns the acquisitions that completed
// within d and their waits (Lock call to Lock returning). Goroutines
// waiting when d ends are cancelled; one holding then unlocks.
func contend(ctx context.Context, mutexes []mutex, d, hold time.Duration) (contention, error) {
	var lat, unfinished latencies
	var last, retakes atomic.Int64 // the goroutine of the latest acquisition (index+1), re-takes
	res := contention{perGoroutine: make([]int64, len(mutexes))}
	err := window(ctx, mutexes, d, func(runCtx context.Context, i int, m mutex, deadline time.Time, fail func(error)) {
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
				} else if t.Before(deadline) {
					// Still waiting when the window closed: its wait
					// counts, as long as the window (a lower bound), so
					// that a goroutine starved all along weighs in the
					// quantiles instead of vanishing from them.
					unfinished.add(deadline.Sub(t))
				}
				return
			}
			got := time.Now()
			if last.Swap(int64(i)+1) == int64(i)+1 && got.Before(deadline) {
				retakes.Add(1)
			}
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
			} else if t.Before(deadline) {
				unfinished.add(deadline.Sub(t))
			}
		}
	})
	res.waits = lat.sorted()
	res.acquisitions = int64(len(res.waits))
	res.unfinished = unfinished.sorted()
	res.retakes = retakes.Load()
	return res, err
}

// window runs body in one goroutine per mutex (i its index) for a window of
// d: when d has passed, the runCtx body gets is cancelled, and deadline is
// the window's end. A body calls fail to end the window early with an
// error; window returns the first such error, or ctx's when ctx ended.
func window(ctx context.Context, mutexes []mutex, d time.Duration, body func(runCtx context.Context, i int, m mutex, deadline time.Time, fail func(error))) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce sync.Once
		runErr  error
		wg      sync.WaitGroup
	)
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
			body(runCtx, i, m, deadline, fail)
		}()
	}
	wg.Wait()
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	return runErr
}
