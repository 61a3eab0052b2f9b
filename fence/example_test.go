package fence_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/rlock"
)

// Two holders of one fenced lock, one after the other; the first was
// paused past its lease and writes late. Its stale token is refused.
func ExampleValue_Set() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	state := fence.New(c, "example:fence:order:7")
	defer c.Redis().Del(ctx, state.Name(), "example:fence:order:7:lock", "redisson_lock_token:{example:fence:order:7:lock}")

	l := rlock.New(c, "example:fence:order:7:lock", rlock.WithFencing())
	_ = l.Lock(ctx)
	stale := l.FencingToken() // the first holder's token
	_ = l.Unlock(ctx)         // (as if its lease ran out while it was paused)

	_ = l.Lock(ctx) // the next holder
	ok, err := state.Set(ctx, l.FencingToken(), "shipped")
	fmt.Println("newer holder writes:", ok, err)
	_ = l.Unlock(ctx)

	ok, err = state.Set(ctx, stale, "cancelled") // the paused holder wakes up
	fmt.Println("stale holder writes:", ok, err)

	v, _, _ := state.Get(ctx)
	fmt.Println("value:", v)
	// Output:
	// newer holder writes: true <nil>
	// stale holder writes: false <nil>
	// value: shipped
}
