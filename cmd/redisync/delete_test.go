package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// TestDeleteElection: delete refuses while someone leads and says who;
// -force deletes all the same and the leadership ends; after a
// resignation it deletes every key; a name that is no election is
// refused and left intact; nothing stored is nothing to delete.
func TestDeleteElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "election")
	electionCleanup(t, name)
	c := clienttest.Shared(t)
	l, err := election.New(c, name, election.WithLease(3*time.Second)).Campaign(ctx, "v1")
	require.NoError(t, err)

	res := runCmd(t, nil, "delete", "-yes", "-redis", testURL(t), name)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, `its lock is held by the leader "v1"`)
	assert.Contains(t, res.stderr, "pass -force")
	assert.EqualValues(t, 4, rdb(t).Exists(ctx, keys.ElectionKeys(name)...).Val(), "nothing deleted")
	assert.NoError(t, l.Err())

	res = runCmd(t, nil, "delete", "-yes", "-force", "-redis", testURL(t), name)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, `deleted election "`+name+`": `+name+", ")
	assert.Contains(t, res.stdout, `its lock was held by the leader "v1"`)
	assert.Zero(t, rdb(t).Exists(ctx, keys.ElectionKeys(name)...).Val(), "every key deleted")
	select {
	case <-l.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the leadership outlived its forced deletion by a lease")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)

	// Resigned: deleted without -force, by the record's name.
	l, err = election.New(c, name).Campaign(ctx, "v2")
	require.NoError(t, err)
	require.NoError(t, l.Resign(ctx))
	res = runCmd(t, nil, "delete", "-yes", "-redis", testURL(t), keys.ElectionLeader(name))
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, `deleted election "`+name+`"`)
	assert.Zero(t, rdb(t).Exists(ctx, keys.ElectionKeys(name)...).Val(), "every key deleted")
	res = runCmd(t, nil, "delete", "-yes", "-redis", testURL(t), name)
	assert.Equal(t, exitOK, res.code)
	assert.Contains(t, res.stdout, "nothing to delete")

	// A lock is no election.
	lock := redistest.Key(t, "lock")
	rdb(t).HSet(ctx, lock, "someone:9", 1)
	t.Cleanup(func() { rdb(t).Del(context.Background(), lock) })
	res = runCmd(t, nil, "delete", "-yes", "-force", "-redis", testURL(t), lock)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, "is a lock: delete removes elections only; nothing deleted")
	assert.EqualValues(t, 1, rdb(t).Exists(ctx, lock).Val())
}

// TestDeleteElectionConfirm: without -yes, delete shows the election and
// asks; any answer but yes leaves it. It replaces the terminal check, so
// it does not run in parallel.
func TestDeleteElectionConfirm(t *testing.T) {
	ctx := context.Background()
	defer func(old func(io.Reader) bool) { isTerminal = old }(isTerminal)
	name := redistest.Key(t, "election")
	electionCleanup(t, name)
	l, err := election.New(clienttest.Shared(t), name).Campaign(ctx, "v1")
	require.NoError(t, err)
	require.NoError(t, l.Resign(ctx))

	isTerminal = func(io.Reader) bool { return false }
	res := runCmd(t, nil, "delete", "-redis", testURL(t), name)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, "pass -yes")
	isTerminal = func(io.Reader) bool { return true }
	res = runCmd(t, strings.NewReader("n\n"), "delete", "-redis", testURL(t), name)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, `Delete election "`+name+`" (3 keys)? [y/N]`)
	assert.True(t, strings.HasSuffix(res.stderr, "redisync: delete: not deleted: confirmation declined\n"), res.stderr)
	assert.EqualValues(t, 3, rdb(t).Exists(ctx, keys.ElectionKeys(name)...).Val())
	res = runCmd(t, strings.NewReader("yes\n"), "delete", "-redis", testURL(t), name)
	assert.Equal(t, exitOK, res.code)
	assert.Zero(t, rdb(t).Exists(ctx, keys.ElectionKeys(name)...).Val())
}
