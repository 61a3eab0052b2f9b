package request

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
// TTL after the request is sent — longer than go-redis can take to
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

// Deadline returns the deadline, in epoch milliseconds by the Redis
// server's clock, of a state-changing request sent now.
func (r *Requests) Deadline(context.Context) int64 {
	now := time.Now()
	return now.Add(r.serverOffset(now) + r.ttl).UnixMilli()
}

// FreshDeadline returns the deadline, in epoch milliseconds by the Redis
// server's clock, of a fresh hold's acquisition (core.Request.Fresh) sent now with
// the given lease. It is Deadline's, made earlier when needed so
// that it comes at least freshSlack before the lease would end: when the
// acquisition takes place, the hold then outlives its deadline by more
// than a second, and the owner's field serves as the acquisition's record
// while copies of it can still be accepted (lua/lock_acquire_fresh.lua:
// one command less). Leases too short for that leave Deadline's,
// and the script records the acquisition instead.
//
// A deadline earlier than Deadline's refuses nothing that could
// apply twice: a copy that arrives after it either finds the owner's field
// (an earlier copy took the lock, whose lease has not ended: it answers
// "acquired") or is refused, and is then the only one, or the hold has
// ended. Only a go-redis re-send later than the deadline, after every
// earlier copy was lost, fails where it could have succeeded.
func (r *Requests) FreshDeadline(_ context.Context, lease time.Duration) int64 {
	ttl := r.ttl
	if short := lease - freshSlack; short < ttl && short >= MinTTL {
		ttl = short
	}
	now := time.Now()
	return now.Add(r.serverOffset(now) + ttl).UnixMilli()
}

// freshSlack is how long before the end of its lease a fresh hold's
// acquisition's deadline comes (FreshDeadline): the second by which the
// script wants the hold to outlive the deadline, and a second for the way
// to Redis and the error in the measured clock offset. The deadline leaves
// go-redis at least TTL's lower bound to re-send.
const freshSlack = 2 * time.Second

// serverOffset returns the offset to the server's clock at now (the
// caller's time.Now). When a measurement
// is due it starts one in the background and returns the last offset (zero
// at first: the clocks are assumed to agree until measured), so no request
// waits for it and none fails because of it. A failed measurement keeps the
// offset and is tried again at the next resample.
func (r *Requests) serverOffset(now time.Time) time.Duration {
	sc := &r.clock
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.sampling && !now.Before(sc.next) {
		sc.sampling = r.bg.Background(clockTimeout, r.sampleClock)
	}
	return sc.offset
}

// clockTimeout bounds one measurement of the server's clock.
const clockTimeout = 5 * time.Second

// sampleClock measures the offset to the server's clock with TIME.
func (r *Requests) sampleClock(ctx context.Context) {
	before := time.Now()
	t, err := r.rdb.Time(ctx).Result()
	after := time.Now()
	sc := &r.clock
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.sampling = false
	sc.next = after.Add(clockResample)
	if err != nil {
		r.log.Debug("redisync: could not read the server's clock; deadlines use the last offset", "err", err)
		return
	}
	sc.offset = t.Sub(before.Add(after.Sub(before) / 2))
}

// MarkUntil returns when the mark a fresh hold's release (or undo, or
// handoff) leaves on its request key expires, in epoch milliseconds by the
// server's clock: a second past the later of the acquisition's deadline
// (core.Request.Deadline) and the deadline of a request sent now, as request records
// outlive theirs (lua/prelude_request.lua).
func (r *Requests) MarkUntil(ctx context.Context, deadline int64) int64 {
	return max(deadline, r.Deadline(ctx)) + 1000
}
