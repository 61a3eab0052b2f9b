package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// permitState returns a reader of the semaphore name's permits, straight
// from Redis: available, and acquired — for the expirable semaphore the
// permits in its zset, for the counted one what total leaves missing.
func permitState(direct *redis.Client, kind, name string, total int64) func() (available, acquired int64) {
	ctx := context.Background()
	return func() (int64, int64) {
		v, _ := direct.Get(ctx, name).Int64()
		if kind == "expirable" {
			return v, direct.ZCard(ctx, keys.SemaphoreTimeouts(name)).Val()
		}
		return v, total - v
	}
}

// eventuallyAllFree waits until state reads total available and none
// acquired.
func eventuallyAllFree(t *testing.T, within time.Duration, state func() (int64, int64), total int64) {
	t.Helper()
	redistest.Eventually(t, within, "every permit free", func() error {
		if available, acquired := state(); available != total || acquired != 0 {
			return fmt.Errorf("%d available, %d acquired; want %d and 0", available, acquired, total)
		}
		return nil
	})
}
