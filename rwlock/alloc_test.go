package rwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
)

// The allocation guards of the hot path: an uncontended acquisition and
// release of each side allocates at most about 10% more than when the
// ceilings were measured, so that a refactor cannot lose them unnoticed.
func TestReadLockAllocs(t *testing.T) {
	rw := rwlock.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if err := rw.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per RLock and RUnlock", allocs)
	require.LessOrEqual(t, allocs, 36.0, "allocations per uncontended RLock and RUnlock") // 33 measured
}

func TestWriteLockAllocs(t *testing.T) {
	rw := rwlock.New(clienttest.New(t, redistest.Shared(t).Client(t)), redistest.Key(t))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per Lock and Unlock", allocs)
	require.LessOrEqual(t, allocs, 28.0, "allocations per uncontended Lock and Unlock") // 25 measured
}
