package redisyncotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

// telemetry is an in-memory OpenTelemetry pipeline: a manual metric reader
// and a span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t testing.TB) *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() {
		_ = tel.mp.Shutdown(context.Background())
		_ = tel.tp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) option() redisync.Option {
	return redisyncotel.New(redisyncotel.WithMeterProvider(tel.mp), redisyncotel.WithTracerProvider(tel.tp))
}

// metrics collects and indexes the metrics by name.
func (tel *telemetry) metrics(t testing.TB) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	out := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != redisyncotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// matches reports whether set has every key=value of want ("k=v" strings).
func matches(set attribute.Set, want ...string) bool {
	for _, w := range want {
		k, v, _ := strings.Cut(w, "=")
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

// value returns the sum of an int64 sum's or gauge's points matching
// attrs, and the count of a histogram's.
func value(t testing.TB, ms map[string]metricdata.Metrics, name string, attrs ...string) int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return 0
	}
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, attrs...) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, attrs...) {
				n += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, attrs...) {
				n += int64(p.Count)
			}
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return n
}

// histogramSum returns the sum of a histogram's points matching attrs.
func histogramSum(ms map[string]metricdata.Metrics, name string, attrs ...string) float64 {
	d, _ := ms[name].Data.(metricdata.Histogram[float64])
	var s float64
	for _, p := range d.DataPoints {
		if matches(p.Attributes, attrs...) {
			s += p.Sum
		}
	}
	return s
}

// Acquisitions by primitive and result, and their wait times.
func TestAcquisitionsAndWaits(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	c := redisync.New(redistest.Shared(t).Client(t), tel.option())
	defer c.Close()

	name := redistest.Key(t, "lock")
	holder, other := rlock.New(c, name), rlock.New(c, name)
	require.NoError(t, holder.Lock(ctx))
	ok, err := other.TryLock(ctx, 0)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = other.TryLock(ctx, 50*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	require.ErrorIs(t, other.Lock(cctx), context.DeadlineExceeded)
	cancel()
	require.NoError(t, holder.Unlock(ctx))

	rw := rwlock.New(c, redistest.Key(t, "rw"))
	octx := redisync.WithOwner(ctx)
	require.NoError(t, rw.RLock(octx))
	require.ErrorIs(t, rw.Lock(octx), redisync.ErrUpgrade)
	require.NoError(t, rw.RUnlock(octx))

	sem := semaphore.New(c, redistest.Key(t, "sem"))
	require.NoError(t, sem.AddPermits(ctx, 1))
	require.NoError(t, sem.Acquire(ctx, 1))
	latch := countdown.New(c, redistest.Key(t, "latch"))
	ok, err = latch.TryWait(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok, "a latch never set is open")

	ms := tel.metrics(t)
	for _, tc := range []struct {
		primitive, result string
		want              int64
	}{
		{"rlock", "acquired", 1},
		{"rlock", "busy", 1},
		{"rlock", "timed_out", 1},
		{"rlock", "cancelled", 1},
		{"rlock", "error", 0},
		{"rwlock.read", "acquired", 1},
		{"rwlock.write", "error", 1},
		{"semaphore", "acquired", 1},
		{"countdown", "acquired", 1},
	} {
		attrs := []string{"redisync.primitive=" + tc.primitive, "redisync.result=" + tc.result}
		assert.Equal(t, tc.want, value(t, ms, "redisync.acquisitions", attrs...), "acquisitions %v", attrs)
		assert.Equal(t, tc.want, value(t, ms, "redisync.wait.duration", attrs...), "wait.duration count %v", attrs)
	}
	assert.Equal(t, int64(8), value(t, ms, "redisync.acquisitions"))
	assert.GreaterOrEqual(t, histogramSum(ms, "redisync.wait.duration", "redisync.result=timed_out"), 0.05)
	assert.Equal(t, "s", ms["redisync.wait.duration"].Unit)
	assert.Zero(t, value(t, ms, "redisync.waiting"))
	assert.Zero(t, value(t, ms, "redisync.holds"))
	st := c.Stats()
	assert.Equal(t, uint64(4), st.Acquired, "Stats counts what the metrics count")
	assert.Equal(t, uint64(1), st.Errors)
}

// Spans around waits: attributes, result, error status, and nesting under
// the caller's span.
func TestWaitSpans(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	c := redisync.New(redistest.Shared(t).Client(t), tel.option())
	defer c.Close()

	pctx, parent := tel.tp.Tracer("test").Start(ctx, "request")
	name := redistest.Key(t, "lock")
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(pctx))
	ok, err := rlock.New(c, name).TryLock(pctx, 20*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, l.Unlock(pctx))
	rw := rwlock.New(c, redistest.Key(t, "rw"))
	octx := redisync.WithOwner(pctx)
	require.NoError(t, rw.RLock(octx))
	require.Error(t, rw.Lock(octx))
	require.NoError(t, rw.RUnlock(octx))
	parent.End()

	var waits []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == redisyncotel.SpanName {
			waits = append(waits, s)
		}
	}
	require.Len(t, waits, 4)
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := make(map[string]string)
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	for _, s := range waits {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "nested under the caller's span")
	}
	assert.Equal(t, map[string]string{"redisync.primitive": "rlock", "redisync.name": name, "redisync.result": "acquired"}, attrs(waits[0]))
	assert.Equal(t, map[string]string{"redisync.primitive": "rlock", "redisync.name": name,
		"redisync.wait.timeout": "0.02", "redisync.result": "timed_out"}, attrs(waits[1]))
	assert.Equal(t, codes.Unset, waits[1].Status().Code, "a wait that ran out is not an error")
	assert.Equal(t, "error", attrs(waits[3])["redisync.result"])
	assert.Equal(t, codes.Error, waits[3].Status().Code)
	require.Len(t, waits[3].Events(), 1, "the error is recorded")
	assert.Equal(t, "exception", waits[3].Events()[0].Name)
	assert.GreaterOrEqual(t, waits[1].EndTime().Sub(waits[1].StartTime()), 20*time.Millisecond)
}

// Hold times, renewals and lost holds.
func TestHoldsRenewalsAndLoss(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	tel := newTelemetry(t)
	c := redisync.New(s.Client(t), tel.option(), redisync.WithWatchdogTimeout(300*time.Millisecond))
	defer c.Close()

	name := redistest.Key(t)
	l := rlock.New(c, name)
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, int64(1), value(t, tel.metrics(t), "redisync.holds"))
	time.Sleep(250 * time.Millisecond)
	require.NoError(t, l.Unlock(ctx))

	require.NoError(t, l.Lock(ctx))
	require.NoError(t, s.Client(t).Del(ctx, name).Err())
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the loss was not noticed")
	}

	ms := tel.metrics(t)
	assert.Equal(t, int64(1), value(t, ms, "redisync.hold.duration", "redisync.primitive=rlock", "redisync.hold.end=released"))
	assert.Equal(t, int64(1), value(t, ms, "redisync.hold.duration", "redisync.primitive=rlock", "redisync.hold.end=lost"))
	assert.GreaterOrEqual(t, histogramSum(ms, "redisync.hold.duration", "redisync.hold.end=released"), 0.25)
	assert.Equal(t, int64(1), value(t, ms, "redisync.holds.lost", "redisync.primitive=rlock"))
	assert.GreaterOrEqual(t, value(t, ms, "redisync.renewals"), int64(2), "a 250ms hold renewed every 100ms")
	assert.Zero(t, value(t, ms, "redisync.renewal.failures"))
	assert.Zero(t, value(t, ms, "redisync.holds"))
	assert.Equal(t, "{hold}", ms["redisync.holds.lost"].Unit)
}

// Renewal failures while Redis cannot be reached, until the hold is lost.
func TestRenewalFailures(t *testing.T) {
	ctx := context.Background()
	p := redistest.NewProxy(t, redistest.Shared(t).Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	tel := newTelemetry(t)
	c := redisync.New(rdb, tel.option(), redisync.WithWatchdogTimeout(600*time.Millisecond))
	defer c.Close()
	l := rlock.New(c, redistest.Key(t))
	require.NoError(t, l.Lock(ctx))
	p.Block()
	defer p.Unblock()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold outlived its lease without renewal")
	}
	require.Eventually(t, func() bool {
		ms := tel.metrics(t)
		return value(t, ms, "redisync.renewal.failures") == int64(c.Stats().RenewalFailures) &&
			value(t, ms, "redisync.holds.lost") == 1
	}, 5*time.Second, 10*time.Millisecond)
	assert.Positive(t, c.Stats().RenewalFailures)
}

// The pub/sub instruments, and the gauges summed over the open Clients of
// one observer.
func TestPubSubAndGauges(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	tel := newTelemetry(t)
	obs := redisync.WithObserver(redisyncotel.NewObserver(redisyncotel.WithMeterProvider(tel.mp), redisyncotel.WithTracerProvider(tel.tp)))
	a := redisync.New(s.Client(t), obs)
	b := redisync.New(s.Client(t), obs)
	defer a.Close()
	defer b.Close()

	name := redistest.Key(t)
	first := rlock.New(a, name)
	require.NoError(t, first.Lock(ctx))
	errc := make(chan error, 1)
	l := rlock.New(b, name)
	go func() { errc <- l.Lock(ctx) }()
	// b's own channel in the lock's queue, and the lock's channel (the
	// holder took it while nobody waited, so the queue did not record it:
	// docs/wake.md)
	require.Eventually(t, func() bool { return value(t, tel.metrics(t), "redisync.pubsub.channels") == 2 }, 5*time.Second, 5*time.Millisecond)
	ms := tel.metrics(t)
	assert.Equal(t, int64(1), value(t, ms, "redisync.waiting"))
	assert.Equal(t, int64(1), value(t, ms, "redisync.holds"))
	assert.Zero(t, value(t, ms, "redisync.pubsub.reconnects"))

	require.NoError(t, s.Client(t).ClientKillByFilter(ctx, "TYPE", "pubsub").Err())
	require.Eventually(t, func() bool { return value(t, tel.metrics(t), "redisync.pubsub.reconnects") == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, first.Unlock(ctx))
	require.NoError(t, <-errc)

	// Closing b keeps its reconnect in the counter; its hold is lost (not
	// released, it expires with its lease).
	require.NoError(t, b.Close())
	ms = tel.metrics(t)
	assert.Equal(t, int64(1), value(t, ms, "redisync.pubsub.reconnects"), "the counter never goes down")
	assert.Zero(t, value(t, ms, "redisync.holds"))
	assert.Zero(t, value(t, ms, "redisync.pubsub.channels"))
	assert.Equal(t, int64(1), value(t, ms, "redisync.holds.lost"))
	require.NoError(t, a.Close())
	assert.NotContains(t, tel.metrics(t), "redisync.pubsub.channels", "nothing is observed once every Client is closed")
}

// TestDemoWorkload runs a workload shaped like "redisync demo" (workers
// contending for a lock while the watchdog renews it, a holder that
// crashes, readers and a writer, a semaphore, an expirable permit whose
// holder crashes, a latch), every simulated process with its own Client
// on one observer, and logs the metrics it exports (go test -v -run
// TestDemoWorkload shows them).
func TestDemoWorkload(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	tel := newTelemetry(t)
	obs := redisync.WithObserver(redisyncotel.NewObserver(redisyncotel.WithMeterProvider(tel.mp), redisyncotel.WithTracerProvider(tel.tp)))
	var clients []*redisync.Client
	proc := func() *redisync.Client {
		c := redisync.New(srv.Client(t), obs, redisync.WithWatchdogTimeout(600*time.Millisecond))
		clients = append(clients, c)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	// 1. three workers take turns on a lock, each holding it 250ms.
	lockName := redistest.Key(t, "lock")
	errc := make(chan error, 3)
	for i := 0; i < 3; i++ {
		c := proc()
		go func() {
			l := rlock.New(c, lockName)
			for j := 0; j < 2; j++ {
				if err := l.Lock(ctx); err != nil {
					errc <- err
					return
				}
				time.Sleep(250 * time.Millisecond)
				if err := l.Unlock(ctx); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for i := 0; i < 3; i++ {
		require.NoError(t, <-errc)
	}

	// 2. a holder crashes; the next one gets in when its lease runs out.
	crashName := redistest.Key(t, "crash")
	crasher := proc()
	require.NoError(t, rlock.New(crasher, crashName).Lock(ctx))
	require.NoError(t, crasher.Close())
	next := rlock.New(proc(), crashName)
	require.NoError(t, next.Lock(ctx))
	require.NoError(t, next.Unlock(ctx))

	// 3. readers share a read-write lock; the writer waits for them.
	rwName := redistest.Key(t, "rw")
	var readers []*rwlock.RWLock
	for i := 0; i < 2; i++ {
		rw := rwlock.New(proc(), rwName)
		require.NoError(t, rw.RLock(ctx))
		readers = append(readers, rw)
	}
	writer := rwlock.New(proc(), rwName)
	go func() {
		time.Sleep(100 * time.Millisecond)
		for _, rw := range readers {
			_ = rw.RUnlock(ctx)
		}
	}()
	require.NoError(t, writer.Lock(ctx))
	require.NoError(t, writer.Unlock(ctx))

	// 4. five jobs share two permits.
	semName := redistest.Key(t, "sem")
	require.NoError(t, semaphore.New(proc(), semName).AddPermits(ctx, 2))
	for i := 0; i < 5; i++ {
		c := proc()
		go func() {
			s := semaphore.New(c, semName)
			if err := s.Acquire(ctx, 1); err != nil {
				errc <- err
				return
			}
			time.Sleep(50 * time.Millisecond)
			errc <- s.Release(ctx, 1)
		}()
	}
	for i := 0; i < 5; i++ {
		require.NoError(t, <-errc)
	}

	// 5. an expirable permit's holder crashes; the permit returns with
	// its lease.
	expName := redistest.Key(t, "exp")
	holder := proc()
	exp := semaphore.NewExpirable(holder, expName)
	require.NoError(t, exp.SetPermits(ctx, 1))
	_, err := exp.Acquire(ctx, 200*time.Millisecond)
	require.NoError(t, err)
	require.NoError(t, holder.Close())
	_, ok, err := semaphore.NewExpirable(proc(), expName).TryAcquire(ctx, 0, time.Second)
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = semaphore.NewExpirable(proc(), expName).TryAcquire(ctx, 5*time.Second, time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	// 6. the last of three count-downs releases three waiters.
	latchName := redistest.Key(t, "latch")
	_, err = countdown.New(proc(), latchName).TrySetCount(ctx, 3)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		c := proc()
		go func() { errc <- countdown.New(c, latchName).Wait(ctx) }()
	}
	require.Eventually(t, func() bool { return value(t, tel.metrics(t), "redisync.waiting") == 3 }, 5*time.Second, 5*time.Millisecond)
	for i := 0; i < 3; i++ {
		require.NoError(t, countdown.New(proc(), latchName).CountDown(ctx))
	}
	for i := 0; i < 3; i++ {
		require.NoError(t, <-errc)
	}

	ms := tel.metrics(t)
	t.Logf("metrics exported by the demo workload (%d clients):\n%s", len(clients), dump(ms))
	assert.Equal(t, int64(7), value(t, ms, "redisync.hold.duration", "redisync.primitive=rlock", "redisync.hold.end=released"),
		"3 workers × 2 holds, and the holder after the crash")
	assert.Equal(t, int64(1), value(t, ms, "redisync.holds.lost", "redisync.primitive=rlock"), "the crashed holder")
	assert.Positive(t, value(t, ms, "redisync.renewals"))
	assert.Equal(t, int64(5), value(t, ms, "redisync.acquisitions", "redisync.primitive=semaphore", "redisync.result=acquired"))
	assert.Equal(t, int64(3), value(t, ms, "redisync.acquisitions", "redisync.primitive=countdown", "redisync.result=acquired"))
	assert.Equal(t, int64(1), value(t, ms, "redisync.acquisitions", "redisync.primitive=expirable_semaphore", "redisync.result=busy"))
}

// dump prints metrics one point a line, sorted: counters and gauges with
// their value, histograms with their count and sum.
func dump(ms map[string]metricdata.Metrics) string {
	var lines []string
	attrs := func(s attribute.Set) string {
		var kv []string
		for _, a := range s.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		if len(kv) == 0 {
			return ""
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
	for name, m := range ms {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s%s %d", name, attrs(p.Attributes), p.Value))
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s%s %d", name, attrs(p.Attributes), p.Value))
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s%s count=%d sum=%.3fs", name, attrs(p.Attributes), p.Count, p.Sum))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Client.Shutdown's releases are no losses: "shutdown" holds and
// redisync.holds.released_at_shutdown, nothing in redisync.holds.lost.
func TestShutdownReleasesAreNotLost(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	tel := newTelemetry(t)
	c := redisync.New(s.Client(t), tel.option())
	name := redistest.Key(t)
	for i := range 3 {
		require.NoError(t, rlock.New(c, fmt.Sprintf("%s:%d", name, i)).Lock(ctx))
	}
	require.NoError(t, c.Shutdown(ctx))
	ms := tel.metrics(t)
	assert.Equal(t, int64(3), value(t, ms, "redisync.holds.released_at_shutdown", "redisync.primitive=rlock"))
	assert.Equal(t, int64(3), value(t, ms, "redisync.hold.duration", "redisync.primitive=rlock", "redisync.hold.end=shutdown"))
	assert.Zero(t, value(t, ms, "redisync.holds.lost"))
	assert.Equal(t, "{hold}", ms["redisync.holds.released_at_shutdown"].Unit)
}
