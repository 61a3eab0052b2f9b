package rlock_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// allocLocker is what the allocation guards lock and unlock.
type allocLocker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// requireAllocsAtMost fails when an uncontended Lock and Unlock of l
// allocate more than ceiling times on average: the guard of the hot path's
// allocations, so that a refactor cannot lose them unnoticed. The
// ceilings are about 10% above what was measured when they were set.
func requireAllocsAtMost(t *testing.T, l allocLocker, ceiling float64) {
	t.Helper()
	ctx := context.Background()
	// The least of three runs: AllocsPerRun counts the whole process's
	// allocations, and a background goroutine (the race detector's
	// bookkeeping, a probe of the Client) may add one to a run.
	allocs := math.Inf(1)
	for range 3 {
		allocs = min(allocs, testing.AllocsPerRun(200, func() {
			if err := l.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}))
	}
	t.Logf("%v allocations per Lock and Unlock", allocs)
	require.LessOrEqual(t, allocs, ceiling, "allocations per uncontended Lock and Unlock")
}

func allocClient(t *testing.T) *redisync.Client {
	return clienttest.New(t, redistest.Shared(t).Client(t))
}

func TestLockAllocs(t *testing.T) {
	requireAllocsAtMost(t, rlock.New(allocClient(t), redistest.Key(t)), 24) // 21 measured
}

func TestFairLockAllocs(t *testing.T) {
	requireAllocsAtMost(t, rlock.NewFair(allocClient(t), redistest.Key(t)), 32) // 29 measured
}

func TestSpinLockAllocs(t *testing.T) {
	requireAllocsAtMost(t, rlock.NewSpin(allocClient(t), redistest.Key(t)), 25) // 23 measured
}
