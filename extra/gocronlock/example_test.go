package gocronlock_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/gocronlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// Three schedulers (three processes, in production) run the same job
// every second; each tick runs once.
func ExampleLocker() {
	const every = time.Second
	job := fmt.Sprintf("report-%d", time.Now().UnixNano())
	start := time.Now().Truncate(every).Add(2 * every)

	var mu sync.Mutex
	runs := map[int]int{} // tick → runs
	var schedulers []gocron.Scheduler
	for range 3 {
		c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
		defer c.Close()
		locker := gocronlock.NewLocker(c).ForInterval(every)
		s, _ := gocron.NewScheduler()
		_, _ = s.NewJob(gocron.DurationJob(every),
			gocron.NewTask(func() {
				tick := int((time.Since(start) + every/2) / every)
				mu.Lock()
				runs[tick]++
				mu.Unlock()
			}),
			gocron.WithName(job),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithDistributedJobLocker(locker))
		s.Start()
		schedulers = append(schedulers, s)
	}
	time.Sleep(time.Until(start.Add(3*every - every/2)))
	for _, s := range schedulers {
		_ = s.Shutdown()
	}
	mu.Lock()
	defer mu.Unlock()
	for tick := range 3 {
		fmt.Printf("tick %d: %d run\n", tick, runs[tick])
	}
	// Output:
	// tick 0: 1 run
	// tick 1: 1 run
	// tick 2: 1 run
}
