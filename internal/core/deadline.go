package core

import (
	"context"
	"sync"
	"time"
)

// Request deadlines.
//
// Every state-changing request carries a deadline by the Redis server's
// clock (see lua/prelude_request.lua): a copy of the request that reaches
// Redis after it, and finds no record of an earlier copy, is refused, and
// the record of an applied copy lives until just past it. The deadline is
// requestTTL after the request is sent — longer than go-redis can take to
// re-send it — converted to the server's clock with an offset measured
// with TIME (at the first request, then every clockResample).

// clockResample is how often the offset to the server's clock is measured
// again.
const clockResample = 30 * time.Second

// serverClock is the measured offset between this process's clock and the
// Redis server's.
type serverClock struct {
	mu       sync.Mutex
	offset   time.Duration // server minus local
	next     time.Time     // when to measure again; zero: never measured
	sampling bool
}

// RequestDeadline returns the deadline, in epoch milliseconds by the Redis
// server's clock, of a state-changing request sent now.
func (c *Client) RequestDeadline(ctx context.Context) int64 {
	return time.Now().Add(c.serverOffset(ctx) + c.reqTTL).UnixMilli()
}

// serverOffset returns the offset to the server's clock. When a measurement
// is due it starts one in the background and returns the last offset (zero
// at first: the clocks are assumed to agree until measured), so no request
// waits for it and none fails because of it. A failed measurement keeps the
// offset and is tried again at the next resample.
func (c *Client) serverOffset(context.Context) time.Duration {
	sc := &c.clock
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.sampling && !time.Now().Before(sc.next) {
		sc.sampling = c.background(clockTimeout, c.sampleClock)
	}
	return sc.offset
}

// clockTimeout bounds one measurement of the server's clock.
const clockTimeout = 5 * time.Second

// sampleClock measures the offset to the server's clock with TIME.
func (c *Client) sampleClock(ctx context.Context) {
	before := time.Now()
	t, err := c.rdb.Time(ctx).Result()
	after := time.Now()
	sc := &c.clock
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.sampling = false
	sc.next = after.Add(clockResample)
	if err != nil {
		c.log.Debug("redisync: could not read the server's clock; deadlines use the last offset", "err", err)
		return
	}
	sc.offset = t.Sub(before.Add(after.Sub(before) / 2))
}
