package countdown_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// connect returns a redisync client on the Redis the examples use, and a
// function that closes it. In a real service, create one Client per process
// and share it.
func connect() (*redisync.Client, func()) {
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	c := redisync.New(rdb)
	return c, func() { _ = c.Close(); _ = rdb.Close() }
}

// A coordinator hands a batch of jobs to workers in other processes (here:
// goroutines with clients of their own) and waits until every one of them
// has finished its part.
func Example() {
	ctx := context.Background()
	const workers = 3

	coordinator, closeCoordinator := connect()
	defer closeCoordinator()
	batch := countdown.New(coordinator, "example:batch:1")
	// Set the count before the workers start: a count-down of a latch that
	// is not set is lost.
	if _, err := batch.TrySetCount(ctx, workers); err != nil {
		fmt.Println(err)
		return
	}

	for w := range workers {
		go func() {
			client, closeClient := connect()
			defer closeClient()
			latch := countdown.New(client, "example:batch:1")
			// A worker counts down when its part is done, even if it failed
			// or its own ctx was cancelled: the coordinator must not hang.
			defer latch.CountDown(ctx)
			time.Sleep(time.Duration(10*(w+1)) * time.Millisecond) // the work
		}()
	}

	if err := batch.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("all workers done")
	// Output: all workers done
}

// TryWait bounds the wait: false means the count had not reached zero.
func ExampleLatch_TryWait() {
	ctx := context.Background()
	c, closeClient := connect()
	defer closeClient()
	latch := countdown.New(c, "example:batch:2")
	_, _ = latch.TrySetCount(ctx, 2)

	_ = latch.CountDown(ctx)
	open, _ := latch.TryWait(ctx, 100*time.Millisecond)
	n, _ := latch.Count(ctx)
	fmt.Println("open:", open, "count:", n)

	_ = latch.CountDown(ctx)
	open, _ = latch.TryWait(ctx, 100*time.Millisecond)
	n, _ = latch.Count(ctx)
	fmt.Println("open:", open, "count:", n)
	// Output:
	// open: false count: 1
	// open: true count: 0
}

func ExampleLatch_Inspect() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	l := countdown.New(c, "example:latch-inspect")
	defer l.Delete(ctx)
	if _, err := l.TrySetCount(ctx, 3); err != nil {
		fmt.Println(err)
		return
	}
	_ = l.CountDown(ctx)
	info, err := l.Inspect(ctx)
	fmt.Println("count:", info.Count, err)
	// Output:
	// count: 2 <nil>
}
