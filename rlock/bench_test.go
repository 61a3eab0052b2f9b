package rlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// BenchmarkLockUnlock: an uncontended lock taken and released (issue 16).
func BenchmarkLockUnlock(b *testing.B) {
	ctx := context.Background()
	l := rlock.New(clienttest.Shared(b), redistest.Key(b, "lock"))
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// floorScript does nothing: two calls of it per iteration are the floor of
// BenchmarkLockUnlock (two round trips through go-redis, no work in Redis).
var floorScript = redis.NewScript(`return {1, 0, 0}`)

// BenchmarkFloor: two bare EVALSHA round trips, what a lock+unlock cannot
// beat.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Shared(b).Client(b)
	key := redistest.Key(b, "floor")
	b.ReportAllocs()
	for b.Loop() {
		for range 2 {
			if err := floorScript.Run(ctx, rdb, []string{key}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWaiterHeap: the live heap that one goroutine waiting in Lock
// costs while another client holds the lock (B/waiter, after GC), with a
// handle per waiter (as the bench's waiters-* rows make them) and with one
// handle that all the waiters share (a handle is a sync.Mutex: they wait
// at its gate). Each iteration starts 1,000 waiters, measures, then lets
// them through; the first only warms up, and later ones reuse the runtime
// structures of its goroutines, so the figure leaves out the goroutine's
// own (about 480 B on amd64, which the bench's rows include).
func BenchmarkWaiterHeap(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "handle-per-waiter"
		if shared {
			name = "shared-handle"
		}
		b.Run(name, func(b *testing.B) {
			const waiters = 1000
			ctx := context.Background()
			c := clienttest.New(b, redistest.Shared(b).Client(b))
			holderClient := clienttest.New(b, redistest.Shared(b).Client(b))
			key := redistest.Key(b, "waiters")
			var total float64
			n, warm := 0, false
			for b.Loop() {
				holder := rlock.New(holderClient, key)
				if err := holder.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				one := rlock.New(c, key)
				before := liveHeap()
				g0 := runtime.NumGoroutine()
				done := make(chan error, waiters)
				for range waiters {
					go func() {
						l := one
						if !shared {
							l = rlock.New(c, key)
						}
						err := l.Lock(ctx)
						if err == nil {
							err = l.Unlock(ctx)
						}
						done <- err
					}()
				}
				for runtime.NumGoroutine() < g0+waiters {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond) // each has made its try and waits
				if warm {
					total += float64(liveHeap()-before) / waiters
					n++
				}
				warm = true
				if err := holder.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				for range waiters {
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
			}
			if n > 0 {
				b.ReportMetric(total/float64(n), "B/waiter")
			}
		})
	}
}

// liveHeap returns the live heap after two collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
