package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// BenchmarkLossSignal measures the time from an outside change to a held
// lock's key (a DEL, or PEXPIRE key 1) to the holder's Done closing, with
// the default 30 s watchdog lease, with keyspace events off (the
// watchdog's next renewal finds the hold gone: up to a third of the
// lease) and on (the notification has the watchdog re-check the hold at
// once), on a single node and on a 3-master Cluster. It reports the mean
// as ms/loss and the longest as max-ms. An iteration with events off
// takes up to 10 s: run it with a small -benchtime, e.g.
//
//	go test -run '^$' -bench LossSignal -benchtime 4x ./rlock/
func BenchmarkLossSignal(b *testing.B) {
	s := redistest.Start(b, redistest.WithArgs(keyspaceArgs...))
	cl := redistest.StartCluster(b, 3, redistest.ClusterServerArgs(keyspaceArgs...))
	for _, topo := range []struct {
		name string
		rdb  func() redis.UniversalClient
	}{
		{"single", func() redis.UniversalClient { return s.Client(b) }},
		{"cluster", func() redis.UniversalClient { return cl.Client(b) }},
	} {
		for _, mode := range []redisync.KeyspaceEventsMode{redisync.KeyspaceEventsOff, redisync.KeyspaceEventsAuto} {
			for _, o := range outside {
				b.Run(topo.name+"/events="+mode.String()+"/"+o.name, func(b *testing.B) {
					c := clienttest.New(b, topo.rdb(), redisync.WithKeyspaceEvents(mode))
					lossSignal(b, c, topo.rdb(), mode != redisync.KeyspaceEventsOff, o.do)
				})
			}
		}
	}
}

// lossSignal takes a lock through c, has change lose it through rdb, and
// times Done, b.N times; events: c uses keyspace events.
func lossSignal(b *testing.B, c *redisync.Client, rdb redis.UniversalClient, events bool,
	change func(ctx context.Context, rdb redis.UniversalClient, key string) error) {
	ctx := context.Background()
	var total, longest time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := redistest.Key(b)
		l := rlock.New(c, name)
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		before := c.Stats().Renewals
		done := l.Done()
		// Events on: the hold's watch subscribes and re-checks once
		// first (a renewal, which would undo a PEXPIRE racing it).
		for wait := time.Now(); events && (clienttest.Stats(c).Waiters == 0 || c.Stats().Renewals == before); {
			if time.Since(wait) > 5*time.Second {
				b.Fatal("the hold's watch did not subscribe")
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if err := change(ctx, rdb, name); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("Done not closed within a minute")
		}
		took := time.Since(start)
		total += took
		longest = max(longest, took)
		b.StopTimer()
		_ = l.Unlock(ctx) // after the loss: opens the handle's gate
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/loss")
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-ms")
}
