package rlock_test

import (
	"context"
	"testing"

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
