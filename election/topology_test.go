package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

// Exclusion, terms and Observe on a Sentinel-managed primary with a
// replica (acknowledgement on, as by default); then a failover while a
// candidate leads: the acknowledged leadership survives it (its lock was
// on the replica), and a resignation after it hands over as before.
func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	exclusion(t, 8*time.Second, func(t *testing.T) (redis.UniversalClient, *redistest.Proxy) {
		return s.Client(t), nil
	}, s.Client(t))

	ctx := context.Background()
	name := redistest.Key(t, "failover")
	const lease = 10 * time.Second
	e := election.New(clienttest.New(t, s.Client(t)), name, election.WithLease(lease))
	l, err := e.Campaign(ctx, "before")
	require.NoError(t, err)
	next := make(chan *election.Leadership, 1)
	go func() {
		if nl, err := election.New(clienttest.New(t, s.Client(t)), name, election.WithLease(lease)).Campaign(ctx, "next"); assert.NoError(t, err) {
			next <- nl
		}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	s.Failover(t)
	failover := time.Since(start)
	var lead election.Leader
	redistest.Eventually(t, lease+20*time.Second, "a leader readable on the new primary", func() error {
		lead, err = e.Leader(ctx)
		return err
	})
	t.Logf("Sentinel failover took %v; a leader (%q) readable %v after it began; the first leadership live: %v",
		failover, lead.Value, time.Since(start), l.Err() == nil)
	if l.Err() == nil { // acknowledged: its lock survived on the promoted replica
		assert.Equal(t, l.Term(), lead.Term)
		require.NoError(t, l.Proclaim(ctx, "after"))
		start = time.Now()
		require.NoError(t, l.Resign(ctx))
	}
	nl := <-next
	t.Logf("next leader %v after the first one's end or resignation", time.Since(start))
	assert.Greater(t, nl.Term(), l.Term())
	require.NoError(t, nl.Resign(ctx))
}

// Exclusion, terms and Observe on a Cluster: the lock, the record, the
// log and the channel share the name's slot.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	exclusion(t, 8*time.Second, func(t *testing.T) (redis.UniversalClient, *redistest.Proxy) {
		return c.Client(t), nil
	}, c.Client(t))
	// A name with a hash tag of its own keeps every key in its slot.
	ctx := context.Background()
	e := election.New(clienttest.New(t, c.Client(t)), "{jobs}:leader-election")
	l, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	lead, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", lead.Value)
	// Inspect and Delete too: one node's reads, one script in the slot.
	info, err := e.Inspect(ctx)
	require.NoError(t, err)
	assert.True(t, info.Leading)
	assert.Equal(t, "x", info.Leader.Value)
	assert.Len(t, info.Keys, 4, "lock, record, log, counter")
	_, err = e.Delete(ctx)
	require.ErrorIs(t, err, election.ErrLeading)
	require.NoError(t, l.Resign(ctx))
	deleted, err := e.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, deleted)
	info, err = e.Inspect(ctx)
	require.NoError(t, err)
	assert.Empty(t, info.Keys)
}

// Takeover times with a 3 s lease: the leader's Client closed without
// releasing (as a kill -9 leaves it), and a resignation.
func TestTakeover(t *testing.T) {
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t)
	const lease = 3 * time.Second
	for _, how := range []string{"killed", "resigned"} {
		ca := redisync.New(s.Client(t)) // the Client's own lease stays 30s
		t.Cleanup(func() { _ = ca.Close() })
		la, err := election.New(ca, name, election.WithLease(lease)).Campaign(ctx, "a")
		require.NoError(t, err)
		b := election.New(clienttest.New(t, s.Client(t)), name, election.WithLease(lease))
		won := make(chan *election.Leadership, 1)
		go func() {
			if lb, err := b.Campaign(ctx, "b"); assert.NoError(t, err) {
				won <- lb
			}
		}()
		time.Sleep(time.Duration(500+len(how)*100) * time.Millisecond) // some time into a renewal period
		start := time.Now()
		if how == "killed" {
			require.NoError(t, ca.Close())
		} else {
			require.NoError(t, la.Resign(ctx))
		}
		lb := <-won
		took := time.Since(start)
		t.Logf("takeover, leader %s, lease %v: %v", how, lease, took)
		if how == "killed" {
			assert.Less(t, took, lease+2*time.Second)
		} else {
			assert.Less(t, took, time.Second)
		}
		require.NoError(t, lb.Resign(ctx))
	}
}

func TestLeaseInvalid(t *testing.T) {
	c := clienttest.New(t, redistest.Shared(t).Client(t))
	_, err := election.New(c, redistest.Key(t), election.WithLease(0)).Campaign(context.Background(), "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}
