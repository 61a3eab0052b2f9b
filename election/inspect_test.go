package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// electionKeys are the keys of the election called name.
func electionKeys(name string) []string {
	tag := "{" + name + "}"
	return []string{name, tag + ":leader", tag + ":leaders",
		"redisson_lock_queue:" + tag, "redisson_lock_timeout:" + tag, "redisson_lock_token:" + tag}
}

// Inspect shows the leader, its lock, the candidates in their order (a
// dead one flagged) and the keys with their expiry; before anything,
// nothing.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	name := redistest.Key(t)
	c := clienttest.New(t, s.Client(t))
	e := election.New(c, name, election.WithLease(20*time.Second))

	info, err := e.Inspect(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.Info{}, info, "an election never run")

	la, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	// A live candidate waits; then a dead one's entry, as a candidate
	// whose process died leaves it (its deadline passed).
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	go func() { _, _ = election.New(clienttest.New(t, s.Client(t)), name).Campaign(bctx, "b") }()
	queue, timeouts := "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}"
	redistest.Eventually(t, 5*time.Second, "b queued", func() error {
		if rdb.LLen(ctx, queue).Val() != 1 {
			return assert.AnError
		}
		return nil
	})
	const dead = "00000000-dead-4000-8000-000000000000:1"
	require.NoError(t, rdb.RPush(ctx, queue, dead).Err())
	require.NoError(t, rdb.ZAdd(ctx, timeouts, redis.Z{Score: float64(time.Now().Add(-time.Minute).UnixMilli()), Member: dead}).Err())

	info, err = e.Inspect(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", info.Leader.Value)
	assert.Equal(t, la.Term(), info.Leader.Term)
	assert.WithinDuration(t, time.Now(), info.Leader.Since, 5*time.Second)
	assert.True(t, info.Leading)
	assert.Regexp(t, `^`+c.ID()+`:\d+$`, info.Owner)
	assert.Equal(t, info.Owner, info.Holder)
	assert.Greater(t, info.TTL, 15*time.Second)
	assert.LessOrEqual(t, info.TTL, 20*time.Second)
	assert.Equal(t, la.Term(), info.LastTerm)
	assert.EqualValues(t, 1, info.Records)
	require.Len(t, info.Candidates, 2)
	assert.False(t, info.Candidates[0].Dead(), "b re-checks: live")
	assert.Greater(t, info.Candidates[0].Deadline, time.Second)
	assert.Equal(t, dead, info.Candidates[1].Owner)
	assert.True(t, info.Candidates[1].Dead())
	var names []string
	for _, k := range info.Keys {
		names = append(names, k.Name)
		if k.Name == name {
			assert.Equal(t, "hash", k.Type)
			assert.Greater(t, k.TTL, 15*time.Second, "the lock's lease")
		} else {
			assert.Equal(t, time.Duration(-1), k.TTL, "%s has no expiry", k.Name)
		}
	}
	assert.Equal(t, electionKeys(name), names)

	// a resigns: b leads; a's record is the log's older one.
	require.NoError(t, la.Resign(ctx))
	redistest.Eventually(t, 5*time.Second, "b leads", func() error {
		info, err = e.Inspect(ctx)
		if err != nil || info.Leader.Value != "b" {
			return assert.AnError
		}
		return nil
	})
	assert.True(t, info.Leading)
	assert.Greater(t, info.Leader.Term, la.Term())
	assert.EqualValues(t, 2, info.Records)
	bcancel() // b's leadership ends with its Client's Close
}
