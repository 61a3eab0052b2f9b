package election_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
)

// scriptHook is a go-redis hook that counts a client's calls of one
// script (count), and runs do once, just before the client's first call
// of another (before) is sent: a fault injected between two steps.
type scriptHook struct {
	count, before *redis.Script
	do            func()
	n             atomic.Int64
	once          sync.Once
}

func (h *scriptHook) see(cmd redis.Cmder) {
	args := lua.ArgValues(cmd.Args())
	if clienttest.ScriptIs(args, h.count) {
		h.n.Add(1)
	}
	if h.before != nil && clienttest.ScriptIs(args, h.before) {
		h.once.Do(h.do)
	}
}

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.see(cmd)
		}
		return next(ctx, cmds)
	}
}

// Regression (B4): a campaign whose first Proclaim is refused (the lock
// was taken from the winner before its record was written) ends the
// leadership once: one release is sent, not one by Proclaim and another
// by the campaign.
func TestRefusedProclaimReleasesOnce(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	other := s.Client(t)
	hook := &scriptHook{count: lua.FairRelease, before: lua.ElectionProclaim, do: func() {
		// An operator's forced unlock between the win and the record.
		if err := other.Del(context.Background(), name).Err(); err != nil {
			t.Error(err)
		}
	}}
	rdb := s.Client(t)
	// Loaded, so that no NOSCRIPT fallback sends a call twice.
	require.NoError(t, lua.FairRelease.Load(ctx, rdb).Err())
	rdb.AddHook(hook)
	e := election.New(clienttest.New(t, rdb), name)
	_, err := e.Campaign(ctx, "x")
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.ErrorIs(t, err, redisync.ErrLockLost)
	time.Sleep(200 * time.Millisecond) // a release sent in the background would be counted by now
	assert.EqualValues(t, 1, hook.n.Load(), "fair_release calls")
}

// A leader cut off from Redis stops leading by the engine's one lease
// rule: its leadership ends when its hold does (the last acknowledged
// write + the lease − the margin), with the hold's own cause, and not
// earlier by a clock of the election's own.
func TestLeadershipEndsWithItsHold(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	const lease = time.Second
	c, proxy := clienttest.Proxied(t, s, redis.Options{MaxRetries: -1})
	e := election.New(c, name, election.WithLease(lease))
	l, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	fields, err := s.Client(t).HKeys(ctx, name).Result()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	token, err := strconv.ParseUint(fields[0][strings.LastIndexByte(fields[0], ':')+1:], 10, 64)
	require.NoError(t, err)
	hold := rlock.NewFair(c, name).Hold(redisync.WithOwnerToken(ctx, token))
	require.NotNil(t, hold, "the leader's hold")

	proxy.Block()
	defer proxy.Unblock()
	cut := time.Now()
	select {
	case <-l.Done():
	case <-time.After(lease + 2*time.Second):
		t.Fatalf("the leadership still lives %v after its network was cut", lease+2*time.Second)
	}
	t.Logf("the leadership ended %v after the network was cut (lease %v)", time.Since(cut), lease)
	select {
	case <-hold.Context().Done(): // the leadership's parent
	default:
		t.Fatal("the leadership ended before its hold")
	}
	assert.ErrorIs(t, l.Err(), redisync.ErrLockLost)
	assert.Equal(t, hold.Err(), l.Err(), "the leadership's cause is its hold's")
}
