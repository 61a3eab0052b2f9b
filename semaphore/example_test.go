package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// TestMain runs every test of the package (those of package semaphore
// too) against servers of the harness, and the examples against its shared
// server.
func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }

func ExampleSemaphore() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	// At most 3 uploads at a time across every process using this Redis.
	uploads := semaphore.New(client, "example:uploads")
	defer uploads.Delete(ctx)
	if _, err := uploads.TrySetPermits(ctx, 3); err != nil {
		fmt.Println(err)
		return
	}

	if err := uploads.Acquire(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := uploads.AvailablePermits(ctx)
	fmt.Println("uploading; permits left:", n)
	// A release runs even if ctx was cancelled meanwhile.
	if err := uploads.Release(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	n, _ = uploads.AvailablePermits(ctx)
	fmt.Println("done; permits left:", n)
	// Output:
	// uploading; permits left: 2
	// done; permits left: 3
}

func ExampleSemaphore_TryAcquire() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	exports := semaphore.New(client, "example:exports")
	defer exports.Delete(ctx)
	_, _ = exports.TrySetPermits(ctx, 1)

	ok, err := exports.TryAcquire(ctx, 1, 0)
	fmt.Println("first:", ok, err)
	// Busy: wait at most 100ms, then give up without an error.
	ok, err = exports.TryAcquire(ctx, 1, 100*time.Millisecond)
	fmt.Println("second:", ok, err)
	_ = exports.Release(ctx, 1)
	// Output:
	// first: true <nil>
	// second: false <nil>
}

func ExampleExpirableSemaphore() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	reports := semaphore.NewExpirable(client, "example:reports")
	defer reports.Delete(ctx)
	if err := reports.SetPermits(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}

	// The permit comes back by itself after a minute if this process dies
	// before releasing it.
	id, err := reports.Acquire(ctx, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	left, _ := reports.LeaseTime(ctx, id)
	fmt.Println("id length:", len(id), "lease about a minute:", left > 59*time.Second)

	// Work is taking longer than planned: extend the lease.
	ok, _ := reports.UpdateLease(ctx, id, 5*time.Minute)
	fmt.Println("extended:", ok)

	fmt.Println("release:", reports.Release(ctx, id))
	fmt.Println("release again:", reports.Release(ctx, id) != nil)
	// Output:
	// id length: 32 lease about a minute: true
	// extended: true
	// release: <nil>
	// release again: true
}

// A worker pool spread over three processes (three Clients here) calls an
// API that allows 2 calls at a time. Each call holds a permit with a lease
// longer than a call takes, so a worker that crashes mid-call gives its
// permit back when the lease ends instead of shrinking the pool for good.
func ExampleExpirableSemaphore_workerPool() {
	ctx := context.Background()
	const processes, workersPerProcess, jobs = 3, 2, 12

	queue := make(chan int, jobs)
	for j := range jobs {
		queue <- j
	}
	close(queue)

	var calling, most, done atomic.Int64
	var wg sync.WaitGroup
	for p := range processes {
		rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
		defer rdb.Close()
		client := redisync.New(rdb)
		defer client.Close()
		api := semaphore.NewExpirable(client, "example:api-calls")
		if p == 0 {
			_ = api.SetPermits(ctx, 2)
			defer api.Delete(ctx)
		}
		for range workersPerProcess {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range queue {
					id, err := api.Acquire(ctx, 10*time.Second)
					if err != nil {
						fmt.Println(err)
						return
					}
					n := calling.Add(1) // the API call
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(20 * time.Millisecond)
					calling.Add(-1)
					if err := api.Release(ctx, id); err != nil {
						fmt.Println(err)
						return
					}
					done.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	fmt.Printf("%d jobs done, at most %d API calls at a time\n", done.Load(), most.Load())
	// Output:
	// 12 jobs done, at most 2 API calls at a time
}

// ReleaseIfExists gives permits back only to a semaphore that still
// exists: a late release after the semaphore was deleted on purpose does
// not bring it back.
func ExampleSemaphore_ReleaseIfExists() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	client := redisync.New(rdb)
	defer client.Close()

	jobs := semaphore.New(client, "example:jobs")
	defer jobs.Delete(ctx)
	if _, err := jobs.TrySetPermits(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	if err := jobs.Acquire(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	released, err := jobs.ReleaseIfExists(ctx, 1)
	fmt.Println("released:", released, err)

	// The batch is over: the semaphore is deleted, and a straggler's
	// release changes nothing.
	if _, err := jobs.Delete(ctx); err != nil {
		fmt.Println(err)
		return
	}
	released, err = jobs.ReleaseIfExists(ctx, 1)
	n, _ := jobs.AvailablePermits(ctx)
	fmt.Println("released:", released, err, "permits:", n)
	// Output:
	// released: true <nil>
	// released: false <nil> permits: 0
}

func ExampleSemaphore_Inspect() {
	ctx := context.Background()
	client := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer client.Close()

	s := semaphore.New(client, "example:sem-inspect")
	defer s.Delete(ctx)
	_, _ = s.TrySetPermits(ctx, 3)
	_ = s.Acquire(ctx, 1)
	info, err := s.Inspect(ctx)
	fmt.Println("available:", info.Available, err)
	// Output:
	// available: 2 <nil>
}

func ExampleExpirableSemaphore_Inspect() {
	ctx := context.Background()
	client := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer client.Close()

	s := semaphore.NewExpirable(client, "example:xsem-inspect")
	defer s.Delete(ctx)
	_ = s.SetPermits(ctx, 3)
	leased, _ := s.Acquire(ctx, time.Minute)
	forever, _ := s.Acquire(ctx, 0)

	// Available permits and every acquired permit with its remaining lease,
	// in one round trip.
	info, err := s.Inspect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("available:", info.Available)
	for _, p := range info.Permits {
		switch p.ID {
		case leased:
			fmt.Println("leased permit, about a minute left:", p.Lease > 59*time.Second)
		case forever:
			fmt.Println("permit without a lease:", p.Lease)
		}
	}
	// Output:
	// available: 1
	// leased permit, about a minute left: true
	// permit without a lease: -1ns
}
