package redisyncotel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/redisyncotel"
	"github.com/redisync/redisync/rlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// server of the test harness.
var exampleAddr = "localhost:6379"

// A Client whose locks report metrics to a meter provider (here one read
// by hand; in a service, one with an OTLP or Prometheus exporter) and no
// spans.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb, redisyncotel.New(
		redisyncotel.WithMeterProvider(mp),
		redisyncotel.WithTracerProvider(noop.NewTracerProvider()),
	))
	defer c.Close()

	ctx := context.Background()
	l := rlock.New(c, "example:otel")
	if err := l.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				if r, ok := p.Attributes.Value(redisyncotel.ResultKey); ok {
					fmt.Println(m.Name, r.Emit(), p.Value)
				} else {
					fmt.Println(m.Name, p.Value)
				}
			}
		case metricdata.Histogram[float64]:
			fmt.Println(m.Name, "count", d.DataPoints[0].Count)
		}
	}
	// Output:
	// redisync.acquisitions acquired 1
	// redisync.wait.duration count 1
	// redisync.hold.duration count 1
	// redisync.renewals 0
	// redisync.renewal.failures 0
	// redisync.pubsub.reconnects 0
}
