package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/countdown"
)

// latchChannel is the latch's pub/sub channel in Redisson's layout (see
// API.md): the name in braces whatever it holds.
func latchChannel(name string) string { return "redisson_countdownlatch__channel__{" + name + "}" }

// latchFanout measures, over FanoutRounds rounds, the time from CountDown
// (count 1 → 0) to the last of FanoutWaiters waiters, spread over Clients
// clients and all already waiting, returning from Wait.
//
// A waiter is waiting once it has checked the count, subscribed and
// checked again (redisync's wait algorithm): the round starts when the
// clients have completed two requests per waiter and every client's
// subscription is confirmed (PUBSUB NUMSUB, sent before the measured part).
func (b *bench) latchFanout(ctx context.Context) (Result, error) {
	rc := b.openRedisyncClients(b.cfg.Clients)
	defer rc.close()
	w := b.cfg.FanoutWaiters
	var (
		total     usage
		fanouts   []time.Duration
		perWaiter []time.Duration
	)
	round := func(r int, measure bool) error {
		name := b.key("redisync", scLatchFanout, fmt.Sprint(r))
		setter := countdown.New(rc.clients[0], name)
		if ok, err := setter.TrySetCount(ctx, 1); err != nil || !ok {
			return fmt.Errorf("set count: ok=%v err=%v", ok, err)
		}
		base, _ := rc.completed()
		returned := make([]time.Time, w)
		errs := make([]error, w)
		var wg sync.WaitGroup
		waitCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		for i := range w {
			l := countdown.New(rc.clients[i%len(rc.clients)], name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = l.Wait(waitCtx)
				returned[i] = time.Now()
			}()
		}
		// Until every waiter waits.
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, idle := rc.completed()
			if n >= base+int64(2*w) && idle {
				subs, err := b.meter.PubSubNumSub(ctx, latchChannel(name)).Result()
				if err != nil {
					return err
				}
				if subs[latchChannel(name)] == int64(len(rc.clients)) {
					break
				}
			}
			if time.Now().After(deadline) {
				cancel()
				wg.Wait()
				return fmt.Errorf("the %d waiters were not all waiting within 30s (%d of %d requests done)", w, n-base, 2*w)
			}
			time.Sleep(time.Millisecond)
		}
		sp, err := beginSpan(ctx, b.meter, rc.counters)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := setter.CountDown(ctx); err != nil {
			return fmt.Errorf("count down: %w", err)
		}
		wg.Wait()
		u, err := sp.end(ctx)
		if err != nil {
			return err
		}
		if !measure {
			return nil
		}
		total.add(u)
		var last time.Duration
		for i := range w {
			if errs[i] != nil {
				return fmt.Errorf("waiter %d: %w", i, errs[i])
			}
			d := returned[i].Sub(t0)
			perWaiter = append(perWaiter, d)
			last = max(last, d)
		}
		fanouts = append(fanouts, last)
		return nil
	}
	// A first round, not measured, loads the scripts and opens the
	// connections.
	if err := round(-1, false); err != nil {
		return Result{}, fmt.Errorf("warm-up round: %w", err)
	}
	for r := range b.cfg.FanoutRounds {
		if err := round(r, true); err != nil {
			return Result{}, fmt.Errorf("round %d: %w", r, err)
		}
	}
	sortDurations(perWaiter)
	res := Result{
		Library:  "redisync",
		Scenario: scLatchFanout,
		Op: fmt.Sprintf("one waiter released: CountDown opens a latch with %d waiters over %d clients",
			w, len(rc.clients)),
		Latency: fmt.Sprintf("fan-out time per round, from the CountDown call to the last of the %d waiters returning", w),
		Ops:     int64(len(perWaiter)),
		Seconds: round4(total.elapsed.Seconds()),
		Wait:    "pub/sub: one message per client wakes all its waiters",
		Extra: map[string]float64{
			"waiters":        float64(w),
			"rounds":         float64(len(fanouts)),
			"waiter_p50_ms":  round4(ms(percentile(perWaiter, 0.50))),
			"waiter_p99_ms":  round4(ms(percentile(perWaiter, 0.99))),
			"commands_round": round4(float64(total.commands) / float64(len(fanouts))),
		},
	}
	res.quantiles(sortDurations(fanouts))
	res.perOp(total, int64(len(perWaiter)))
	return res, nil
}
