package multilock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// exampleMasters returns the connection options of three independent Redis
// masters, as a RedLock needs; in production, three servers such as
// redis-a:6379, redis-b:6379 and redis-c:6379. When the examples run as
// tests, databases 0, 1 and 2 of the harness's one server stand in for
// them. ContextTimeoutEnabled lets go-redis honour the deadlines a RedLock
// sets on each member's try.
func exampleMasters() []*redis.Options {
	var opts []*redis.Options
	for db := range 3 {
		opts = append(opts, &redis.Options{Addr: exampleAddr, DB: db, ContextTimeoutEnabled: true})
	}
	return opts
}

// transfer moves amount between two accounts while holding both accounts'
// locks. Whatever the order of the accounts, two transfers over the same
// pair cannot deadlock: the MultiLock never waits for one lock while
// holding the other.
func transfer(ctx context.Context, c *redisync.Client, balances map[string]int, from, to string, amount int) error {
	both := multilock.New(rlock.New(c, "example:account:"+from), rlock.New(c, "example:account:"+to))
	if err := both.Lock(ctx); err != nil {
		return err
	}
	defer both.Unlock(ctx)
	balances[from] -= amount
	balances[to] += amount
	return nil
}

func ExampleNew() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	balances := map[string]int{"alice": 100, "bob": 20}
	if err := transfer(ctx, c, balances, "alice", "bob", 30); err != nil {
		fmt.Println("transfer:", err)
		return
	}
	fmt.Println("alice:", balances["alice"], "bob:", balances["bob"])
	// Output: alice: 70 bob: 50
}

// TryLock takes every member or none: while one account is locked
// elsewhere, the other stays free.
func ExampleMultiLock_TryLock() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	busy := rlock.New(c, "example:account:carol")
	_ = busy.Lock(ctx)

	carol, dave := rlock.New(c, "example:account:carol"), rlock.New(c, "example:account:dave")
	both := multilock.New(dave, carol)
	ok, err := both.TryLock(ctx, 100*time.Millisecond)
	fmt.Println("both:", ok, err)
	held, _ := dave.IsLocked(ctx)
	fmt.Println("dave locked:", held)

	_ = busy.Unlock(ctx)
	ok, err = both.TryLock(ctx, 0)
	fmt.Println("after release:", ok, err)
	_ = both.Unlock(ctx)
	// Output:
	// both: false <nil>
	// dave locked: false
	// after release: true <nil>
}

// A RedLock over three independent masters: held once two of the three
// locks are, so it keeps working while one master is down.
func ExampleNewRedLock() {
	ctx := context.Background()
	var members []redisync.Locker
	for _, opts := range exampleMasters() {
		c := redisync.New(redis.NewClient(opts))
		defer c.Close()
		members = append(members, rlock.New(c, "example:nightly-report"))
	}

	lock := multilock.NewRedLock(members...)
	ok, err := lock.TryLock(ctx, 3*time.Second)
	if err != nil || !ok {
		fmt.Println("not acquired:", err)
		return
	}
	// ... produce the report: a majority of masters says this process
	// holds the lock. See the package documentation for what that does and
	// does not guarantee.
	fmt.Println("acquired")
	if err := lock.Unlock(ctx); err != nil {
		fmt.Println("unlock:", err)
	}
	// Output: acquired
}
