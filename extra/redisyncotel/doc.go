// Package redisyncotel reports what a redisync Client does as OpenTelemetry
// metrics and spans, the way go-redis's extra/redisotel does for Redis
// commands. It is a module of its own, so the redisync library depends on
// no telemetry package: redisync emits events (redisync.Observer) and keeps
// counters (redisync.Client.Stats); this package turns them into
// instruments.
//
//	c := redisync.New(rdb, redisyncotel.New(
//		redisyncotel.WithMeterProvider(mp),  // default: otel.GetMeterProvider()
//		redisyncotel.WithTracerProvider(tp), // default: otel.GetTracerProvider()
//	))
//
// # Metrics
//
// All under the instrumentation scope ScopeName; durations in seconds.
//
//	redisync.acquisitions                counter    {call}       redisync.primitive, redisync.result
//	redisync.wait.duration               histogram  s            redisync.primitive, redisync.result
//	redisync.hold.duration               histogram  s            redisync.primitive, redisync.hold.end
//	redisync.holds.lost                  counter    {hold}       redisync.primitive
//	redisync.holds.released_at_shutdown  counter    {hold}       redisync.primitive
//	redisync.renewals                    counter    {renewal}
//	redisync.renewal.failures            counter    {renewal}
//	redisync.pubsub.reconnects           counter    {reconnect}  (observable)
//	redisync.pubsub.channels             gauge      {channel}    (observable)
//	redisync.holds                       gauge      {hold}       (observable)
//	redisync.waiting                     gauge      {call}       (observable)
//
// An acquisition is any call that may wait: Lock, TryLock, RLock and
// TryRLock of every lock kind, Acquire and TryAcquire (and their N forms)
// of both semaphores, Wait and TryWait of a latch; a MultiLock counts as
// its members' calls. The rate limiters count too: Acquire and TryAcquire
// of a Limiter, Allow, AllowN, Wait and WaitN of a GCRA; "acquired" is an
// allowed decision, "busy" and "timed_out" a denied one, and
// redisync.wait.duration how long allowed calls waited. The limiter's name
// is on the span, not on the metrics (names can be per user: unbounded
// cardinality).
//
// redisync.primitive is "rlock", "fair_lock", "spin_lock", "rwlock.read",
// "rwlock.write", "semaphore", "expirable_semaphore", "countdown",
// "rate_limiter" (ratelimit.Limiter) or "gcra" (ratelimit.GCRA).
// redisync.result is "acquired" (for a latch: it was open; for a rate
// limiter: allowed), "busy" (a TryX with wait 0 that did not succeed),
// "timed_out" (a TryX wait ran out), "cancelled" (the context ended first)
// or "error". Calls rejected for a bad argument are not counted.
//
// A hold is one owner's hold on a lock, from the acquisition that took it
// to the release that ended it (reentrant acquisitions extend it) or its
// loss; redisync.hold.end is "released", "lost" or "shutdown". Semaphore
// permits are not holds. Closing a Client that still holds locks counts
// them as lost: they are not released and expire with their lease.
// Client.Shutdown releases them instead: those it released are "shutdown"
// and counted in redisync.holds.released_at_shutdown, not in
// redisync.holds.lost (an alert on losses does not fire at every deploy);
// those it could not release (its context ended, Redis failed) are lost.
//
// Renewals and failures count holds, per watchdog round: a round that
// renews 3 holds adds 3. A failure is a renewal call that failed with an
// error (Redis unreachable, a timeout); it is retried within a second, and
// the hold is lost once no renewal has succeeded for a whole lease. A hold
// found gone from Redis is counted in redisync.holds.lost, not as a
// failure.
//
// The observable instruments are read from Client.Stats at each
// collection, summed over the open Clients the observer was given to.
//
// # Spans
//
// Every acquisition runs in a span named SpanName ("redisync.wait"), kind
// internal, with the attributes redisync.primitive, redisync.name,
// redisync.wait.timeout (TryX calls only) and, at its end,
// redisync.result. A result of "error" sets the span's status to Error and
// records the error. Redis commands the call sends run in the span's
// context, so go-redis's own spans (redisotel) nest under it.
//
// # Cost
//
// Counters and histograms use attribute sets built once per primitive and
// result. A span is started for every acquisition; give a tracer provider
// from go.opentelemetry.io/otel/trace/noop for metrics only.
package redisyncotel
