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
	cfg := b.cfg
	nLocks, perLock := cfg.ScaleLocks, cfg.ScaleWaitersPerLock
	waiters := nLocks * perLock
	begin := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a failure ends the waits still going

	// The holder.
	rdbH, cntH := newClient(b.addr)
	defer rdbH.Close()
	holder := redisync.New(rdbH)
	defer holder.Close()
	held := make([]*rlock.Lock, nLocks)
	names := make([]string, nLocks)
	for i := range held {
		names[i] = b.key("redisync", scScaleWaiters, fmt.Sprint(i))
		held[i] = rlock.New(holder, names[i])
	}
	if err := eachLimited(nLocks, func(i int) error { return held[i].Lock(ctx) }); err != nil {
		return Result{}, fmt.Errorf("holder lock: %w", err)
	}
	released := make([]bool, nLocks)
	defer func() {
		// Unlocks whatever the holder still holds if the run failed.
		_ = eachLimited(nLocks, func(i int) error {
			if !released[i] {
				return held[i].Unlock(context.WithoutCancel(ctx))
			}
			return nil
		})
	}()

	// The waiting client.
	opts := clientOptions(b.addr)
	opts.ClientName = scaleWaitersName
	rdbW := redis.NewClient(opts)
	cntW := &counter{}
	rdbW.AddHook(cntW)
	defer rdbW.Close()
	wc := redisync.New(rdbW)
	defer wc.Close()

	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines0 := runtime.NumGoroutine()

	var (
		wg       sync.WaitGroup
		acquired = make([]chan time.Time, nLocks) // a waiter of lock i holds it
		release  = make([]chan struct{}, nLocks)  // closed: lock i's holders unlock at once
		nHeld    atomic.Int64                     // waiters that held their lock
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		cancel()
	}
	// On failure, the waits still going end before the clients close.
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := range nLocks {
		acquired[i] = make(chan time.Time, perLock)
		release[i] = make(chan struct{})
	}
	// Waiter k waits on lock k mod nLocks: each batch spreads over the locks.
	started := 0
	for started < waiters {
		n := min(scaleBatch, waiters-started)
		for k := started; k < started+n; k++ {
			i := k % nLocks
			m := rlock.New(wc, names[i])
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Lock(ctx); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("waiter lock: %w", err))
					}
					return
				}
				acquired[i] <- time.Now()
				nHeld.Add(1)
				select {
				case <-release[i]:
				case <-ctx.Done():
				}
				if err := m.Unlock(context.WithoutCancel(ctx)); err != nil {
					fail(fmt.Errorf("waiter unlock: %w", err))
				}
			}()
		}
		started += n
		if err := settle(ctx, wc, cntW, started); err != nil {
			return Result{}, fmt.Errorf("%d waiters started: %w", started, err)
		}
	}
	if firstErr != nil {
		return Result{}, firstErr
	}
	if n := nHeld.Load(); n > 0 {
		return Result{}, fmt.Errorf("%d waiters got a lock the holder holds", n)
	}
	setup := time.Since(begin)

	// What the waiting costs.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	goroutines := runtime.NumGoroutine() - goroutines0
	stats := wc.Stats()
	conns, pubsubConns, err := b.namedConnections(ctx, scaleWaitersName)
	if err != nil {
		return Result{}, err
	}

	// Handoffs with everyone waiting.
	handoffs := min(cfg.ScaleHandoffs, nLocks)
	sp, err := beginSpan(ctx, b.meter, []*counter{cntH, cntW})
	if err != nil {
		return Result{}, err
	}
	lat := make([]time.Duration, 0, handoffs)
	hStart := time.Now()
	for k := range handoffs {
		i := k * nLocks / handoffs
		t0 := time.Now()
		if err := held[i].Unlock(ctx); err != nil {
			return Result{}, fmt.Errorf("holder unlock: %w", err)
		}
		released[i] = true
		select {
		case t1 := <-acquired[i]:
			lat = append(lat, t1.Sub(t0))
		case <-ctx.Done():
			if firstErr != nil {
				return Result{}, firstErr
			}
			return Result{}, ctx.Err()
		case <-time.After(waitingTimeout):
			return Result{}, fmt.Errorf("no waiter of lock %d took it within %v of its release", i, waitingTimeout)
		}
	}
	hElapsed := time.Since(hStart)
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}

	// Everyone through: each new holder unlocks at once.
	drainStart := time.Now()
	for i := range release {
		close(release[i])
	}
	if err := eachLimited(nLocks, func(i int) error {
		if released[i] {
			return nil
		}
		released[i] = true
		return held[i].Unlock(ctx)
	}); err != nil {
		return Result{}, fmt.Errorf("holder unlock: %w", err)
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	const drainTimeout = 60 * time.Second
	select {
	case <-finished:
	case <-time.After(drainTimeout):
		cancel()
		<-finished
		return Result{}, fmt.Errorf("%d of %d waiters had not held their lock %v after the release of all locks",
			int64(waiters)-nHeld.Load(), waiters, drainTimeout)
	}
	drain := time.Since(drainStart)
	if firstErr != nil {
		return Result{}, firstErr
	}
	if n := nHeld.Load(); n != int64(waiters) {
		return Result{}, fmt.Errorf("%d of %d waiters held their lock", n, waiters)
	}
	// Unsubscribing may trail the last Lock's return a little.
	left := wc.Stats()
	for end := time.Now().Add(5 * time.Second); (left.Waiting != 0 || left.Holds != 0 || left.PubSubChannels != 0) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		left = wc.Stats()
	}
	if left.Waiting != 0 || left.Holds != 0 || left.PubSubChannels != 0 {
		return Result{}, fmt.Errorf("after every waiter finished the client still has %d waiting, %d holds, %d channels",
			left.Waiting, left.Holds, left.PubSubChannels)
	}

	w := float64(waiters)
	heap := (float64(after.HeapInuse) - float64(before.HeapInuse)) / w
	stack := (float64(after.StackInuse) - float64(before.StackInuse)) / w
	res := Result{
		Library:  "redisync",
		Scenario: scScaleWaiters,
		Op: fmt.Sprintf("one handoff with %d goroutines of one client waiting on %d locks (%d each) that a second client holds: the holder unlocks one lock, a waiter of it gets it and keeps it",
			waiters, nLocks, perLock),
		Latency: "handoff time, from the holder's Unlock call to the waiter's Lock returning",
		Ops:     int64(len(lat)),
		Seconds: round4(hElapsed.Seconds()),
		Wait:    "pub/sub (default)",
		Extra: map[string]float64{
			"locks":                      float64(nLocks),
			"waiters":                    w,
			"pubsub_connections":         float64(pubsubConns),
			"client_connections":         float64(conns),
			"pubsub_channels":            float64(stats.PubSubChannels),
			"heap_bytes_per_waiter":      round4(heap),
			"stack_bytes_per_waiter":     round4(stack),
			"goroutines_per_waiter":      round4(float64(goroutines) / w),
			"waiters_finished":           float64(nHeld.Load()),
			"setup_seconds":              round4(setup.Seconds()),
			"drain_seconds":              round4(drain.Seconds()),
			"total_seconds":              round4(time.Since(begin).Seconds()),
			"waiting_reported_by_client": float64(stats.Waiting),
		},
		Note: fmt.Sprintf("%d waiters on %d locks: %d pub/sub connection(s) (%d connections in all), %d channels; per waiter %.0f B heap + %.0f B stack, %.2f goroutines; all %d held their lock and left, %.1f s after the release of all",
			waiters, nLocks, pubsubConns, conns, stats.PubSubChannels, heap, stack, float64(goroutines)/w, nHeld.Load(), drain.Seconds()),
	}
	res.quantiles(sortDurations(lat))
	res.perOp(u, int64(len(lat)))
	return res, nil
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
