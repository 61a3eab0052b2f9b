package rwlock_test

import (
	"context"
	"testing"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// BenchmarkRLockRUnlock: an uncontended read hold taken and released.
func BenchmarkRLockRUnlock(b *testing.B) {
	ctx := context.Background()
	rw := rwlock.New(clienttest.Shared(b), redistest.Key(b, "rw"))
	for b.Loop() {
		if err := rw.RLock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := rw.RUnlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUnlock: an uncontended write hold taken and released.
func BenchmarkLockUnlock(b *testing.B) {
	ctx := context.Background()
	rw := rwlock.New(clienttest.Shared(b), redistest.Key(b, "rw"))
	for b.Loop() {
		if err := rw.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := rw.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelReaders: many goroutines of one client reading at once,
// each with its own handle (owner).
func BenchmarkParallelReaders(b *testing.B) {
	ctx := context.Background()
	c := clienttest.Shared(b)
	name := redistest.Key(b, "rw")
	b.RunParallel(func(pb *testing.PB) {
		rw := rwlock.New(c, name)
		for pb.Next() {
			if err := rw.RLock(ctx); err != nil {
				b.Error(err)
				return
			}
			if err := rw.RUnlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
