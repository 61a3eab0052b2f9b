package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// reportService is the Go half of the port in docs/from-redisson.md: a
// Java service using Redisson's RLock, RSemaphore and RCountDownLatch.
// Both halves use the same keys, so Java and Go instances can run side by
// side during the migration.
type reportService struct {
	c      *redisync.Client
	export func(shard string) // the partner API call
}

// BuildReport runs on every instance; one of them builds the day's report.
func (s *reportService) BuildReport(ctx context.Context, day string, shards []string) (bool, error) {
	ctx = redisync.WithOwner(ctx) // this call chain plays the Java thread: publish re-enters the lock
	lock := rlock.New(s.c, "report:"+day, rlock.WithLease(15*time.Minute))
	ok, err := lock.TryLock(ctx, 0) // tryLock(0, 15, MINUTES)
	if err != nil || !ok {
		return false, err // (false, nil): another instance builds it
	}
	defer lock.Unlock(ctx)

	done := countdown.New(s.c, "report:"+day+":shards")
	if _, err := done.TrySetCount(ctx, int64(len(shards))); err != nil {
		return false, err
	}
	for _, shard := range shards {
		go func() { // the Java pool's task
			defer done.CountDown(ctx)
			if err := s.exportShard(ctx, shard); err != nil {
				log.Printf("shard %s: %v", shard, err)
			}
		}()
	}
	open, err := done.TryWait(ctx, 10*time.Minute) // await(10, MINUTES)
	if err != nil {
		return false, err
	}
	if !open {
		return false, errors.New("shards not done in time")
	}
	return true, s.publish(ctx, day)
}

// publish may also be called on its own; from BuildReport it re-enters
// the lock, as the same Java thread would.
func (s *reportService) publish(ctx context.Context, day string) error {
	lock := rlock.New(s.c, "report:"+day, rlock.WithLease(15*time.Minute))
	if err := lock.Lock(ctx); err != nil { // lock(15, MINUTES): hold count 2
		return err
	}
	defer lock.Unlock(ctx)
	fmt.Println("published", day)
	return nil
}

// exportShard makes at most three calls to the partner API at once, fleet-wide.
func (s *reportService) exportShard(ctx context.Context, shard string) error {
	api := semaphore.New(s.c, "partner-api")
	if _, err := api.TrySetPermits(ctx, 3); err != nil {
		return err
	}
	ok, err := api.TryAcquire(ctx, 1, 30*time.Second) // tryAcquire(1, 30, SECONDS)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("partner API busy")
	}
	defer api.Release(ctx, 1)
	s.export(shard)
	return nil
}

// A service ported from Redisson: an RLock taken with tryLock(wait, lease)
// and re-entered down the call chain, an RSemaphore capping calls to a
// partner, and an RCountDownLatch waiting for the shards' exports.
// docs/from-redisson.md shows the Java original beside it.
func Example_portFromRedisson() {
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	svc := &reportService{c: c, export: func(shard string) { fmt.Println("exported", shard) }}
	built, err := svc.BuildReport(context.Background(), "2026-05-01", []string{"eu", "us", "asia"})
	fmt.Println("built:", built, err)
	// Unordered output:
	// exported eu
	// exported us
	// exported asia
	// published 2026-05-01
	// built: true <nil>
}
