package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// scScaleWaiters is the row of many waiters in one client.
const scScaleWaiters = "scale-waiters"

// scaleWaitersName is the connection name (CLIENT SETNAME) of the waiting
// client's connections, pub/sub ones included, so that CLIENT LIST tells
// them apart.
const scaleWaitersName = "redisync-bench-waiters"

// scaleBatch is how many waiters are started at once: the waiting client
// has go-redis's default pool (10 connections per CPU, a 4 s pool
// timeout), so the waiters are started in batches, each let settle before
// the next.
const scaleBatch = 500

// scaleWaiters measures one redisync client with ScaleLocks ×
// ScaleWaitersPerLock goroutines waiting, ScaleWaitersPerLock on each of
// ScaleLocks locks that a second client holds:
//
//   - what the waiting costs: the pub/sub connections the waiting client
//     has (CLIENT LIST: its connections, named scaleWaitersName, with the
//     pub/sub flag), its subscribed channels (Client.Stats), and the Go
//     heap, stack and goroutines per waiter (runtime.MemStats after GC,
//     against before the first waiter started: the waiting goroutine
//     itself and the waiting client's connections, opened as the waiters
//     started, included);
//   - handoffs with that many waiting: the holder releases ScaleHandoffs of
//     the locks one at a time, and each time the time from its Unlock call
//     to a waiter of that lock returning from Lock is measured; the new
//     holder keeps the lock, so the others go on waiting;
//   - that it all ends: every waiter then unlocks as soon as it holds its
//     lock, the holder releases the rest, and every waiter must have held
//     its lock once, with the client left with no waiter, hold or channel.
func (b *bench) scaleWaiters(ctx context.Context) (Result, error) {
	begin := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a failure ends the waits still going

	// The holder.
	rdbH, cntH := newClient(b.addr)
	defer rdbH.Close()
	holder := redisync.New(rdbH)
	defer holder.Close()
	sr := newScaleRun(b, holder, cancel)
	if err := sr.holdAll(ctx); err != nil {
		return Result{}, fmt.Errorf("holder lock: %w", err)
	}
	defer sr.releaseLeft(ctx)

	// The waiting client.
	opts := clientOptions(b.addr)
	opts.ClientName = scaleWaitersName
	rdbW := redis.NewClient(opts)
	cntW := &counter{}
	rdbW.AddHook(cntW)
	defer rdbW.Close()
	sr.wc, sr.cntW = redisync.New(rdbW), cntW
	defer sr.wc.Close()

	var before runtime.MemStats
	readMemStatsAfterGC(&before)
	goroutines0 := runtime.NumGoroutine()

	// On failure, the waits still going end before the clients close.
	defer sr.stopWaiters()
	sr.makeChannels()
	if err := sr.startWaiters(ctx); err != nil {
		return Result{}, err
	}
	setup := time.Since(begin)

	// What the waiting costs.
	cost, err := sr.cost(ctx, &before, goroutines0)
	if err != nil {
		return Result{}, err
	}

	// Handoffs with everyone waiting.
	h, err := sr.measureHandoffs(ctx, cntH)
	if err != nil {
		return Result{}, err
	}

	// Everyone through: each new holder unlocks at once.
	drain, err := sr.drain(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := sr.checkIdle(); err != nil {
		return Result{}, err
	}

	return sr.result(cost, h, setup, drain, begin), nil
}

// scaleRun is the state of one scaleWaiters run: the locks the holder
// holds, and the waiting client and its waiters.
type scaleRun struct {
	b                        *bench
	nLocks, perLock, waiters int
	cancel                   context.CancelFunc // ends the run's waits
	holder                   *redisync.Client
	names                    []string      // the locks' names
	held                     []*rlock.Lock // the holder's, one per lock
	released                 []bool        // the holder released lock i

	wc       *redisync.Client // the waiting client
	cntW     *counter         // counts the waiting client's commands
	wg       sync.WaitGroup   // the waiters
	acquired []chan time.Time // a waiter of lock i holds it
	release  []chan struct{}  // closed: lock i's holders unlock at once
	nHeld    atomic.Int64     // waiters that held their lock
	errOnce  sync.Once
	firstErr error
}

// newScaleRun returns the state of a scaleWaiters run of b whose locks
// holder holds; cancel ends its waits.
func newScaleRun(b *bench, holder *redisync.Client, cancel context.CancelFunc) *scaleRun {
	nLocks, perLock := b.cfg.ScaleLocks, b.cfg.ScaleWaitersPerLock
	return &scaleRun{
		b: b, nLocks: nLocks, perLock: perLock, waiters: nLocks * perLock,
		cancel: cancel, holder: holder,
	}
}

// holdAll makes the holder hold each of the locks.
func (sr *scaleRun) holdAll(ctx context.Context) error {
	sr.held = make([]*rlock.Lock, sr.nLocks)
	sr.names = make([]string, sr.nLocks)
	for i := range sr.held {
		sr.names[i] = sr.b.key("redisync", scScaleWaiters, fmt.Sprint(i))
		sr.held[i] = rlock.New(sr.holder, sr.names[i])
	}
	if err := eachLimited(sr.nLocks, func(i int) error { return sr.held[i].Lock(ctx) }); err != nil {
		return err
	}
	sr.released = make([]bool, sr.nLocks)
	return nil
}

// releaseLeft unlocks whatever the holder still holds if the run failed,
// even once ctx is canceled.
func (sr *scaleRun) releaseLeft(ctx context.Context) {
	_ = eachLimited(sr.nLocks, func(i int) error {
		if !sr.released[i] {
			return sr.held[i].Unlock(context.WithoutCancel(ctx))
		}
		return nil
	})
}

// readMemStatsAfterGC collects garbage twice and reads the memory
// statistics into m.
func readMemStatsAfterGC(m *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(m)
}

// makeChannels makes each lock's acquired and release channels.
func (sr *scaleRun) makeChannels() {
	sr.acquired = make([]chan time.Time, sr.nLocks)
	sr.release = make([]chan struct{}, sr.nLocks)
	for i := range sr.nLocks {
		sr.acquired[i] = make(chan time.Time, sr.perLock)
		sr.release[i] = make(chan struct{})
	}
}

// fail records the run's first failure and ends its waits.
func (sr *scaleRun) fail(err error) {
	sr.errOnce.Do(func() { sr.firstErr = err })
	sr.cancel()
}

// stopWaiters ends the waits still going and waits for every waiter to
// return.
func (sr *scaleRun) stopWaiters() {
	sr.cancel()
	sr.wg.Wait()
}

// startWaiters starts the waiters in batches of scaleBatch, each let
// settle before the next. Waiter k waits on lock k mod nLocks: each batch
// spreads over the locks. None may get its lock, which the holder holds.
func (sr *scaleRun) startWaiters(ctx context.Context) error {
	started := 0
	for started < sr.waiters {
		n := min(scaleBatch, sr.waiters-started)
		for k := started; k < started+n; k++ {
			sr.startWaiter(ctx, k%sr.nLocks)
		}
		started += n
		if err := settle(ctx, sr.wc, sr.cntW, started); err != nil {
			return fmt.Errorf("%d waiters started: %w", started, err)
		}
	}
	if sr.firstErr != nil {
		return sr.firstErr
	}
	if n := sr.nHeld.Load(); n > 0 {
		return fmt.Errorf("%d waiters got a lock the holder holds", n)
	}
	return nil
}

// startWaiter starts a goroutine of the waiting client that waits on lock
// i (see waitOn).
func (sr *scaleRun) startWaiter(ctx context.Context, i int) {
	m := rlock.New(sr.wc, sr.names[i])
	sr.wg.Add(1)
	go func() {
		defer sr.wg.Done()
		sr.waitOn(ctx, i, m)
	}()
}

// waitOn is a waiter of lock i, m: it locks m, tells acquired[i] when it
// holds it, keeps it until release[i] is closed or ctx done, and unlocks
// it.
func (sr *scaleRun) waitOn(ctx context.Context, i int, m *rlock.Lock) {
	if err := m.Lock(ctx); err != nil {
		if ctx.Err() == nil {
			sr.fail(fmt.Errorf("waiter lock: %w", err))
		}
		return
	}
	sr.acquired[i] <- time.Now()
	sr.nHeld.Add(1)
	select {
	case <-sr.release[i]:
	case <-ctx.Done():
	}
	if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
		sr.fail(fmt.Errorf("waiter unlock: %w", err))
	}
}

// scaleCost is what the waiting costs, measured with every waiter
// waiting.
type scaleCost struct {
	heap, stack        float64        // bytes per waiter
	goroutines         float64        // goroutines per waiter
	stats              redisync.Stats // the waiting client's
	conns, pubsubConns int            // the waiting client's connections
}

// cost measures what the waiting costs against the memory statistics
// before and the goroutines goroutines0 there were before the first
// waiter started.
func (sr *scaleRun) cost(ctx context.Context, before *runtime.MemStats, goroutines0 int) (scaleCost, error) {
	var after runtime.MemStats
	readMemStatsAfterGC(&after)
	goroutines := runtime.NumGoroutine() - goroutines0
	stats := sr.wc.Stats()
	conns, pubsubConns, err := sr.b.namedConnections(ctx, scaleWaitersName)
	if err != nil {
		return scaleCost{}, err
	}
	w := float64(sr.waiters)
	return scaleCost{
		heap:       (float64(after.HeapInuse) - float64(before.HeapInuse)) / w,
		stack:      (float64(after.StackInuse) - float64(before.StackInuse)) / w,
		goroutines: float64(goroutines) / w,
		stats:      stats, conns: conns, pubsubConns: pubsubConns,
	}, nil
}

// scaleHandoffs is the measure of the handoffs with everyone waiting.
type scaleHandoffs struct {
	lat     []time.Duration // each handoff's time
	elapsed time.Duration   // all of them
	u       usage           // what they cost the server
}

// measureHandoffs measures ScaleHandoffs handoffs (at most one per lock)
// with everyone waiting; cntH counts the holder's commands.
func (sr *scaleRun) measureHandoffs(ctx context.Context, cntH *counter) (scaleHandoffs, error) {
	sp, err := beginSpan(ctx, sr.b.meter, []*counter{cntH, sr.cntW})
	if err != nil {
		return scaleHandoffs{}, err
	}
	hStart := time.Now()
	lat, err := sr.handoffs(ctx, min(sr.b.cfg.ScaleHandoffs, sr.nLocks))
	if err != nil {
		return scaleHandoffs{}, err
	}
	hElapsed := time.Since(hStart)
	u, err := sp.end(ctx)
	if err != nil {
		return scaleHandoffs{}, err
	}
	return scaleHandoffs{lat: lat, elapsed: hElapsed, u: u}, nil
}

// handoffs releases n of the holder's locks, spread over them, one at a
// time, and returns each one's handoff time (see handoff).
func (sr *scaleRun) handoffs(ctx context.Context, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for k := range n {
		d, err := sr.handoff(ctx, k*sr.nLocks/n)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// handoff releases the holder's lock i and returns the time from its
// Unlock call until a waiter of the lock holds it.
func (sr *scaleRun) handoff(ctx context.Context, i int) (time.Duration, error) {
	t0 := time.Now()
	if err := sr.held[i].Unlock(ctx); err != nil {
		return 0, fmt.Errorf("holder unlock: %w", err)
	}
	sr.released[i] = true
	select {
	case t1 := <-sr.acquired[i]:
		return t1.Sub(t0), nil
	case <-ctx.Done():
		if sr.firstErr != nil {
			return 0, sr.firstErr
		}
		return 0, ctx.Err()
	case <-time.After(waitingTimeout):
		return 0, fmt.Errorf("no waiter of lock %d took it within %v of its release", i, waitingTimeout)
	}
}

// drain lets everyone through, each new holder unlocking at once: it
// releases the holder's locks left and returns how long it took until
// every waiter had held its lock and returned.
func (sr *scaleRun) drain(ctx context.Context) (time.Duration, error) {
	drainStart := time.Now()
	for i := range sr.release {
		close(sr.release[i])
	}
	if err := eachLimited(sr.nLocks, func(i int) error {
		if sr.released[i] {
			return nil
		}
		sr.released[i] = true
		return sr.held[i].Unlock(ctx)
	}); err != nil {
		return 0, fmt.Errorf("holder unlock: %w", err)
	}
	if err := sr.awaitWaiters(); err != nil {
		return 0, err
	}
	drain := time.Since(drainStart)
	if sr.firstErr != nil {
		return 0, sr.firstErr
	}
	if n := sr.nHeld.Load(); n != int64(sr.waiters) {
		return 0, fmt.Errorf("%d of %d waiters held their lock", n, sr.waiters)
	}
	return drain, nil
}

// awaitWaiters waits up to 60 s for every waiter to return; past that, it
// ends their waits, waits for them to return, and fails.
func (sr *scaleRun) awaitWaiters() error {
	const drainTimeout = 60 * time.Second
	finished := make(chan struct{})
	go func() {
		sr.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		return nil
	case <-time.After(drainTimeout):
		sr.cancel()
		<-finished
		return fmt.Errorf("%d of %d waiters had not held their lock %v after the release of all locks",
			int64(sr.waiters)-sr.nHeld.Load(), sr.waiters, drainTimeout)
	}
}

// checkIdle checks that the waiting client is left with no waiter, hold or
// channel, giving it up to 5 s: unsubscribing may trail the last Lock's
// return a little.
func (sr *scaleRun) checkIdle() error {
	busy := func(s redisync.Stats) bool { return s.Waiting != 0 || s.Holds != 0 || s.PubSubChannels != 0 }
	left := sr.wc.Stats()
	for end := time.Now().Add(5 * time.Second); busy(left) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		left = sr.wc.Stats()
	}
	if busy(left) {
		return fmt.Errorf("after every waiter finished the client still has %d waiting, %d holds, %d channels",
			left.Waiting, left.Holds, left.PubSubChannels)
	}
	return nil
}

// result returns the run's row: the waiting's cost c, the handoffs h, the
// setup and drain times, and the total time since begin.
func (sr *scaleRun) result(c scaleCost, h scaleHandoffs, setup, drain time.Duration, begin time.Time) Result {
	waiters, nLocks := sr.waiters, sr.nLocks
	w := float64(waiters)
	res := Result{
		Library:  "redisync",
		Scenario: scScaleWaiters,
		Op: fmt.Sprintf("one handoff with %d goroutines of one client waiting on %d locks (%d each) that a second client holds: the holder unlocks one lock, a waiter of it gets it and keeps it",
			waiters, nLocks, sr.perLock),
		Latency: "handoff time, from the holder's Unlock call to the waiter's Lock returning",
		Ops:     int64(len(h.lat)),
		Seconds: round4(h.elapsed.Seconds()),
		Wait:    "pub/sub (default)",
		Extra: map[string]float64{
			"locks":                      float64(nLocks),
			"waiters":                    w,
			"pubsub_connections":         float64(c.pubsubConns),
			"client_connections":         float64(c.conns),
			"pubsub_channels":            float64(c.stats.PubSubChannels),
			"heap_bytes_per_waiter":      round4(c.heap),
			"stack_bytes_per_waiter":     round4(c.stack),
			"goroutines_per_waiter":      round4(c.goroutines),
			"waiters_finished":           float64(sr.nHeld.Load()),
			"setup_seconds":              round4(setup.Seconds()),
			"drain_seconds":              round4(drain.Seconds()),
			"total_seconds":              round4(time.Since(begin).Seconds()),
			"waiting_reported_by_client": float64(c.stats.Waiting),
		},
		Note: fmt.Sprintf("%d waiters on %d locks: %d pub/sub connection(s) (%d connections in all), %d channels; per waiter %.0f B heap + %.0f B stack, %.2f goroutines; all %d held their lock and left, %.1f s after the release of all",
			waiters, nLocks, c.pubsubConns, c.conns, c.stats.PubSubChannels, c.heap, c.stack, c.goroutines, sr.nHeld.Load(), drain.Seconds()),
	}
	res.quantiles(sortDurations(h.lat))
	res.perOp(h.u, int64(len(h.lat)))
	return res
}

// settle waits until the client c has n acquisitions waiting (its Stats)
// and has sent nothing for a while: every started waiter has made its
// attempts and is waiting.
func settle(ctx context.Context, c *redisync.Client, cnt *counter, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	last, quiet := int64(-1), 0
	for quiet < 5 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the waiters did not settle within 30 s: %d of %d waiting, %d requests in flight",
				c.Stats().Waiting, n, cnt.inFlight())
		}
		time.Sleep(10 * time.Millisecond)
		done := cnt.completed.Load()
		if c.Stats().Waiting >= n && cnt.inFlight() == 0 && done == last {
			quiet++
		} else {
			quiet = 0
		}
		last = done
	}
	return nil
}

// namedConnections returns how many connections the server has named
// name, and how many of them are in pub/sub mode (flag P).
func (b *bench) namedConnections(ctx context.Context, name string) (all, pubsub int, err error) {
	list, err := b.meter.ClientList(ctx).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("CLIENT LIST: %w", err)
	}
	for _, line := range strings.Split(list, "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		if fields["name"] != name {
			continue
		}
		all++
		if strings.Contains(fields["flags"], "P") {
			pubsub++
		}
	}
	if all == 0 {
		return 0, 0, errors.New("CLIENT LIST shows no connection of the waiting client")
	}
	return all, pubsub, nil
}

// eachLimited runs f(0) … f(n-1), 8 at a time, and returns the first
// error.
func eachLimited(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}
