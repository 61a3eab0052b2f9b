package redisync_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
)

// Regression (issue 25): two processes given the same WithID both held one
// lock at once. A second live Client with an id in use fails its operations
// with ErrDuplicateID, changing nothing; Close of the first frees the id at
// once.
func TestDuplicateIDCannotHold(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	id := redistest.Key(t, "service")
	name := redistest.Key(t, "lock")
	first := redisync.New(s.Client(t), redisync.WithID(id))
	defer first.Close()
	second := clienttest.New(t, s.Client(t), redisync.WithID(id))

	require.NoError(t, rlock.New(first, name).Lock(ctx))
	// Bounded: without the check, the second client's Lock would wait
	// for the first's hold.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for what, op := range map[string]func() error{
		"Lock":         func() error { return rlock.New(second, name).Lock(ctx) },
		"TryLock":      func() error { _, err := rlock.New(second, name).TryLock(ctx, 0); return err },
		"owner Lock":   func() error { return rlock.New(second, name).Lock(redisync.WithOwner(ctx)) },
		"IsLocked":     func() error { _, err := rlock.New(second, name).IsLocked(ctx); return err },
		"latch":        func() error { _, err := countdown.New(second, name+":latch").TrySetCount(ctx, 1); return err },
		"fair TryLock": func() error { _, err := rlock.NewFair(second, name).TryLock(ctx, 0); return err },
	} {
		err := op()
		assert.ErrorIs(t, err, redisync.ErrDuplicateID, what)
	}
	n, err := s.Client(t).Exists(ctx, name+":latch").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the refused client changed nothing")
	fields, err := s.Client(t).HKeys(ctx, name).Result()
	require.NoError(t, err)
	assert.Len(t, fields, 1, "one holder")

	reg := keys.ClientRegistration(id)
	ttl, err := s.Client(t).PTTL(ctx, reg).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, 30*time.Second, "the registration's TTL is the watchdog timeout")

	// Close of the first frees the id at once; its lock stays until its
	// lease ends, so the second takes another.
	require.NoError(t, first.Close())
	n, err = s.Client(t).Exists(ctx, reg).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Close deletes the registration")
	other := rlock.New(second, name+":other")
	require.NoError(t, other.Lock(ctx))
	require.NoError(t, other.Unlock(ctx))

	third := clienttest.New(t, s.Client(t), redisync.WithID(id))
	_, err = rlock.New(third, name).IsLocked(ctx)
	assert.ErrorIs(t, err, redisync.ErrDuplicateID, "now the second holds the id")
	assert.Contains(t, err.Error(), id)
}

// The registration is renewed while the Client lives, and a Client without
// WithID (a random UUID) registers nothing.
func TestRegistrationRenewed(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	id := redistest.Key(t, "service")
	c := clienttest.New(t, s.Client(t), redisync.WithID(id), redisync.WithWatchdogTimeout(300*time.Millisecond))
	_, err := rlock.New(c, redistest.Key(t)).IsLocked(ctx)
	require.NoError(t, err)
	time.Sleep(time.Second)
	n, err := s.Client(t).Exists(ctx, keys.ClientRegistration(id)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "renewed past three TTLs")
	_, err = rlock.New(clienttest.New(t, s.Client(t), redisync.WithID(id)), "x").IsLocked(ctx)
	assert.True(t, errors.Is(err, redisync.ErrDuplicateID))

	anon := clienttest.New(t, s.Client(t))
	_, err = rlock.New(anon, redistest.Key(t)).IsLocked(ctx)
	require.NoError(t, err)
	n, err = s.Client(t).Exists(ctx, keys.ClientRegistration(anon.ID())).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// registerCalls counts the client_register script calls a client sends.
type registerCalls struct{ n atomic.Int32 }

func (r *registerCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *registerCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if clienttest.ScriptIs(cmd.Args(), lua.ClientRegister) {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (r *registerCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The registration costs one round trip, at the first operation; the
// operations after it send nothing more.
func TestRegistrationOnce(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	calls := &registerCalls{}
	rdb.AddHook(calls)
	c := clienttest.New(t, rdb, redisync.WithID(redistest.Key(t, "service")))
	l := rlock.New(c, redistest.Key(t))
	for range 20 {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
	assert.EqualValues(t, 1, calls.n.Load())
}
