package redisyncotel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redisync/redisync"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/redisync/redisync/extra/redisyncotel"

// Attribute keys.
const (
	// PrimitiveKey is the kind of primitive: "rlock", "fair_lock",
	// "spin_lock", "rwlock.read", "rwlock.write", "semaphore",
	// "expirable_semaphore", "countdown", "rate_limiter" (a
	// ratelimit.Limiter) or "gcra" (a ratelimit.GCRA)
	// (redisync.WaitInfo.Primitive).
	PrimitiveKey = attribute.Key("redisync.primitive")
	// ResultKey is how an acquisition or wait ended: "acquired", "busy",
	// "timed_out", "cancelled", "error" (redisync.WaitResult).
	ResultKey = attribute.Key("redisync.result")
	// HoldEndKey is how a hold ended: "released", "lost", or "shutdown"
	// (released by Client.Shutdown: no loss).
	HoldEndKey = attribute.Key("redisync.hold.end")
	// NameKey is the primitive's name; on spans only, since names are
	// unbounded.
	NameKey = attribute.Key("redisync.name")
	// WaitKey is the longest wait of a TryX call in seconds (0: a single
	// attempt); absent for calls that wait until ctx ends. On spans only.
	WaitKey = attribute.Key("redisync.wait.timeout")
)

// SpanName is the name of the span around every acquisition or wait.
const SpanName = "redisync.wait"

// durationBuckets are the histograms' bucket boundaries in seconds, from a
// lock taken at once on a local Redis to a long wait or hold.
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// New returns a redisync option that reports the Client's events as
// OpenTelemetry metrics and spans (see the package documentation for the
// instruments). It is redisync.WithObserver(NewObserver(opts...)).
func New(opts ...Option) redisync.Option {
	return redisync.WithObserver(NewObserver(opts...))
}

// NewObserver returns an observer that reports events as OpenTelemetry
// metrics and spans. It creates its instruments at once; an instrument
// that cannot be created is reported to otel.Handle and left out. One
// observer may be given to any number of Clients: counters and histograms
// add up their events, and the gauges sum the Clients that are open.
func NewObserver(opts ...Option) redisync.Observer {
	cfg := config{}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	o := newObserver(cfg)
	return redisync.Observer{
		WaitStart:   o.waitStart,
		WaitEnd:     o.waitEnd,
		HoldEnd:     o.holdEnd,
		RenewalTick: o.renewalTick,
		Attach:      o.attach,
	}
}

// observer holds the instruments and the Clients whose gauges it reports.
type observer struct {
	tracer trace.Tracer
	meter  metric.Meter

	acquisitions    metric.Int64Counter
	waitDuration    metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	holdsLost       metric.Int64Counter
	holdsShutdown   metric.Int64Counter
	renewals        metric.Int64Counter
	renewalFailures metric.Int64Counter
	reconnects      metric.Int64ObservableCounter
	channels        metric.Int64ObservableGauge
	holds           metric.Int64ObservableGauge
	waiting         metric.Int64ObservableGauge

	// attrs caches the measurement options of each attribute set, so an
	// event builds no attribute set after the first of its kind.
	attrs sync.Map // attrKey → metric.MeasurementOption

	mu      sync.Mutex
	clients map[*redisync.Client]struct{} // attached and not yet closed
	reg     metric.Registration           // the gauges' callback while clients is not empty
	// retired is the reconnect count of Clients already closed, so that
	// the counter never goes down when one goes.
	retired int64
}

type attrKey struct {
	primitive string
	result    string // a WaitResult, or a HoldEndKey value
	hold      bool
}

func newObserver(cfg config) *observer {
	o := &observer{
		tracer:  cfg.tp.Tracer(ScopeName),
		meter:   cfg.mp.Meter(ScopeName),
		clients: make(map[*redisync.Client]struct{}),
	}
	m := o.meter
	var err error
	if o.acquisitions, err = m.Int64Counter("redisync.acquisitions",
		metric.WithUnit("{call}"),
		metric.WithDescription("Acquisitions and waits (Lock, TryLock, RLock, Acquire, Wait, ...) by primitive and result.")); err != nil {
		otel.Handle(err)
	}
	if o.waitDuration, err = m.Float64Histogram("redisync.wait.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time acquisitions and waits took, by primitive and result."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		otel.Handle(err)
	}
	if o.holdDuration, err = m.Float64Histogram("redisync.hold.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time lock holds lasted, from acquisition to release or loss."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		otel.Handle(err)
	}
	if o.holdsLost, err = m.Int64Counter("redisync.holds.lost",
		metric.WithUnit("{hold}"),
		metric.WithDescription("Lock holds that ended without being released: found gone, not renewed within the lease, fixed lease expired, or Client closed.")); err != nil {
		otel.Handle(err)
	}
	if o.holdsShutdown, err = m.Int64Counter("redisync.holds.released_at_shutdown",
		metric.WithUnit("{hold}"),
		metric.WithDescription("Lock holds released by Client.Shutdown: not losses, though their owners see ErrLockLost.")); err != nil {
		otel.Handle(err)
	}
	if o.renewals, err = m.Int64Counter("redisync.renewals",
		metric.WithUnit("{renewal}"),
		metric.WithDescription("Hold renewals by the watchdog that succeeded.")); err != nil {
		otel.Handle(err)
	}
	if o.renewalFailures, err = m.Int64Counter("redisync.renewal.failures",
		metric.WithUnit("{renewal}"),
		metric.WithDescription("Hold renewals by the watchdog whose call failed with an error; retried until the lease runs out.")); err != nil {
		otel.Handle(err)
	}
	if o.reconnects, err = m.Int64ObservableCounter("redisync.pubsub.reconnects",
		metric.WithUnit("{reconnect}"),
		metric.WithDescription("Pub/sub connections re-established after a failure or an unanswered ping.")); err != nil {
		otel.Handle(err)
	}
	if o.channels, err = m.Int64ObservableGauge("redisync.pubsub.channels",
		metric.WithUnit("{channel}"),
		metric.WithDescription("Pub/sub channels subscribed for waiters.")); err != nil {
		otel.Handle(err)
	}
	if o.holds, err = m.Int64ObservableGauge("redisync.holds",
		metric.WithUnit("{hold}"),
		metric.WithDescription("Lock holds the Clients have.")); err != nil {
		otel.Handle(err)
	}
	if o.waiting, err = m.Int64ObservableGauge("redisync.waiting",
		metric.WithUnit("{call}"),
		metric.WithDescription("Acquisitions and waits in progress.")); err != nil {
		otel.Handle(err)
	}
	// The unattributed counters start at 0, so a dashboard shows "no
	// failures" rather than no data.
	if o.renewals != nil {
		o.renewals.Add(context.Background(), 0)
	}
	if o.renewalFailures != nil {
		o.renewalFailures.Add(context.Background(), 0)
	}
	return o
}

// measurement returns the cached attribute option for k.
func (o *observer) measurement(k attrKey) metric.MeasurementOption {
	if v, ok := o.attrs.Load(k); ok {
		return v.(metric.MeasurementOption)
	}
	kv := []attribute.KeyValue{PrimitiveKey.String(k.primitive)}
	switch {
	case k.hold && k.result != "":
		kv = append(kv, HoldEndKey.String(k.result))
	case !k.hold:
		kv = append(kv, ResultKey.String(k.result))
	}
	v, _ := o.attrs.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(kv...)))
	return v.(metric.MeasurementOption)
}

func (o *observer) waitStart(ctx context.Context, w redisync.WaitInfo) context.Context {
	attrs := []attribute.KeyValue{PrimitiveKey.String(w.Primitive), NameKey.String(w.Name)}
	if !w.Forever {
		attrs = append(attrs, WaitKey.Float64(w.Wait.Seconds()))
	}
	ctx, span := o.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	// WaitEnd ends this span, found under a key of its own: another
	// observer's WaitStart may have started a span after it.
	return context.WithValue(ctx, spanKey{}, span)
}

// spanKey is the context key of the span waitStart started.
type spanKey struct{}

func (o *observer) waitEnd(ctx context.Context, w redisync.WaitEnd) {
	opt := o.measurement(attrKey{primitive: w.Primitive, result: w.Result.String()})
	if o.acquisitions != nil {
		o.acquisitions.Add(ctx, 1, opt)
	}
	if o.waitDuration != nil {
		o.waitDuration.Record(ctx, w.Duration.Seconds(), opt)
	}
	span, ok := ctx.Value(spanKey{}).(trace.Span)
	if !ok {
		return
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(ResultKey.String(w.Result.String()))
	if w.Result == redisync.WaitError && w.Err != nil {
		span.RecordError(w.Err)
		span.SetStatus(codes.Error, w.Err.Error())
	}
	span.End()
}

func (o *observer) holdEnd(h redisync.HoldEnd) {
	ctx := context.Background()
	end := "released"
	switch {
	case h.Lost:
		end = "lost"
	case h.Shutdown:
		end = "shutdown"
	}
	if o.holdDuration != nil {
		o.holdDuration.Record(ctx, h.Duration.Seconds(), o.measurement(attrKey{primitive: h.Primitive, result: end, hold: true}))
	}
	if h.Lost && o.holdsLost != nil {
		o.holdsLost.Add(ctx, 1, o.measurement(attrKey{primitive: h.Primitive, hold: true}))
	}
	if h.Shutdown && o.holdsShutdown != nil {
		o.holdsShutdown.Add(ctx, 1, o.measurement(attrKey{primitive: h.Primitive, hold: true}))
	}
}

func (o *observer) renewalTick(t redisync.RenewalTick) {
	ctx := context.Background()
	if t.Renewed > 0 && o.renewals != nil {
		o.renewals.Add(ctx, int64(t.Renewed))
	}
	if t.Failed > 0 && o.renewalFailures != nil {
		o.renewalFailures.Add(ctx, int64(t.Failed))
	}
}

// attach adds c to the Clients whose gauges are reported, registering the
// gauges' callback with the first; the returned detach removes it.
func (o *observer) attach(c *redisync.Client) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clients[c] = struct{}{}
	if o.reg == nil {
		var insts []metric.Observable
		for _, i := range []metric.Observable{o.reconnects, o.channels, o.holds, o.waiting} {
			if i != nil {
				insts = append(insts, i)
			}
		}
		if len(insts) > 0 {
			reg, err := o.meter.RegisterCallback(o.observe, insts...)
			if err != nil {
				otel.Handle(err)
			} else {
				o.reg = reg
			}
		}
	}
	return func() { o.detach(c) }
}

func (o *observer) detach(c *redisync.Client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.clients[c]; !ok {
		return
	}
	delete(o.clients, c)
	o.retired += int64(c.Stats().PubSubReconnects)
	if len(o.clients) == 0 && o.reg != nil {
		// No Client left to observe: nothing is reported until one is
		// attached again (the reconnect counter then goes on from its
		// total).
		if err := o.reg.Unregister(); err != nil {
			otel.Handle(err)
		}
		o.reg = nil
	}
}

// observe reports the gauges and the reconnect counter, summed over the
// open Clients.
func (o *observer) observe(_ context.Context, ob metric.Observer) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	reconnects := o.retired
	var channels, holds, waiting int64
	for c := range o.clients {
		s := c.Stats()
		reconnects += int64(s.PubSubReconnects)
		channels += int64(s.PubSubChannels)
		holds += int64(s.Holds)
		waiting += int64(s.Waiting)
	}
	if o.reconnects != nil {
		ob.ObserveInt64(o.reconnects, reconnects)
	}
	if o.channels != nil {
		ob.ObserveInt64(o.channels, channels)
	}
	if o.holds != nil {
		ob.ObserveInt64(o.holds, holds)
	}
	if o.waiting != nil {
		ob.ObserveInt64(o.waiting, waiting)
	}
	return nil
}
