package rlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// fencedLocker is what the floor tests use of a fenced lock.
type fencedLocker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	FencingToken() int64
}

// fencedKinds are the fenced lock kinds and their scripts: the fresh hold
// (lock_acquire_fresh: a lock or a spin lock without a context owner), the
// reentrant hold (lock_acquire: with one) and the fair lock (fair_acquire).
var fencedKinds = []struct {
	kind  string
	owner bool // acquire with a context owner (redisync.WithOwner)
	make  func(c *redisync.Client, name string) fencedLocker
}{
	{"lock", false, func(c *redisync.Client, n string) fencedLocker { return rlock.New(c, n, rlock.WithFencing()) }},
	{"lock with an owner", true, func(c *redisync.Client, n string) fencedLocker { return rlock.New(c, n, rlock.WithFencing()) }},
	{"spin lock", false, func(c *redisync.Client, n string) fencedLocker { return rlock.NewSpin(c, n, rlock.WithFencing()) }},
	{"fair lock", true, func(c *redisync.Client, n string) fencedLocker { return rlock.NewFair(c, n, rlock.WithFencing()) }},
}

// takeTokens acquires and releases l n times and returns the largest
// token it got, checking that each is larger than the one before.
func takeTokens(t *testing.T, ctx context.Context, l fencedLocker, n int, above int64) int64 {
	t.Helper()
	for range n {
		require.NoError(t, l.Lock(ctx))
		tok := l.FencingToken()
		require.Greater(t, tok, above, "a fencing token went backwards")
		above = tok
		require.NoError(t, l.Unlock(ctx))
	}
	return above
}

func ownerCtx(owner bool) context.Context {
	if owner {
		return redisync.WithOwner(context.Background())
	}
	return context.Background()
}

// Issue 38: a server restarted without its data has lost every fencing
// counter; the next token is still above every earlier one (before, the
// counter started again at 1).
func TestFencingTokensGrowAcrossRestartWithoutPersistence(t *testing.T) {
	s := redistest.Start(t) // --save "" --appendonly no
	c := clienttest.New(t, s.Client(t))
	highest := map[string]int64{}
	names := map[string]string{}
	for _, k := range fencedKinds {
		ctx := ownerCtx(k.owner)
		names[k.kind] = redistest.Key(t, strings.ReplaceAll(k.kind, " ", "-"))
		highest[k.kind] = takeTokens(t, ctx, k.make(c, names[k.kind]), 3, 0)
	}
	s.Restart(t)
	for _, k := range fencedKinds {
		ctx, cancel := context.WithTimeout(ownerCtx(k.owner), 20*time.Second)
		l := k.make(c, names[k.kind])
		last := takeTokens(t, ctx, l, 2, highest[k.kind])
		v, err := s.Client(t).Get(ctx, keys.FenceCounter(names[k.kind])).Int64()
		require.NoError(t, err)
		assert.Equal(t, last, v, "%s: the counter is Redisson's key, at the last token", k.kind)
		cancel()
	}
}

// Issue 38: a counter evicted (here deleted) while nobody holds the lock:
// the next token is still above every earlier one (the handoff's script:
// package lua's TestHandoffTokenAboveLostCounter). A Redisson (Java) client that
// acquires first after the loss INCRs the missing key and gets 1; the Go
// acquisition after it goes back above every earlier token.
func TestFencingTokensGrowAfterCounterLoss(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	c := clienttest.New(t, s.Client(t))
	direct := s.Client(t)
	for _, k := range fencedKinds {
		t.Run(k.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ownerCtx(k.owner), 20*time.Second)
			defer cancel()
			name := redistest.Key(t)
			l := k.make(c, name)
			before := takeTokens(t, ctx, l, 3, 0)
			require.NoError(t, direct.Del(ctx, keys.FenceCounter(name)).Err())
			after := takeTokens(t, ctx, l, 1, before)

			require.NoError(t, direct.Del(ctx, keys.FenceCounter(name)).Err())
			java, err := direct.Incr(ctx, keys.FenceCounter(name)).Result() // Redisson's RFencedLock
			require.NoError(t, err)
			assert.Equal(t, int64(1), java, "a Java client first after the loss gets 1")
			takeTokens(t, ctx, l, 1, after)
		})
	}
}

// Issue 38: a failover to a replica that had not received the last INCR
// (its replication link cut by a proxy, then the primary dies and the
// replica is promoted): the next token on it is above the last one the
// old primary issued (before, it was that token again).
func TestFencingTokensGrowAcrossFailoverToLaggingReplica(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.Start(t)
	link := redistest.NewProxy(t, primary.Addr())
	host, port, _ := strings.Cut(link.Addr(), ":")
	replica.Do(t, "REPLICAOF", host, port)
	require.Eventually(t, func() bool {
		info, _ := replica.Do(t, "INFO", "replication").(string)
		return strings.Contains(info, "master_link_status:up")
	}, 10*time.Second, 20*time.Millisecond, "replica link up")

	// Replica acknowledgement off: the last acquisition must not wait for
	// the replica it cannot reach.
	c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(0, 0))
	highest := map[string]int64{}
	names := map[string]string{}
	for _, k := range fencedKinds {
		names[k.kind] = redistest.Key(t, strings.ReplaceAll(k.kind, " ", "-"))
		highest[k.kind] = takeTokens(t, ownerCtx(k.owner), k.make(c, names[k.kind]), 2, 0)
	}
	for _, k := range fencedKinds {
		want := strconv.FormatInt(highest[k.kind], 10)
		require.Eventually(t, func() bool {
			v, _ := replica.Do(t, "GET", keys.FenceCounter(names[k.kind])).(string)
			return v == want
		}, 10*time.Second, 20*time.Millisecond, "the replica has the counter")
	}
	link.Block()
	for _, k := range fencedKinds {
		highest[k.kind] = takeTokens(t, ownerCtx(k.owner), k.make(c, names[k.kind]), 1, highest[k.kind])
	}
	primary.Stop(t)
	replica.Do(t, "REPLICAOF", "NO", "ONE")
	for _, k := range fencedKinds {
		v, _ := replica.Do(t, "GET", keys.FenceCounter(names[k.kind])).(string)
		require.NotEqual(t, strconv.FormatInt(highest[k.kind], 10), v, "%s: the replica received the last INCR", k.kind)
	}

	promoted := clienttest.New(t, replica.Client(t))
	for _, k := range fencedKinds {
		ctx, cancel := context.WithTimeout(ownerCtx(k.owner), 20*time.Second)
		takeTokens(t, ctx, k.make(promoted, names[k.kind]), 1, highest[k.kind])
		cancel()
	}
}
