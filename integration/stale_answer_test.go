package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// An answer "not held" (or "gone", to a renewal) from a primary whose
// replicas do not acknowledge is no proof that the hold is gone: in a
// split brain, a connection pooled to the old primary reaches a server
// that never had the hold, while the hold lives on the new one. The
// release fails (an error wrapping ErrNotReplicated, not ErrNotHeld) and
// the renewal leaves the hold to its acknowledged lease. Here the primary
// answers so because the hold was deleted behind the Client's back while
// its replica is stopped.
func TestNotHeldFromAnUnacknowledgingPrimaryIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	primary, replicas := replicated(t, 1)

	t.Run("release", func(t *testing.T) {
		c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(redisync.ReplicasAll, time.Second))
		name := redistest.Key(t)
		l := rlock.New(c, name, rlock.WithLease(time.Minute))
		require.NoError(t, l.Lock(ctx))
		replicas[0].Pause(t)
		defer replicas[0].Resume(t)
		primary.Do(t, "DEL", name)
		err := l.Unlock(ctx)
		require.Error(t, err)
		assert.False(t, errors.Is(err, redisync.ErrNotHeld), "not held, from a primary that did not reach its replica: %v", err)
		assert.ErrorIs(t, err, redisync.ErrNotReplicated)
	})

	t.Run("renewal", func(t *testing.T) {
		c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(redisync.ReplicasAll, time.Second),
			redisync.WithWatchdogTimeout(3*time.Second))
		name := redistest.Key(t)
		l := rlock.New(c, name)
		require.NoError(t, l.Lock(ctx))
		acquired := time.Now()
		replicas[0].Pause(t)
		primary.Do(t, "DEL", name)
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the hold outlived its acknowledged lease")
		}
		ended := time.Since(acquired)
		replicas[0].Resume(t)
		assert.ErrorIs(t, l.Err(), redisync.ErrNotReplicated, "ended with its acknowledged lease, not as gone: %v", l.Err())
		assert.Greater(t, ended, 2*time.Second, "not ended at the first renewal (a third of the lease), which found it gone unacknowledged")
	})
}
