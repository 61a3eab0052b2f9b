package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/internal/keys"
)

// MaxBatch is the most holds one renewal script call renews.
const MaxBatch = 100

// maxRetryDelay bounds the wait before renewals that failed with an error
// are tried again, so a short outage does not cost a whole interval.
const maxRetryDelay = time.Second

// watchdog renews every watchdog-held hold of one client from one
// goroutine, which runs only while there is something to renew.
type watchdog struct {
	c       *Client
	mu      sync.Mutex
	holds   map[*Hold]struct{}
	running bool
	wg      sync.WaitGroup
	ticks   uint64 // completed renewal rounds, for tests
	calls   uint64 // renewal script calls sent, for tests and benchmarks
}

func (w *watchdog) add(h *Hold) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds == nil {
		w.holds = make(map[*Hold]struct{})
	}
	w.holds[h] = struct{}{}
	if !w.running {
		select {
		case <-w.c.closing:
			return
		default:
		}
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
}

func (w *watchdog) remove(h *Hold) {
	w.mu.Lock()
	delete(w.holds, h)
	w.mu.Unlock()
}

// wait waits for the renewal goroutine to stop after closing was closed.
func (w *watchdog) wait() { w.wg.Wait() }

func (w *watchdog) run() {
	defer w.wg.Done()
	interval := w.c.opts.WatchdogTimeout / 3
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-w.c.closing:
			w.mu.Lock()
			w.running = false
			w.mu.Unlock()
			return
		case <-timer.C:
		}
		failed := w.renewAll(interval)
		w.mu.Lock()
		w.ticks++
		if len(w.holds) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		next := interval
		if failed {
			next = min(interval, maxRetryDelay)
		}
		timer.Reset(next)
	}
}

type batchKey struct {
	script *redis.Script
	slot   int
}

// renewAll renews every registered hold once and reports whether any batch
// failed with an error (those holds are retried soon, and lost once no
// renewal has succeeded for a whole lease).
func (w *watchdog) renewAll(timeout time.Duration) (failed bool) {
	w.mu.Lock()
	holds := make([]*Hold, 0, len(w.holds))
	for h := range w.holds {
		holds = append(holds, h)
	}
	w.mu.Unlock()

	now := time.Now()
	groups := make(map[batchKey][]*Hold)
	var order []batchKey
	for _, h := range holds {
		h.mu.Lock()
		expired := now.Sub(h.lastOK) >= h.lease
		lease := h.lease
		h.mu.Unlock()
		if expired {
			h.end(fmt.Errorf("%w: no renewal succeeded within the lease of %v", ErrLockLost, lease))
			continue
		}
		k := batchKey{script: h.renew.Script}
		if w.c.cluster {
			k.slot = keys.Slot(h.renew.Keys[0])
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], h)
	}

	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for _, k := range order {
		hs := groups[k]
		for len(hs) > 0 {
			n := min(len(hs), MaxBatch)
			batch := hs[:n]
			hs = hs[n:]
			g.Go(func() error {
				if err := w.renewBatch(k.script, batch, timeout); err != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
					w.c.log.Warn("redisync: renewal failed, will retry", "holds", len(batch), "err", err)
				}
				return nil
			})
		}
	}
	_ = g.Wait()
	return failed
}

func (w *watchdog) renewBatch(script *redis.Script, batch []*Hold, timeout time.Duration) error {
	var ks []string
	args := []any{w.c.opts.WatchdogTimeout.Milliseconds(), len(batch)}
	for _, h := range batch {
		ks = append(ks, h.renew.Keys...)
		args = append(args, len(h.renew.Keys), len(h.renew.Args))
		args = append(args, h.renew.Args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
	res, err := script.Run(ctx, w.c.rdb, ks, args...).Int64Slice()
	if err != nil {
		return err
	}
	if len(res) != len(batch) {
		return fmt.Errorf("renewal script returned %d results for %d holds", len(res), len(batch))
	}
	for i, h := range batch {
		h.mu.Lock()
		live := h.renewing && h.err == nil
		if live && res[i] == 1 {
			h.lastOK = start
		}
		h.mu.Unlock()
		// A hold whose renewal was stopped meanwhile (by Unlock) is not
		// lost when its field is found gone: it was released.
		if live && res[i] == 0 {
			h.end(fmt.Errorf("%w: renewal found the hold gone from Redis", ErrLockLost))
		}
	}
	return nil
}

// WatchdogStats reports the watchdog's activity, for tests and benchmarks.
type WatchdogStats struct {
	Holds int    // holds being renewed
	Ticks uint64 // renewal rounds completed
	Calls uint64 // renewal script calls sent
}

// WatchdogStats returns a snapshot of the watchdog's activity.
func (c *Client) WatchdogStats() WatchdogStats {
	c.wd.mu.Lock()
	defer c.wd.mu.Unlock()
	return WatchdogStats{Holds: len(c.wd.holds), Ticks: c.wd.ticks, Calls: c.wd.calls}
}
