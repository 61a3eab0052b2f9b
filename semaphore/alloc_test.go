package semaphore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// The allocation guards of the hot path: an uncontended acquisition and
// release allocates at most about 10% more than when the ceilings were
// measured, so that a refactor cannot lose them unnoticed.
func TestSemaphoreAllocs(t *testing.T) {
	s := New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx := context.Background()
	ok, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	allocs := testing.AllocsPerRun(200, func() {
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per Acquire and Release", allocs)
	require.LessOrEqual(t, allocs, 34.0, "allocations per uncontended Acquire and Release") // 31 measured
}

func TestExpirableSemaphoreAllocs(t *testing.T) {
	s := NewExpirable(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx := context.Background()
	ok, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	allocs := testing.AllocsPerRun(200, func() {
		id, err := s.Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per Acquire and Release", allocs)
	require.LessOrEqual(t, allocs, 47.0, "allocations per uncontended Acquire and Release") // 43 measured
}
