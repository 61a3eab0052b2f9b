package semaphore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// BenchmarkAcquireRelease: one caller, permits always available: the cost
// of a round trip for each of Acquire and Release.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	s := New(clienttest.Shared(b), redistest.Key(b, "sem"))
	if err := s.AddPermits(ctx, 1); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.Acquire(ctx, 1); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpirableAcquireRelease is BenchmarkAcquireRelease for the
// expirable semaphore.
func BenchmarkExpirableAcquireRelease(b *testing.B) {
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(b), redistest.Key(b, "sem"))
	if err := s.SetPermits(ctx, 1); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		id, err := s.Acquire(ctx, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContended: 8 callers on 4 clients share 2 permits; each
// iteration is one acquisition, mostly after a wait and a wake-up.
func BenchmarkContended(b *testing.B) {
	ctx := context.Background()
	name := redistest.Key(b, "sem")
	var sems []*Semaphore
	for range 4 {
		sems = append(sems, New(clienttest.Shared(b), name))
	}
	if err := sems[0].AddPermits(ctx, 2); err != nil {
		b.Fatal(err)
	}
	work := make(chan struct{})
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range 8 {
		s := sems[i%len(sems)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := s.Acquire(ctx, 1); err != nil {
					b.Error(err)
					return
				}
				if err := s.Release(ctx, 1); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}
