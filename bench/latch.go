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
	fo := &fanout{b: b, rc: rc, w: w}
	// A first round, not measured, loads the scripts and opens the
	// connections.
	if err := fo.round(ctx, -1, false); err != nil {
		return Result{}, fmt.Errorf("warm-up round: %w", err)
	}
	for r := range b.cfg.FanoutRounds {
		if err := fo.round(ctx, r, true); err != nil {
			return Result{}, fmt.Errorf("round %d: %w", r, err)
		}
	}
	total, fanouts, perWaiter := fo.total, fo.fanouts, fo.perWaiter
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

// fanout is the latch-fanout scenario's rounds and what they measured.
type fanout struct {
	b  *bench
	rc *redisyncClients
	w  int // waiters

	total     usage
	fanouts   []time.Duration // per round, to the last waiter's return
	perWaiter []time.Duration // per waiter, to its return
}

// round runs round r: w waiters wait on a latch of count 1, and once all
// of them wait it is counted down. With measure, its figures are added.
func (fo *fanout) round(ctx context.Context, r int, measure bool) error {
	b, rc, w := fo.b, fo.rc, fo.w
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
	if err := fo.allWaiting(ctx, name, base); err != nil {
		cancel()
		wg.Wait()
		return err
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
	fo.total.add(u)
	return fo.record(t0, returned, errs)
}

// allWaiting waits until every waiter on the latch name waits: the
// clients count w waits in progress (Stats.Waiting), every client's
// subscription is confirmed, and no request has been in flight or
// completed for quietFor (each waiter's check after subscribing is done),
// for at most 30s. Counting requests per waiter cannot tell: a latch's
// count read is a script through a Client's script pipeline, and reads
// made at once share a round trip.
func (fo *fanout) allWaiting(ctx context.Context, name string, base int64) error {
	const quietFor = 50 * time.Millisecond
	rc, w := fo.rc, fo.w
	deadline := time.Now().Add(30 * time.Second)
	last, since := int64(-1), time.Now()
	for {
		n, idle := rc.completed()
		if n != last || !idle {
			last, since = n, time.Now()
		}
		waiting := 0
		for _, c := range rc.clients {
			waiting += c.Stats().Waiting
		}
		if waiting == w && time.Since(since) >= quietFor {
			subs, err := fo.b.meter.PubSubNumSub(ctx, latchChannel(name)).Result()
			if err != nil {
				return err
			}
			if subs[latchChannel(name)] == int64(len(rc.clients)) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d waiters were not all waiting within 30s (%d waiting, %d requests done)", w, waiting, n-base)
		}
		time.Sleep(time.Millisecond)
	}
}

// record adds a measured round's figures: each waiter's time from t0
// (the CountDown) to its return, and the last of them.
func (fo *fanout) record(t0 time.Time, returned []time.Time, errs []error) error {
	var last time.Duration
	for i := range fo.w {
		if errs[i] != nil {
			return fmt.Errorf("waiter %d: %w", i, errs[i])
		}
		d := returned[i].Sub(t0)
		fo.perWaiter = append(fo.perWaiter, d)
		last = max(last, d)
	}
	fo.fanouts = append(fo.fanouts, last)
	return nil
}
