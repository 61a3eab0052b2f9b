package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// electionCleanup deletes the election name's keys at the end of the
// test.
func electionCleanup(t *testing.T, name string) {
	t.Cleanup(func() { rdb(t).Del(context.Background(), keys.ElectionKeys(name)...) })
}

// TestInspectElection: an election with a leader, a live candidate
// waiting behind it and a dead one (its process died), and an observer;
// inspected by its name and by its record's and log's names, as JSON and
// text. It showed as a plain lock, and its record as "not a primitive".
func TestInspectElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "election")
	electionCleanup(t, name)
	c := clienttest.Shared(t)
	l, err := election.New(c, name, election.WithLease(20*time.Second)).Campaign(ctx, "host-a:8080")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Resign(context.Background()) })
	cc := clienttest.New(t, redistest.Shared(t).Client(t))
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _, _ = election.New(cc, name).Campaign(cctx, "host-b:8080") }()
	require.Eventually(t, func() bool { return rdb(t).LLen(ctx, keys.FairQueue(name)).Val() == 1 }, wakeBound, 5*time.Millisecond)
	q, err := rdb(t).LRange(ctx, keys.FairQueue(name), 0, 0).Result()
	require.NoError(t, err)
	waitSubscribers(t, keys.FairChannel(name, q[0]), 1)
	deadEntry(t, name, "00000000-dead-4000-8000-000000000000:1", false)
	octx, ocancel := context.WithCancel(ctx)
	t.Cleanup(ocancel)
	election.New(clienttest.New(t, redistest.Shared(t).Client(t)), name).Observe(octx)
	waitSubscribers(t, keys.ElectionChannel(name), 1)

	r := inspectJSON(t, name)
	require.Equal(t, kindElection, r.Type, "report %+v", r)
	require.NotNil(t, r.Election)
	el := r.Election
	assert.Equal(t, name, r.Name)
	assert.True(t, r.Exists)
	assert.True(t, el.Leading)
	require.NotNil(t, el.Leader)
	assert.Equal(t, "host-a:8080", el.Leader.Value)
	assert.Equal(t, l.Term(), el.Leader.Term)
	assert.WithinDuration(t, time.Now(), el.Leader.Since, 5*time.Second)
	assert.Equal(t, c.ID(), el.Leader.ClientID)
	require.NotNil(t, el.Holder)
	assert.Equal(t, el.Leader.Owner, el.Holder.Owner)
	if assert.NotNil(t, r.TTLMillis) {
		assert.Greater(t, *r.TTLMillis, int64(15000))
	}
	if assert.NotNil(t, r.FenceToken) {
		assert.Equal(t, l.Term(), *r.FenceToken, "the last term issued")
	}
	require.Len(t, r.Queue, 2, "the candidates")
	assert.Equal(t, cc.ID(), r.Queue[0].ClientID)
	assert.False(t, r.Queue[0].Dead)
	assert.True(t, r.Queue[1].Dead)
	assert.EqualValues(t, 1, r.Waiters, "the live candidate's client listens")
	assert.EqualValues(t, 1, el.Observers)
	assert.Equal(t, keys.ElectionChannel(name), el.Channel)
	assert.EqualValues(t, 1, el.Records)
	var got []string
	for _, k := range el.Keys {
		got = append(got, k.Key)
		if k.Key == name {
			assert.Greater(t, k.TTLMillis, int64(15000), "the lock's lease")
		} else {
			assert.EqualValues(t, -1, k.TTLMillis, "%s: no expiry", k.Key)
		}
	}
	assert.Equal(t, keys.ElectionKeys(name), got)

	// By its record's and its log's names: the same election.
	for _, key := range []string{keys.ElectionLeader(name), keys.ElectionLog(name)} {
		r := inspectJSON(t, key)
		assert.Equal(t, kindElection, r.Type, "inspect %s", key)
		assert.Equal(t, name, r.Name, "inspect %s", key)
		assert.Contains(t, r.Reason, "of the election", "inspect %s", key)
	}
	// -type fair_lock: its lock alone.
	assert.Equal(t, kindFair, inspectJSON(t, name, "-type", "fair_lock").Type)

	res := runCmd(t, nil, "inspect", "-redis", testURL(t), keys.ElectionLeader(name))
	require.Equal(t, exitOK, res.code)
	for _, s := range []string{
		"type:", "election (" + keys.ElectionLeader(name) + " is the leader record of the election",
		`leader:`, `"host-a:8080", term `,
		"client " + c.ID(),
		"lock:", "held by the leader, lease ",
		"candidates:", "2 candidates waiting, next in turn first, 1 of them dead",
		"#1", "client " + cc.ID(), "deadline in ",
		"#2", "dead: deadline passed",
		"last term issued", "records:", "1 leader record in " + keys.ElectionLog(name),
		keys.FenceCounter(name), "no expiry (kept until deleted)",
		"observers:", "1 client subscribed to " + keys.ElectionChannel(name),
		"waiters:", "1 client subscribed to the candidates' channels",
	} {
		assert.Contains(t, res.stdout, s)
	}
}

// TestInspectElectionNoLeader: the last leader resigned; its record
// stays (without expiry) and inspect says it no longer leads. An
// election's lock held by a Redisson RLock is shown held by no
// candidate.
func TestInspectElectionNoLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "election")
	electionCleanup(t, name)
	c := clienttest.Shared(t)
	l, err := election.New(c, name).Campaign(ctx, "v1")
	require.NoError(t, err)
	require.NoError(t, l.Resign(ctx))

	r := inspectJSON(t, name)
	require.Equal(t, kindElection, r.Type)
	assert.False(t, r.Exists)
	assert.False(t, r.Election.Leading)
	assert.Nil(t, r.Election.Holder)
	assert.Equal(t, "v1", r.Election.Leader.Value)
	assert.Empty(t, r.Queue)
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	assert.Contains(t, res.stdout, `none: the last leader, "v1"`)
	assert.Regexp(t, `\nlock:\s+free\n`, res.stdout)

	rl := rlock.New(clienttest.Shared(t), name)
	require.NoError(t, rl.Lock(ctx))
	t.Cleanup(func() { _ = rl.Unlock(context.Background()) })
	r = inspectJSON(t, name)
	assert.True(t, r.Exists)
	assert.False(t, r.Election.Leading)
	require.NotNil(t, r.Election.Holder)
	res = runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	assert.Contains(t, res.stdout, "held by an owner that wrote no leader record")
}

// TestUnlockElection: unlock frees an election's lock as a fair lock's:
// the leadership ends and the next candidate leads.
func TestUnlockElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "election")
	electionCleanup(t, name)
	l, err := election.New(clienttest.Shared(t), name, election.WithLease(3*time.Second)).Campaign(ctx, "v1")
	require.NoError(t, err)
	won := make(chan *election.Leadership, 1)
	go func() {
		l, err := election.New(clienttest.Shared(t), name).Campaign(ctx, "v2")
		if assert.NoError(t, err) {
			won <- l
		}
	}()
	require.Eventually(t, func() bool { return rdb(t).LLen(ctx, keys.FairQueue(name)).Val() == 1 }, wakeBound, 5*time.Millisecond)
	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, `force-unlocked fair lock "`+name+`"`)
	select {
	case l2 := <-won:
		t.Cleanup(func() { _ = l2.Resign(context.Background()) })
	case <-time.After(wakeBound):
		t.Fatal("the next candidate did not lead after the unlock")
	}
	<-l.Done()
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
}
