package main

import (
	"context"
	"fmt"
	"time"
)

// scRTT is the row of the PING round trip, the unit of every row's
// p50_rtt.
const scRTT = "rtt"

// The rtt row measures rttPings PINGs, after rttWarmup unmeasured ones.
const (
	rttPings  = 2000
	rttWarmup = 200
)

// rtt measures the round trip every request pays: PINGs sent one after
// another from one goroutine through a go-redis client with the options of
// every library's clients. Its p50 is the unit of p50_rtt.
func (b *bench) rtt(ctx context.Context) (Result, error) {
	rdb, cnt := newClient(b.addr)
	defer rdb.Close()
	for range rttWarmup {
		if err := rdb.Ping(ctx).Err(); err != nil {
			return Result{}, fmt.Errorf("ping: %w", err)
		}
	}
	sp, err := beginSpan(ctx, b.meter, []*counter{cnt})
	if err != nil {
		return Result{}, err
	}
	lat := make([]time.Duration, 0, rttPings)
	start := time.Now()
	for range rttPings {
		t := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return Result{}, fmt.Errorf("ping: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Library:   "go-redis",
		Scenario:  scRTT,
		OpsPerSec: f(float64(len(lat)) / elapsed.Seconds()),
		Op:        "one PING from one goroutine, the next sent when the previous is answered",
		Latency:   "PING round trip; p50 is the unit of the p50/rtt column",
		Ops:       int64(len(lat)),
		Seconds:   round4(elapsed.Seconds()),
	}
	res.quantiles(sortDurations(lat))
	res.perOp(u, int64(len(lat)))
	return res, nil
}
