package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// Inspect and Delete refuse a key of another type, and Delete changes
// nothing then.
func TestInspectDeleteWrongType(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	require.NoError(t, rdb.Set(ctx, "{"+name+"}:leader", "x", 0).Err())
	require.NoError(t, rdb.Set(ctx, "redisson_lock_token:{"+name+"}", "5", 0).Err())
	e := election.New(clienttest.New(t, s.Client(t)), name)
	_, err := e.Inspect(ctx)
	assert.ErrorIs(t, err, redisync.ErrWrongType)
	_, err = e.ForceDelete(ctx)
	assert.ErrorIs(t, err, redisync.ErrWrongType)
	assert.EqualValues(t, 2, rdb.Exists(ctx, electionKeys(name)...).Val(), "nothing deleted")
	// An application's hash under the name is no lock.
	name2 := redistest.Key(t, "app")
	require.NoError(t, rdb.HSet(ctx, name2, "email", "a@b").Err())
	_, err = election.New(clienttest.New(t, s.Client(t)), name2).Delete(ctx)
	assert.ErrorIs(t, err, redisync.ErrWrongType)
	assert.EqualValues(t, 1, rdb.Exists(ctx, name2).Val())
}

// Delete is refused while someone leads, and says who; after the
// leader resigns it deletes every key, and the election runs again with
// a larger term, its observers following.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	e := election.New(clienttest.New(t, s.Client(t)), name)
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	obs := election.New(clienttest.New(t, s.Client(t)), name).Observe(octx)

	la, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "a", (<-obs).Value)
	ops := election.New(clienttest.New(t, s.Client(t)), name)
	_, err = ops.Delete(ctx)
	require.ErrorIs(t, err, election.ErrLeading)
	assert.Contains(t, err.Error(), `the leader (value "a"`)
	assert.NoError(t, la.Err(), "a refused Delete ends nothing")
	assert.EqualValues(t, 4, rdb.Exists(ctx, electionKeys(name)...).Val(), "nothing deleted: lock, record, log, counter")

	require.NoError(t, la.Resign(ctx))
	ok, err := ops.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, rdb.Exists(ctx, electionKeys(name)...).Val(), "every key deleted")
	ok, err = ops.Delete(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing left to delete")
	_, err = ops.Leader(ctx)
	assert.ErrorIs(t, err, election.ErrNoLeader)

	// The election runs again: a larger term than before its counter
	// was deleted, and the observer started before the deletion sees it.
	lb, err := e.Campaign(ctx, "b")
	require.NoError(t, err)
	assert.Greater(t, lb.Term(), la.Term())
	select {
	case l := <-obs:
		assert.Equal(t, election.Leader{Value: "b", Term: lb.Term(), Since: l.Since}, l)
	case <-time.After(10 * time.Second):
		t.Fatal("the observer missed the leader elected after the deletion")
	}
	require.NoError(t, lb.Resign(ctx))
}

// ForceDelete while someone leads: the keys go, the leadership ends
// with ErrLockLost (at once in the deleting Client, at the next renewal
// elsewhere), and the first live candidate waiting is woken and leads.
func TestForceDelete(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	const lease = 3 * time.Second
	ca := clienttest.New(t, s.Client(t))
	la, err := election.New(ca, name, election.WithLease(lease)).Campaign(ctx, "a")
	require.NoError(t, err)
	won := make(chan *election.Leadership, 1)
	cb := clienttest.New(t, s.Client(t))
	go func() {
		l, err := election.New(cb, name).Campaign(ctx, "b")
		if assert.NoError(t, err) {
			won <- l
		}
	}()
	rdb := s.Client(t)
	redistest.Eventually(t, 5*time.Second, "b queued", func() error {
		if rdb.LLen(ctx, "redisson_lock_queue:{"+name+"}").Val() != 1 {
			return assert.AnError
		}
		return nil
	})

	start := time.Now()
	ok, err := election.New(clienttest.New(t, s.Client(t)), name).ForceDelete(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	var lb *election.Leadership
	select {
	case lb = <-won:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting candidate did not lead after the forced deletion")
	}
	t.Logf("the waiting candidate led %v after the forced deletion", time.Since(start))
	select {
	case <-la.Done():
	case <-time.After(lease):
		t.Fatal("the old leadership outlived the deletion by a lease")
	}
	assert.ErrorIs(t, la.Err(), redisync.ErrLockLost)
	assert.ErrorIs(t, la.Proclaim(ctx, "stale"), redisync.ErrNotHeld)

	// Forced through the leader's own Client: its leadership ends as the
	// call returns.
	ok, err = election.New(cb, name).Delete(ctx)
	require.ErrorIs(t, err, election.ErrLeading)
	assert.False(t, ok)
	ok, err = election.New(cb, name).ForceDelete(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	select {
	case <-lb.Done():
	default:
		t.Fatal("the leadership of the deleting Client outlived its ForceDelete")
	}
	assert.ErrorIs(t, lb.Err(), redisync.ErrLockLost)
}
