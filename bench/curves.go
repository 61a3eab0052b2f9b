package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// The scale scenarios (issue 41): each is run at several sizes for every
// library that can run it, and each of its figures becomes a curve, cost
// against size, whose growth exponent is fitted (fitExponent). They are
// not in the default run: "make bench-scale" runs them (-scenarios
// curves, or some of them by name).
const (
	// scWaiters1, scWaiters16: W goroutines waiting on one lock that
	// another client holds, over 1 and over 16 clients.
	scWaiters1  = "waiters-1-client"
	scWaiters16 = "waiters-16-clients"
	// scHolds: N locks held by one client, renewed.
	scHolds = "held-locks"
	// scContendedLocks: L locks, each with two goroutines contending.
	scContendedLocks = "contended-locks"
	// scClientsOne, scClientsMany: C child processes on one lock, and
	// each on locks of its own; scClientsSem: C child processes on one
	// semaphore of max(1, C/4) permits (clients.go).
	scClientsOne  = "clients-one-lock"
	scClientsMany = "clients-many-locks"
	scClientsSem  = "clients-one-semaphore"
	// scMemory: the keys a primitive leaves behind per operation
	// (memory.go).
	scMemory = "redis-memory"
)

// curveScenarios are the scale scenarios, in the order they run; the
// pseudo-scenario "curves" selects them all.
var curveScenarios = []string{scWaiters1, scWaiters16, scHolds, scContendedLocks, scClientsOne, scClientsSem, scClientsMany, scClusterMasters, scMemory}

// scaleLibraries are the libraries of the scale scenarios: redisync's
// lock and the peers that wait in their own ways (redislock with its 10 ms
// linear backoff: its default, a spin, would measure only how fast a
// goroutine can call Obtain).
func scaleLibraries() []library {
	all := lockLibraries(scContended0)
	keep := []string{"redisync", "redsync", "redislock-linear10ms", "rueidislock"}
	var out []library
	for _, l := range all {
		if contains(keep, l.name) {
			out = append(out, l)
		}
	}
	return out
}

// curveRow starts a scale row of library lib in scenario sc at size.
func curveRow(lib, sc string, size int, op, latency string) Result {
	return Result{Library: lib, Scenario: sc, Op: op, Latency: latency,
		Extra: map[string]float64{"size": float64(size)}}
}

// --- waiters on one held lock -------------------------------------------------

// waitersCurve runs scenario sc (clients clients) at every size of
// -scale-waiters for every scale library.
func (b *bench) waitersCurve(ctx context.Context, sc string, clients int) ([]Result, error) {
	var rows []Result
	for _, w := range b.cfg.ScaleWaiters {
		for _, lib := range scaleLibraries() {
			if !b.cfg.library(lib.name) {
				continue
			}
			r, err := b.waitersRun(ctx, sc, lib, w, clients)
			if err != nil {
				return rows, fmt.Errorf("%s %s W=%d: %w", sc, lib.name, w, err)
			}
			fmt.Fprintf(b.log, "bench: %-18s %-21s W=%-6d waiting: %s Redis CPU ms/s, %s commands/s, %s B heap/waiter; handoff p50 %s ms; all held in %s s\n",
				sc, lib.name, w, num(f(r.Extra["redis_cpu_ms_per_s_waiting"]), 1), num(f(r.Extra["commands_per_s_waiting"]), 0),
				num(f(r.Extra["heap_bytes_per_waiter"]), 0), num(r.P50ms, 3), num(f(r.Extra["all_held_seconds"]), 2))
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// waitersRun measures w goroutines over clients clients of lib waiting on
// one lock that another client of lib holds: first what the waiting costs
// over -scale-window (Redis CPU and commands per second, the bench
// process's CPU per second, Go heap and goroutines per waiter after GC),
// then the holder unlocks and every waiter, once it holds the lock,
// unlocks at once: each handoff is timed from the Unlock call before it
// to the Lock return after it, and the time until all w have held the
// lock is taken. A run that has not finished within -scale-drain-timeout
// is cut, and its row says how many held the lock.
func (b *bench) waitersRun(ctx context.Context, sc string, lib library, w, clients int) (Result, error) {
	key := b.key(lib.name, sc, strconv.Itoa(w))
	hr, err := b.openLockRun(lib, 1)
	if err != nil {
		return Result{}, err
	}
	defer hr.close()
	holder := hr.sessions[0].mutex(key)
	if err := holder.Lock(ctx); err != nil {
		return Result{}, fmt.Errorf("holder lock: %w", err)
	}
	wr, err := b.openLockRun(lib, clients)
	if err != nil {
		_ = holder.Unlock(ctx)
		return Result{}, err
	}
	defer wr.close()

	var before runtime.MemStats
	readMemStatsAfterGC(&before)
	wt := &waiters{g0: runtime.NumGoroutine()}
	wt.ctx, wt.cancel = context.WithCancel(ctx)
	defer wt.stop()
	for g := range w {
		wt.start(wt.fl.wrap(wr.sessions[g%clients].mutex(key)))
	}
	if err := b.settleWaiters(wt.ctx, wr, w); err != nil {
		_ = holder.Unlock(ctx)
		return Result{}, err
	}
	if err := wt.failed(); err != nil || wt.held.Load() > 0 {
		_ = holder.Unlock(ctx)
		return Result{}, fmt.Errorf("a waiter got the held lock (%d), or failed: %v", wt.held.Load(), err)
	}

	// What the waiting costs.
	var during runtime.MemStats
	readMemStatsAfterGC(&during)
	goroutines := runtime.NumGoroutine() - wt.g0
	wait, err := b.idleSpan(ctx, wr.counters, b.cfg.ScaleWindow)
	if err != nil {
		return Result{}, err
	}

	// Everyone through.
	sp, err := beginSpan(ctx, b.meter, append(slices.Clone(wr.counters), hr.counters...))
	if err != nil {
		return Result{}, err
	}
	t0, cut, err := wt.drain(ctx, holder, b.cfg.ScaleDrainTimeout)
	if err != nil {
		return Result{}, err
	}
	drain, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := wt.failed(); err != nil && !cut {
		return Result{}, err
	}
	return wt.result(b.cfg, sc, lib, w, clients, waitCost{u: wait, goroutines: goroutines, before: &before, during: &during}, drain, t0), nil
}

// waitCost is what the waiting cost: Redis and the bench process over the
// window (u), and the goroutines and memory statistics before the first
// waiter and while they all waited.
type waitCost struct {
	u              usage
	goroutines     int
	before, during *runtime.MemStats
}

// result is a waiters run's row: wc the waiting's cost, drain what the
// drain from the release at t0 cost.
func (wt *waiters) result(cfg config, sc string, lib library, w, clients int, wc waitCost, drain usage, t0 time.Time) Result {
	wait, goroutines, before, during := wc.u, wc.goroutines, wc.before, wc.during
	n := wt.held.Load()
	secs := wait.elapsed.Seconds()
	r := curveRow(lib.name, sc, w,
		fmt.Sprintf("one handoff: %d goroutines over %d client(s) wait on one lock another client holds; once it is released each takes it and releases it at once", w, clients),
		"handoff: from the Unlock call before it to the Lock return")
	r.Wait = lib.wait
	r.Ops, r.Seconds = n, round4(drain.elapsed.Seconds())
	r.quantiles(wt.lat.sorted())
	r.perOp(drain, n)
	ww := float64(w)
	r.Extra["clients"] = float64(clients)
	r.Extra["redis_cpu_ms_per_s_waiting"] = round4(float64(wait.cpu) / float64(time.Millisecond) / secs)
	r.Extra["commands_per_s_waiting"] = round4(float64(wait.commands) / secs)
	r.Extra["round_trips_per_s_waiting"] = round4(float64(wait.requests) / secs)
	r.Extra["client_cpu_ms_per_s_waiting"] = round4(float64(wait.clientCPU) / float64(time.Millisecond) / secs)
	r.Extra["heap_bytes_per_waiter"] = round4((float64(during.HeapAlloc) - float64(before.HeapAlloc)) / ww)
	r.Extra["stack_bytes_per_waiter"] = round4((float64(during.StackInuse) - float64(before.StackInuse)) / ww)
	r.Extra["goroutines_per_waiter"] = round4(float64(goroutines) / ww)
	r.Extra["waiters_finished"] = float64(n)
	if n == int64(w) {
		r.Extra["all_held_seconds"] = round4(time.Duration(wt.lastAcq.Load() - t0.UnixNano()).Seconds())
	} else {
		r.Note = fmt.Sprintf("cut after %v: %d of %d waiters had held the lock", cfg.ScaleDrainTimeout, n, w)
	}
	wt.fl.note(&r)
	return r
}

// idleSpan measures what Redis and the bench process spend over d while
// the clients of counters do what they do.
func (b *bench) idleSpan(ctx context.Context, counters []*counter, d time.Duration) (usage, error) {
	sp, err := beginSpan(ctx, b.meter, counters)
	if err != nil {
		return usage{}, err
	}
	if err := sleepCtx(ctx, d); err != nil {
		return usage{}, err
	}
	return sp.end(ctx)
}

// waiters are the goroutines of a waiters run: each waits for the lock,
// records its handoff time and unlocks at once.
type waiters struct {
	ctx         context.Context
	cancel      context.CancelFunc
	g0          int // goroutines before the first waiter
	wg          sync.WaitGroup
	lastRelease atomic.Int64 // unix ns of the Unlock call before the next acquisition
	lastAcq     atomic.Int64
	held        atomic.Int64
	lat         latencies
	fl          failures
	errOnce     sync.Once
	err         atomic.Pointer[error]
}

// start starts a waiter on m.
func (wt *waiters) start(m mutex) {
	wt.wg.Add(1)
	go func() {
		defer wt.wg.Done()
		if err := m.Lock(wt.ctx); err != nil {
			if wt.ctx.Err() == nil {
				wt.fail(fmt.Errorf("waiter lock: %w", err))
			}
			return
		}
		now := time.Now().UnixNano()
		wt.lat.add(time.Duration(now - wt.lastRelease.Load()))
		wt.lastAcq.Store(now)
		wt.held.Add(1)
		wt.lastRelease.Store(time.Now().UnixNano())
		if err := m.Unlock(context.WithoutCancel(wt.ctx)); err != nil {
			wt.fail(fmt.Errorf("waiter unlock: %w", err))
		}
	}()
}

func (wt *waiters) fail(err error) {
	wt.errOnce.Do(func() { wt.err.Store(&err) })
	wt.cancel()
}

// failed returns the first failure of a waiter, nil for none.
func (wt *waiters) failed() error {
	if p := wt.err.Load(); p != nil {
		return *p
	}
	return nil
}

// stop ends the waits still going and waits for every waiter.
func (wt *waiters) stop() {
	wt.cancel()
	wt.wg.Wait()
}

// drain releases the holder's lock and waits until every waiter has held
// it and left, or for at most timeout (cut: the waits still going are
// ended). It returns when the release was called.
func (wt *waiters) drain(ctx context.Context, holder mutex, timeout time.Duration) (t0 time.Time, cut bool, err error) {
	t0 = time.Now()
	wt.lastRelease.Store(t0.UnixNano())
	if err := holder.Unlock(ctx); err != nil {
		return t0, false, fmt.Errorf("holder unlock: %w", err)
	}
	finished := make(chan struct{})
	go func() { wt.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(timeout):
		cut = true
		wt.cancel()
		<-finished
	case <-ctx.Done():
		wt.cancel()
		<-finished
		return t0, false, ctx.Err()
	}
	return t0, cut, nil
}

// settleWaiters waits until the w waiters in wr are waiting: for
// redisync, its clients' Stats say so and they have sent nothing for a
// while; for the pollers, every waiter has had time for its first
// attempts (-scale-window / 4, at least 200 ms, plus 100 µs per waiter).
func (b *bench) settleWaiters(ctx context.Context, wr *lockRun, w int) error {
	var clients []*redisync.Client
	for _, s := range wr.sessions {
		if rs, ok := s.(*redisyncSession); ok {
			clients = append(clients, rs.c)
		}
	}
	if len(clients) == 0 {
		return sleepCtx(ctx, max(b.cfg.ScaleWindow/4, 200*time.Millisecond)+time.Duration(w)*100*time.Microsecond)
	}
	deadline := time.Now().Add(60 * time.Second)
	quiet := 0
	var last int64 = -1
	for quiet < 5 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d waiters did not settle within 60 s", w)
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
		waiting, done, idle := 0, int64(0), true
		for i, c := range clients {
			waiting += c.Stats().Waiting
			done += wr.counters[i].completed.Load()
			idle = idle && wr.counters[i].inFlight() == 0
		}
		if waiting >= w && idle && done == last {
			quiet++
		} else {
			quiet = 0
		}
		last = done
	}
	return nil
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// --- held locks and their renewal ---------------------------------------------

// holder is one library's client holding many locks, renewed with lease
// lease: by the library itself (redisync's watchdog, rueidislock's
// extension) or by a loop of the bench's, as a user of a library without
// renewal would write it (renewLoop).
type holder interface {
	lock(ctx context.Context, key string) error
	unlockAll(ctx context.Context) error
	close()
}

// holdLibraries are the libraries of the held-locks scenario, each made
// over one client with lease lease: redisync with its watchdog timeout at
// lease, rueidislock with KeyValidity lease (extended every lease/3),
// and redsync and redislock renewed by renewLoop.
func (b *bench) holdLibraries() []struct {
	name, renewal string
	open          func(c conn, lease time.Duration) holder
} {
	type lib = struct {
		name, renewal string
		open          func(c conn, lease time.Duration) holder
	}
	return []lib{
		{"redisync", "its watchdog (WithWatchdogTimeout(lease), a tick every third)", func(c conn, lease time.Duration) holder {
			return &redisyncHolder{c: newRedisync(c.rdb, redisync.WithWatchdogTimeout(lease))}
		}},
		{"redsync", "the bench's loop: every lease/3, ExtendContext of each lock, 64 at a time", func(c conn, lease time.Duration) holder {
			rs := redsync.New(redsyncgoredis.NewPool(c.rdb))
			h := &loopHolder{lease: lease}
			h.lockFn = func(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
				m := rs.NewMutex(key, redsync.WithExpiry(lease), redsync.WithTries(1))
				if err := m.LockContext(ctx); err != nil {
					return nil, nil, err
				}
				extend := func(ctx context.Context) error { _, err := m.ExtendContext(ctx); return err }
				unlock := func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }
				return extend, unlock, nil
			}
			return h
		}},
		{"redislock", "the bench's loop: every lease/3, Refresh of each lock, 64 at a time", func(c conn, lease time.Duration) holder {
			rl := redislock.New(c.rdb)
			h := &loopHolder{lease: lease}
			h.lockFn = func(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
				l, err := rl.Obtain(ctx, key, lease, nil)
				if err != nil {
					return nil, nil, err
				}
				return func(ctx context.Context) error { return l.Refresh(ctx, lease, nil) }, l.Release, nil
			}
			return h
		}},
		{"rueidislock", "its own extension (KeyValidity lease, ExtendInterval lease/3); its default client tracking without NOLOOP re-extends a key at each invalidation its own extension causes", func(c conn, lease time.Duration) holder {
			return &rueidisHolder{c: c, lease: lease}
		}},
		{"rueidislock-noloop", "its own extension (KeyValidity lease, ExtendInterval lease/3), NoLoopTracking: true (not its default)", func(c conn, lease time.Duration) holder {
			return &rueidisHolder{c: c, lease: lease, noLoop: true}
		}},
	}
}

type redisyncHolder struct {
	c    *redisync.Client
	mu   sync.Mutex
	held []*rlock.Lock
}

func (h *redisyncHolder) lock(ctx context.Context, key string) error {
	l := rlock.New(h.c, key)
	if err := l.Lock(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.held = append(h.held, l)
	h.mu.Unlock()
	return nil
}

func (h *redisyncHolder) unlockAll(ctx context.Context) error {
	return eachN(len(h.held), func(i int) error { return h.held[i].Unlock(ctx) })
}
func (h *redisyncHolder) close() { _ = h.c.Close() }

// loopHolder holds locks of a library without renewal and renews them
// itself: every lease/3 it extends each lock, 64 at a time.
type loopHolder struct {
	lease  time.Duration
	lockFn func(ctx context.Context, key string) (extend, unlock func(context.Context) error, err error)

	mu      sync.Mutex
	extends []func(context.Context) error
	unlocks []func(context.Context) error
	stop    context.CancelFunc
	done    chan struct{}
	failed  atomic.Int64
}

func (h *loopHolder) lock(ctx context.Context, key string) error {
	extend, unlock, err := h.lockFn(ctx, key)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.extends = append(h.extends, extend)
	h.unlocks = append(h.unlocks, unlock)
	if h.stop == nil {
		var loopCtx context.Context
		loopCtx, h.stop = context.WithCancel(context.WithoutCancel(ctx))
		h.done = make(chan struct{})
		go h.renewLoop(loopCtx)
	}
	return nil
}

// renewLoop extends every lock held every lease/3 until ctx ends.
func (h *loopHolder) renewLoop(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		ext := slices.Clone(h.extends)
		h.mu.Unlock()
		_ = eachN(len(ext), func(i int) error {
			if err := ext[i](ctx); err != nil && ctx.Err() == nil {
				h.failed.Add(1)
			}
			return nil
		})
	}
}

func (h *loopHolder) unlockAll(ctx context.Context) error {
	h.mu.Lock()
	stop, done := h.stop, h.done
	h.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	err := eachN(len(h.unlocks), func(i int) error { return h.unlocks[i](ctx) })
	if n := h.failed.Load(); n > 0 && err == nil {
		err = fmt.Errorf("%d extensions failed", n)
	}
	return err
}
func (h *loopHolder) close() {}

// rueidisHolder holds rueidislock locks over one Locker whose keys last
// lease and are extended every lease/3.
type rueidisHolder struct {
	c      conn
	lease  time.Duration
	noLoop bool // NoLoopTracking
	once   sync.Once
	l      rueidislock.Locker
	err    error
	mu     sync.Mutex
	held   []context.CancelFunc
}

func (h *rueidisHolder) lock(ctx context.Context, key string) error {
	h.once.Do(func() {
		h.l, h.err = rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: []string{h.c.addr}},
			KeyValidity:    h.lease,
			ExtendInterval: h.lease / 3,
			NoLoopTracking: h.noLoop,
			ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
				rc, err := rueidis.NewClient(opt)
				if err != nil {
					return nil, err
				}
				return countingRueidis{Client: rc, cnt: h.c.cnt}, nil
			},
		})
	})
	if h.err != nil {
		return h.err
	}
	// The hold outlives ctx (rueidislockMutex.Lock): ctx cuts the wait only.
	m := &rueidislockMutex{l: h.l, name: key}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.held = append(h.held, m.unlock)
	h.mu.Unlock()
	return nil
}

func (h *rueidisHolder) unlockAll(context.Context) error {
	return eachN(len(h.held), func(i int) error { h.held[i](); return nil })
}

func (h *rueidisHolder) close() {
	if h.l != nil {
		h.l.Close()
	}
}

// holdsCurve runs the held-locks scenario at every size of -scale-holds
// for every library.
func (b *bench) holdsCurve(ctx context.Context) ([]Result, error) {
	var rows []Result
	for _, n := range b.cfg.ScaleHolds {
		for _, lib := range b.holdLibraries() {
			if !b.cfg.library(lib.name) {
				continue
			}
			r, err := b.holdsRun(ctx, lib.name, lib.renewal, lib.open, n)
			if err != nil {
				return rows, fmt.Errorf("%s %s N=%d: %w", scHolds, lib.name, n, err)
			}
			fmt.Fprintf(b.log, "bench: %-18s %-21s N=%-6d %s Redis CPU ms/s, %s round trips/tick, %s B heap/hold\n",
				scHolds, lib.name, n, num(f(r.Extra["redis_cpu_ms_per_s"]), 1), num(f(r.Extra["round_trips_per_tick"]), 1), num(f(r.Extra["heap_bytes_per_hold"]), 0))
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// holdsRun makes one client of a library hold n locks with lease
// -watchdog-timeout, and measures -watchdog-ticks renewal intervals
// (lease/3 each) after the first: Redis CPU and the bench process's CPU
// per second, round trips per interval, and the Go heap per hold.
func (b *bench) holdsRun(ctx context.Context, name, renewal string, open func(conn, time.Duration) holder, n int) (Result, error) {
	lease := b.cfg.WatchdogTimeout
	var before runtime.MemStats
	readMemStatsAfterGC(&before)
	rdb, cnt := newClient(b.addr)
	defer rdb.Close()
	h := open(conn{addr: b.addr, rdb: rdb, cnt: cnt}, lease)
	defer h.close()
	r := curveRow(name, scHolds, n,
		fmt.Sprintf("keeping %d locks held by one client with a %v lease, renewed every %v", n, lease, renewEvery(lease)),
		"none")
	r.Wait = "renewal: " + renewal
	// Taking the n locks is bounded by -scale-drain-timeout (rueidislock's
	// default tracking loop never takes 100,000).
	lctx, cancel := context.WithTimeout(ctx, b.cfg.ScaleDrainTimeout)
	var taken atomic.Int64
	err := eachN(n, func(i int) error {
		if err := lctx.Err(); err != nil {
			return err // cut: the locks not yet asked for are not asked for
		}
		if err := h.lock(lctx, b.key(name, scHolds, strconv.Itoa(n), strconv.Itoa(i))); err != nil {
			return err
		}
		taken.Add(1)
		return nil
	})
	cut := lctx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil || cut {
		_ = h.unlockAll(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		// A library that could not take its n locks (in time, or at all:
		// redsync's own per-node timeout under load) gets a row that says
		// so, without figures, and the run goes on.
		if cut {
			r.Note = fmt.Sprintf("cut after %v: %d of %d locks taken; no figures", b.cfg.ScaleDrainTimeout, taken.Load(), n)
		} else {
			r.Note = fmt.Sprintf("failed after %d of %d locks taken (%v); no figures", taken.Load(), n, err)
		}
		r.Extra["held"] = float64(taken.Load())
		return r, nil
	}
	defer func() { _ = h.unlockAll(context.WithoutCancel(ctx)) }()
	var during runtime.MemStats
	readMemStatsAfterGC(&during)
	interval := renewEvery(lease)
	if err := sleepCtx(ctx, interval); err != nil {
		return Result{}, err
	}
	sp, err := beginSpan(ctx, b.meter, []*counter{cnt})
	if err != nil {
		return Result{}, err
	}
	ticks := b.cfg.WatchdogTicks
	if err := sleepCtx(ctx, time.Duration(ticks)*interval); err != nil {
		return Result{}, err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	secs := u.elapsed.Seconds()
	r.Seconds = round4(secs)
	r.Extra["redis_cpu_ms_per_s"] = round4(float64(u.cpu) / float64(time.Millisecond) / secs)
	r.Extra["client_cpu_ms_per_s"] = round4(float64(u.clientCPU) / float64(time.Millisecond) / secs)
	r.Extra["commands_per_s"] = round4(float64(u.commands) / secs)
	r.Extra["round_trips_per_tick"] = round4(float64(u.requests) / float64(ticks))
	r.Extra["redis_cpu_us_per_hold_per_tick"] = round4(float64(u.cpu) / float64(time.Microsecond) / float64(ticks) / float64(n))
	r.Extra["heap_bytes_per_hold"] = round4((float64(during.HeapAlloc) - float64(before.HeapAlloc)) / float64(n))
	r.Extra["stack_bytes_per_hold"] = round4((float64(during.StackInuse) - float64(before.StackInuse)) / float64(n))
	r.perOp(u, int64(ticks))
	return r, nil
}

// renewEvery is the renewal interval of a lease: a third of it.
func renewEvery(lease time.Duration) time.Duration { return lease / 3 }

// eachN runs f(0) … f(n-1), 64 at a time, and returns the first error.
func eachN(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// --- contended locks ---------------------------------------------------------

// contendedLocksCurve runs L locks with two goroutines on each, over 4
// clients, for -duration, at every size of -scale-locks, for every scale
// library.
func (b *bench) contendedLocksCurve(ctx context.Context) ([]Result, error) {
	var rows []Result
	const perLock, clients = 2, 4
	for _, l := range b.cfg.ScaleLocksSizes {
		for _, lib := range scaleLibraries() {
			if !b.cfg.library(lib.name) {
				continue
			}
			lr, err := b.openLockRun(lib, clients)
			if err != nil {
				return rows, err
			}
			var fl failures
			mutexes := make([]mutex, l*perLock)
			for g := range mutexes {
				mutexes[g] = fl.wrap(lr.sessions[g%clients].mutex(b.key(lib.name, scContendedLocks, strconv.Itoa(l), strconv.Itoa(g%l))))
			}
			var peak atomic.Int64
			stopSample := sampleChannels(lr, &peak)
			sp, err := beginSpan(ctx, b.meter, lr.counters)
			if err != nil {
				stopSample()
				lr.close()
				return rows, err
			}
			pairs, lat, err := lockPairs(ctx, mutexes, b.cfg.Duration)
			stopSample()
			if err != nil {
				lr.close()
				return rows, fmt.Errorf("%s %s L=%d: %w", scContendedLocks, lib.name, l, err)
			}
			u, err := sp.end(ctx)
			lr.close()
			if err != nil {
				return rows, err
			}
			r := curveRow(lib.name, scContendedLocks, l,
				fmt.Sprintf("one acquisition (Lock+Unlock): %d locks, %d goroutines on each, over %d clients", l, perLock, clients),
				"Lock call to Unlock return")
			r.Wait = lib.wait
			r.OpsPerSec = f(float64(pairs) / b.cfg.Duration.Seconds())
			r.Ops, r.Seconds = pairs, round4(b.cfg.Duration.Seconds())
			r.quantiles(lat)
			r.perOp(u, pairs)
			var churn int64
			for _, c := range pubsubCommands {
				churn += u.byCommand[c]
			}
			r.Extra["subscribe_unsubscribe_per_op"] = round4(float64(churn) / float64(max(pairs, 1)))
			r.Extra["peak_pubsub_channels"] = float64(peak.Load())
			fl.note(&r)
			fmt.Fprintf(b.log, "bench: %-18s %-21s L=%-6d %s ops/s, %s (un)subscribes/op, peak %d channels\n",
				scContendedLocks, lib.name, l, num(r.OpsPerSec, 0), num(f(r.Extra["subscribe_unsubscribe_per_op"]), 2), peak.Load())
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// sampleChannels records in peak the most pub/sub channels the redisync
// clients of lr had at once (Stats, every 20 ms) until the returned
// function is called.
func sampleChannels(lr *lockRun, peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var n int64
			for _, s := range lr.sessions {
				if rs, ok := s.(*redisyncSession); ok {
					n += int64(rs.c.Stats().PubSubChannels)
				}
			}
			if n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// --- growth exponents -------------------------------------------------------

// Curve is one figure of a scale scenario against its size, for one
// library, with the fitted growth: value ∝ size^Exponent (least squares
// on log-log; null when fewer than two sizes have a positive value).
type Curve struct {
	Scenario string    `json:"scenario"`
	Library  string    `json:"library"`
	Metric   string    `json:"metric"`
	Sizes    []float64 `json:"sizes"`
	Values   []float64 `json:"values"`
	Exponent *float64  `json:"exponent"`
}

// curveMetrics are the figures each scale scenario's curves follow.
var curveMetrics = map[string][]string{
	scWaiters1:       {"redis_cpu_ms_per_s_waiting", "commands_per_s_waiting", "heap_bytes_per_waiter", "goroutines_per_waiter", "p50_ms", "p99_ms", "all_held_seconds", "client_cpu_us_per_op"},
	scWaiters16:      {"redis_cpu_ms_per_s_waiting", "commands_per_s_waiting", "heap_bytes_per_waiter", "goroutines_per_waiter", "p50_ms", "p99_ms", "all_held_seconds", "client_cpu_us_per_op"},
	scHolds:          {"redis_cpu_ms_per_s", "client_cpu_ms_per_s", "round_trips_per_tick", "heap_bytes_per_hold"},
	scContendedLocks: {"ops_per_sec", "subscribe_unsubscribe_per_op", "peak_pubsub_channels", "server_cpu_us_per_op", "client_cpu_us_per_op"},
	scClientsOne:     clientsOneMetrics,
	scClientsSem:     clientsOneMetrics,
	scClientsMany:    {"ops_per_sec", "connections", "server_cpu_us_per_op", "client_cpu_us_per_op"},
	scClusterMasters: {"ops_per_sec", "server_cpu_us_per_op", "redis_cpu_us_per_op_per_master", "client_cpu_us_per_op"},
}

// clientsOneMetrics are the figures the curves of the clients-one-lock
// and clients-one-semaphore rows follow.
var clientsOneMetrics = []string{"ops_per_sec", "cross_process_handoffs_per_s", "min_to_fair_share", "longest_wait_ms", "p99_ms",
	"connections", "server_cpu_us_per_op", "client_cpu_us_per_op"}

// curveMetric returns figure name of row r, and whether it has one.
func curveMetric(r Result, name string) (float64, bool) {
	ptr := map[string]*float64{"p50_ms": r.P50ms, "p99_ms": r.P99ms, "ops_per_sec": r.OpsPerSec,
		"server_cpu_us_per_op": r.ServerCPUusPerOp, "client_cpu_us_per_op": r.ClientCPUusPerOp}
	if p, ok := ptr[name]; ok {
		if p == nil {
			return 0, false
		}
		return *p, true
	}
	v, ok := r.Extra[name]
	return v, ok
}

// buildCurves gathers the scale rows into curves, one per scenario,
// library and metric, each with its fitted exponent.
func buildCurves(results []Result) []Curve {
	var curves []Curve
	index := map[[3]string]int{}
	for _, r := range results {
		size, ok := r.Extra["size"]
		if !ok {
			continue
		}
		for _, m := range curveMetrics[r.Scenario] {
			v, ok := curveMetric(r, m)
			if !ok {
				continue
			}
			k := [3]string{r.Scenario, r.Library, m}
			i, seen := index[k]
			if !seen {
				i = len(curves)
				index[k] = i
				curves = append(curves, Curve{Scenario: r.Scenario, Library: r.Library, Metric: m})
			}
			curves[i].Sizes = append(curves[i].Sizes, size)
			curves[i].Values = append(curves[i].Values, v)
		}
	}
	for i := range curves {
		curves[i].Exponent = fitExponent(curves[i].Sizes, curves[i].Values)
	}
	return curves
}

// fitExponent fits v = a·s^k by least squares on (log s, log v) over the
// points with both positive, and returns k rounded, or nil with fewer
// than two such points of distinct sizes.
func fitExponent(sizes, values []float64) *float64 {
	var xs, ys []float64
	for i := range sizes {
		if sizes[i] > 0 && values[i] > 0 {
			xs = append(xs, math.Log(sizes[i]))
			ys = append(ys, math.Log(values[i]))
		}
	}
	if len(xs) < 2 {
		return nil
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return nil
	}
	k := math.Round(sxy/sxx*100) / 100
	return &k
}

// parseSizes parses a comma-separated list of positive integers.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(strings.ReplaceAll(p, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q", p)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no sizes")
	}
	return out, nil
}

// writeCurves prints the curves as a table: each metric's values at each
// size and the fitted exponent.
func writeCurves(w interface{ Write([]byte) (int, error) }, curves []Curve) {
	if len(curves) == 0 {
		return
	}
	fmt.Fprintln(w, "\nScale curves (cost ∝ size^k, k fitted by least squares on log-log):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | metric | library | values at sizes | k |")
	fmt.Fprintln(w, "|---|---|---|---|---:|")
	for _, c := range curves {
		var pts []string
		for i := range c.Sizes {
			pts = append(pts, fmt.Sprintf("%s: %s", strconv.FormatFloat(c.Sizes[i], 'f', -1, 64), num(f(c.Values[i]), 3)))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c.Scenario, c.Metric, c.Library, strings.Join(pts, ", "), num(c.Exponent, 2))
	}
}

// tolerant wraps a mutex for the scale scenarios, where a library may
// fail under the load itself (go-redis's pool timing out with thousands of
// goroutines polling through one client): a Lock that fails while ctx is
// alive is counted and called again after 10 ms, an Unlock that fails is
// counted (the lock then stays held until its lease ends, as it would for
// the library's user). The row gives both counts.
type tolerant struct {
	m              mutex
	lockE, unlockE *atomic.Int64
}

func (t tolerant) Lock(ctx context.Context) error {
	for {
		err := t.m.Lock(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		t.lockE.Add(1)
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

func (t tolerant) Unlock(ctx context.Context) error {
	if err := t.m.Unlock(ctx); err != nil {
		t.unlockE.Add(1)
	}
	return nil
}

// failures counts the failed calls of the tolerant mutexes of one run.
type failures struct{ lock, unlock atomic.Int64 }

func (fl *failures) wrap(m mutex) mutex { return tolerant{m: m, lockE: &fl.lock, unlockE: &fl.unlock} }

// note records the counts in r, and in its note when there were any.
func (fl *failures) note(r *Result) {
	l, u := fl.lock.Load(), fl.unlock.Load()
	r.Extra["failed_locks"], r.Extra["failed_unlocks"] = float64(l), float64(u)
	if l+u > 0 {
		msg := fmt.Sprintf("%d Lock calls failed (called again), %d Unlock calls failed", l, u)
		if r.Note != "" {
			msg = r.Note + "; " + msg
		}
		r.Note = msg
	}
}
