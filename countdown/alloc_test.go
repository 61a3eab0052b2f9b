package countdown_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// The allocation guard of a count-down and the wait that follows it on an
// open latch: at most about 10% more allocations than when the ceiling
// was measured, so that a refactor cannot lose them unnoticed.
func TestCountDownAllocs(t *testing.T) {
	l := countdown.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx := context.Background()
	ok, err := l.TrySetCount(ctx, 1_000_000)
	require.NoError(t, err)
	require.True(t, ok)
	allocs := testing.AllocsPerRun(200, func() {
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per CountDown", allocs)
	require.LessOrEqual(t, allocs, 13.0, "allocations per CountDown") // 11 measured
}
