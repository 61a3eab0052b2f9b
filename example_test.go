package redisync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	c := redisync.New(rdb,
		redisync.WithWatchdogTimeout(15*time.Second), // held locks are renewed every 5 s
		redisync.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
	)
	defer c.Close() // stops renewals; held locks expire after their lease

	l := rlock.New(c, "example:new")
	if err := l.Lock(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked")
	_ = l.Unlock(context.Background())
	// Output: locked
}

// Handing a hold to another goroutine: the token names the owner.
func ExampleWithOwnerToken() {
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	ctx := redisync.WithOwner(context.Background())
	l := rlock.New(c, "example:handover")
	_ = l.Lock(ctx)
	token, _ := redisync.OwnerToken(ctx)

	done := make(chan error)
	go func() {
		// Another goroutine (or a later request) finishes the work and
		// releases the lock as the same owner.
		done <- l.Unlock(redisync.WithOwnerToken(context.Background(), token))
	}()
	fmt.Println("released by the other goroutine:", <-done)
	// Output: released by the other goroutine: <nil>
}

// One prefix for every key of a service: the lock "orders:7" is the hash
// "svc-orders:orders:7", its channel redisson_lock__channel:{svc-orders:orders:7}.
func ExampleWithKeyPrefix() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	c := redisync.New(rdb, redisync.WithKeyPrefix("svc-orders:"))
	defer c.Close()

	ctx := context.Background()
	l := rlock.New(c, "orders:7")
	if err := l.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Name(), rdb.Exists(ctx, "svc-orders:orders:7").Val())
	_ = l.Unlock(ctx)
	// Output: orders:7 1
}

// On the way out (SIGTERM in a rolling deploy), release every hold so the
// next instance gets the locks at once instead of after their lease.
func ExampleClient_Shutdown() {
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	l := rlock.New(c, "example:shutdown")
	_ = l.Lock(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", c.Shutdown(ctx))
	fmt.Println("hold ended:", errors.Is(l.Err(), redisync.ErrLockLost))
	// Output:
	// shutdown: <nil>
	// hold ended: true
}
