package redisync_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// Logging slow acquisitions and lost locks with an observer. The functions
// run on redisync's goroutines: keep them short.
func ExampleWithObserver() {
	obs := redisync.Observer{
		WaitEnd: func(_ context.Context, w redisync.WaitEnd) {
			if w.Result != redisync.WaitAcquired || w.Duration > time.Second {
				log.Printf("%s %q: %s after %v", w.Primitive, w.Name, w.Result, w.Duration)
			}
		},
		HoldEnd: func(h redisync.HoldEnd) {
			if h.Lost {
				log.Printf("%s %q lost after %v: %v", h.Primitive, h.Name, h.Duration, h.Err)
			}
		},
	}
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}), redisync.WithObserver(obs))
	defer c.Close()

	l := rlock.New(c, "example:observer")
	if err := l.Lock(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked")
	_ = l.Unlock(context.Background())
	// Output: locked
}

// Counters without any observer, for a health endpoint or a test.
func ExampleClient_Stats() {
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	ctx := context.Background()

	a, b := rlock.New(c, "example:stats"), rlock.New(c, "example:stats")
	_ = a.Lock(ctx)
	ok, _ := b.TryLock(ctx, 0) // held by a: busy
	s := c.Stats()
	fmt.Println(ok, s.Acquired, s.Busy, s.Holds)
	_ = a.Unlock(ctx)
	fmt.Println(c.Stats().Holds)
	// Output:
	// false 1 1 1
	// 0
}
