package pubsub_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/pubsub"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// The wait every redisync primitive makes, by hand: subscribe (confirmed by
// Redis), re-check the condition, then sleep until a message wakes the
// waiter. Primitives add a fallback timer, since messages can be lost.
func ExampleMux_Subscribe() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	m := pubsub.New(rdb, pubsub.Options{})
	defer m.Close()

	w, err := m.Subscribe(ctx, "example:channel", pubsub.WakeOne)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	// The subscription is confirmed: a release published from now on is seen.
	rdb.Publish(ctx, "example:channel", "0")
	<-w.C()
	fmt.Println("woken")
	// Output: woken
}
