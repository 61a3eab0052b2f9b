package election_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

func ExampleElection_Campaign() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	e := election.New(c, fmt.Sprintf("example:scheduler:%d", time.Now().UnixNano()))

	l, err := e.Campaign(ctx, "host-a:8080") // blocks until this process leads
	if err != nil {
		fmt.Println("campaign:", err)
		return
	}
	defer l.Resign(context.Background())

	// The leader's work runs under l.Context(), which ends the moment the
	// leadership does; l.Term() fences what it writes.
	select {
	case <-l.Context().Done():
		fmt.Println("lost:", context.Cause(l.Context()))
	default:
		fmt.Println("leading, term > 0:", l.Term() > 0)
	}
	// Output: leading, term > 0: true
}

func ExampleElection_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	e := election.New(c, fmt.Sprintf("example:observed:%d", time.Now().UnixNano()))

	leaders := e.Observe(ctx)
	for _, who := range []string{"a", "b"} {
		l, err := e.Campaign(ctx, who)
		if err != nil {
			fmt.Println("campaign:", err)
			return
		}
		fmt.Println("observed:", (<-leaders).Value)
		_ = l.Resign(ctx) // the next candidate leads at once
	}
	// Output:
	// observed: a
	// observed: b
}

func ExampleElection_Leader() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	e := election.New(c, fmt.Sprintf("example:who-leads:%d", time.Now().UnixNano()))

	if _, err := e.Leader(ctx); errors.Is(err, election.ErrNoLeader) {
		fmt.Println("nobody leads yet")
	}
	l, _ := e.Campaign(ctx, "host-b:8080")
	_ = l.Proclaim(ctx, "host-b:9090")
	lead, _ := e.Leader(ctx)
	fmt.Println(lead.Value, lead.Term == l.Term())
	_ = l.Resign(ctx)
	// Output:
	// nobody leads yet
	// host-b:9090 true
}

func ExampleElection_Inspect() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	e := election.New(c, fmt.Sprintf("example:inspected:%d", time.Now().UnixNano()))

	l, _ := e.Campaign(ctx, "host-c:8080")
	defer l.Resign(context.Background())
	info, err := e.Inspect(ctx)
	if err != nil {
		fmt.Println("inspect:", err)
		return
	}
	fmt.Println(info.Leader.Value, info.Leading, len(info.Candidates), "waiting")
	for _, k := range info.Keys {
		fmt.Println(k.Type, k.TTL > 0) // only the lock expires
	}
	// Output:
	// host-c:8080 true 0 waiting
	// hash true
	// hash false
	// list false
	// string false
}

func ExampleElection_Delete() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	e := election.New(c, fmt.Sprintf("example:retired:%d", time.Now().UnixNano()))

	l, _ := e.Campaign(ctx, "host-d:8080")
	if _, err := e.Delete(ctx); errors.Is(err, election.ErrLeading) {
		fmt.Println("refused while someone leads")
	}
	_ = l.Resign(ctx)
	deleted, err := e.Delete(ctx) // the election is no longer run: its keys go
	fmt.Println(deleted, err)
	// Output:
	// refused while someone leads
	// true <nil>
}
