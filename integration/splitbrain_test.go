package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// The regression tests of issue 38, item 1: two holders after a
// replication partition and a failover. A holds a lock with a watchdog
// lease of 3 s; the link between the primary and its replica is cut
// (nothing delivered either way) for longer than the lease; the primary
// dies and the replica is promoted. Before the acknowledged lease, A's
// renewals went on succeeding on the old primary without any replica
// acknowledging them, and B's TryLock on the promoted replica succeeded
// while A's Done was still open (two holders for 1.4–2.6 s, until A's
// watchdog gave up on the dead primary). Now A's renewals extend nothing
// unless acknowledged, and A's hold ends when its acknowledged lease runs
// out, before B can hold.
const splitLease = 3 * time.Second

// splitCut is how long the replication link stays cut: longer than the
// lease, so that the replica's copy of A's lease has run out when it is
// promoted.
const splitCut = splitLease + 2*time.Second

// holdWatch records when a hold's Done closed.
type holdWatch struct {
	done   atomic.Int64 // unix nanos; 0: open
	closed chan struct{}
}

func watchDone(l *rlock.Lock) *holdWatch {
	w := &holdWatch{closed: make(chan struct{})}
	go func() {
		<-l.Done()
		w.done.Store(time.Now().UnixNano())
		close(w.closed)
	}()
	return w
}

func (w *holdWatch) at() time.Time {
	if n := w.done.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// tryUntilHeld runs B's TryLock(ctx, 0) on l every 5 ms until it holds
// (or 60 s pass) and returns when it held (the zero time if never);
// errors (a primary gone, a replica not promoted yet) are tried again.
func tryUntilHeld(l *rlock.Lock) time.Time {
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, err := l.TryLock(ctx, 0)
		cancel()
		if err == nil && ok {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}
}

// checkOneHolder fails unless A's Done (a) closed before B held (held),
// and logs the window: how long A's Done closed before B held, or how
// long two held the lock at once.
func checkOneHolder(t *testing.T, topology string, a *holdWatch, held time.Time, aErr error) {
	t.Helper()
	require.False(t, held.IsZero(), "%s: B never held the lock on the promoted replica", topology)
	time.Sleep(100 * time.Millisecond) // let a Done that closes now be recorded
	done := a.at()
	if done.IsZero() || done.After(held) {
		// Two holders: measure for how long (until A's Done closes).
		select {
		case <-a.closed:
		case <-time.After(4 * splitLease):
		}
		if done = a.at(); done.IsZero() {
			t.Logf("%s: two holders for more than %v: A's Done still open", topology, time.Since(held))
		} else {
			t.Logf("%s: two holders for %v: A's Done closed after B held", topology, done.Sub(held))
		}
		require.FailNow(t, "B holds while A's Done is open", "%s (A's error when B held: %v)", topology, aErr)
	}
	t.Logf("%s: one holder: A's Done closed %v before B held (A's error: %v)", topology, held.Sub(done), aErr)
	require.ErrorIs(t, aErr, redisync.ErrLockLost)
	require.ErrorIs(t, aErr, redisync.ErrNotReplicated, "A's hold ends for want of acknowledgement")
}

// A primary with one replica that replicates through a proxy; the proxy
// cuts the replication link. Once with the cut shorter than the primary's
// repl-timeout (the primary still counts the replica, WAIT times out),
// once longer (the primary drops the replica from its count: it is still
// waited for, pipeline.DefaultForget).
func TestSplitBrainReplicationCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		replTimeout int // the primary's repl-timeout, seconds
	}{
		{"cut shorter than repl-timeout", 60},
		{"cut longer than repl-timeout", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			primary, proxy, replica := replicatedThroughProxy(t, "--repl-timeout", strconv.Itoa(tc.replTimeout))

			ca := clienttest.New(t, primary.Client(t), redisync.WithWatchdogTimeout(splitLease))
			a := rlock.New(ca, "lock")
			require.NoError(t, a.Lock(ctx))
			aw := watchDone(a)
			proxy.Block() // nothing delivered either way until the test ends
			cut := time.Now()
			t.Cleanup(proxy.Unblock)
			if tc.replTimeout < 10 {
				redistest.Eventually(t, 20*time.Second, "the primary drops the replica from its count", func() error {
					if got := connectedReplicas(t, primary); got != 0 {
						return fmt.Errorf("%d replicas connected", got)
					}
					return nil
				})
				// The replica left the primary's count but can still be
				// promoted: an acquisition acknowledged by "every replica
				// online" (none) would be lost there, and let B in while
				// C holds. It is still waited for (pipeline.DefaultForget).
				err := rlock.New(ca, "other").Lock(ctx)
				require.ErrorIs(t, err, redisync.ErrNotReplicated,
					"an acquisition after the replica dropped out of the count, acknowledged by none")
			}
			time.Sleep(time.Until(cut.Add(splitCut)))
			primary.Stop(t) // SIGKILL
			replica.Do(t, "REPLICAOF", "NO", "ONE")
			cb := clienttest.New(t, replica.Client(t))
			held := tryUntilHeld(rlock.New(cb, "lock"))
			checkOneHolder(t, tc.name, aw, held, a.Err())
			assert.Positive(t, ca.Stats().HoldsLostUnreplicated)
			assert.Positive(t, ca.Stats().HoldsLost)
		})
	}
}

// The same on Sentinel: the master dies, the sentinel promotes the replica
// whose replication link was cut, and B takes the lock through the
// sentinel.
func TestSplitBrainSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	ca := clienttest.New(t, s.Client(t), redisync.WithWatchdogTimeout(splitLease))
	a := rlock.New(ca, "lock")
	require.NoError(t, a.Lock(ctx))
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, a.Lock(ctx)) // the replica count is known: acknowledged
	aw := watchDone(a)
	cutReplication(t, s.Master)
	cut := time.Now()
	time.Sleep(time.Until(cut.Add(splitCut)))
	cb := clienttest.New(t, s.Client(t))
	heldc := make(chan time.Time, 1)
	s.KillMaster(t, func() {
		go func() { heldc <- tryUntilHeld(rlock.New(cb, "lock")) }()
	})
	checkOneHolder(t, "sentinel", aw, <-heldc, a.Err())
	assert.Positive(t, ca.Stats().HoldsLostUnreplicated)
}

// The same on a Cluster, per master: the lock's master has a replica whose
// replication link is cut; the master dies and the replica takes over
// (CLUSTER FAILOVER TAKEOVER).
func TestSplitBrainCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1))
	rdb := func() *redis.ClusterClient {
		cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	ca := clienttest.New(t, rdb(), redisync.WithWatchdogTimeout(splitLease))
	a := rlock.New(ca, "lock")
	require.NoError(t, a.Lock(ctx))
	aw := watchDone(a)
	master := c.MasterOf(t, keys.Slot("lock"))
	replica := c.ReplicaOf(t, master)
	cutReplication(t, master)
	cut := time.Now()
	time.Sleep(time.Until(cut.Add(splitCut)))
	cb := clienttest.New(t, rdb())
	master.Stop(t)
	replica.Do(t, "CLUSTER", "FAILOVER", "TAKEOVER")
	held := tryUntilHeld(rlock.New(cb, "lock"))
	checkOneHolder(t, "cluster", aw, held, a.Err())
	assert.Positive(t, ca.Stats().HoldsLostUnreplicated)
}

// cutReplication drops, with nftables on the loopback interface, every
// packet of the replication connection of master's one replica, both ways, until
// the test ends: nothing is delivered either way, as in a partition
// between the two servers (their connections to clients, sentinels and
// the cluster bus are untouched).
func cutReplication(t *testing.T, master *redistest.Server) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		require.FailNow(t, "nft (Debian's nftables) is needed to cut a replication link", err)
	}
	var from string
	for line := range strings.Lines(fmt.Sprint(master.Do(t, "CLIENT", "LIST", "TYPE", "replica"))) {
		for _, f := range strings.Fields(line) {
			if addr, ok := strings.CutPrefix(f, "addr="); ok {
				from = addr
			}
		}
	}
	require.NotEmpty(t, from, "the replica's connection on the master")
	_, rport, _ := strings.Cut(from, ":")
	_, mport, _ := strings.Cut(master.Addr(), ":")
	table := fmt.Sprintf("redisync_split_%d_%s", os.Getpid(), rport)
	nft := func(args ...string) error {
		out, err := exec.Command("nft", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("nft %v: %w: %s", args, err, out)
		}
		return nil
	}
	require.NoError(t, nft("add", "table", "inet", table))
	t.Cleanup(func() { _ = nft("delete", "table", "inet", table) })
	require.NoError(t, nft("add", "chain", "inet", table, "out", "{ type filter hook output priority 0 ; }"))
	require.NoError(t, nft("add", "rule", "inet", table, "out", "oif", "lo", "tcp", "sport", rport, "tcp", "dport", mport, "drop"))
	require.NoError(t, nft("add", "rule", "inet", table, "out", "oif", "lo", "tcp", "sport", mport, "tcp", "dport", rport, "drop"))
}
