package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// failReads is a go-redis hook that fails every read of a primary's
// replicas (INFO, ROLE) with a network error, as a connection that broke
// during the read would, and lets every other command through.
type failReads struct{}

func (failReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (failReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isRead(cmd) {
			cmd.SetErr(&net.OpError{Op: "read", Net: "tcp", Err: fmt.Errorf("connection reset (failReads)")})
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (failReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if isRead(cmd) {
				cmd.SetErr(&net.OpError{Op: "read", Net: "tcp", Err: fmt.Errorf("connection reset (failReads)")})
			}
		}
		return err
	}
}

// readsAlone returns the round trips that only read replicas.
func readsAlone(sent *redistest.Recorder) [][]string {
	var alone [][]string
	for _, names := range sent.Trips() {
		reads := 0
		for _, n := range names {
			if n == "info" || n == "role" {
				reads++
			}
		}
		if reads == len(names) {
			alone = append(alone, names)
		}
	}
	return alone
}

func isRead(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	return name == "info" || name == "role"
}

// Regression: the first acquisition on a primary read INFO replication
// first, in a round trip of its own, and a network error on that read
// failed the acquisition (which the engine then treated as a script that
// may have run). A failed read fails nothing now. The count is read alone
// once for the client's life (ROLE, before its first batch that waits for
// replicas: a batch can only wait for a count it knows when it is sent),
// never again.
func TestReplicaCountReadFailsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	single := redistest.Start(t)
	rdb := single.Client(t)
	var sent redistest.Recorder
	rdb.AddHook(&sent)
	c := clienttest.New(t, rdb)
	l := rlock.New(c, "lock")
	for range 5 {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
	assert.LessOrEqual(t, len(readsAlone(&sent)), 1, "round trips that only read the replica count: %v", readsAlone(&sent))

	failing := single.Client(t)
	failing.AddHook(failReads{})
	cf := clienttest.New(t, failing)
	l2 := rlock.New(cf, "lock2")
	require.NoError(t, l2.Lock(ctx), "lock while the count cannot be read")
	require.NoError(t, l2.Unlock(ctx))
	require.NoError(t, semaphore.New(cf, "sem").Release(ctx, 1))
	require.NoError(t, semaphore.New(cf, "sem").Acquire(ctx, 1), "semaphore while the count cannot be read")
}

// Regression (issue 33, item 3): after a failover, the replica count of
// the former primary (1) was still waited for on the new one (none
// connected), and every acquisition and release failed with
// ErrNotReplicated until the count was read again. The count now follows
// the primary the script ran on.
func TestReplicaCountFollowsFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	c := clienttest.New(t, s.Client(t))
	l := rlock.New(c, "lock")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx)) // the count (1) is known
	s.KillMaster(t, nil)
	s.Replicas[0].Stop(t) // the new primary's only replica: none left
	redistest.Eventually(t, 20*time.Second, "the new primary without replicas", func() error {
		if n := connectedReplicas(t, s.Master); n != 0 {
			return fmt.Errorf("%d replicas connected", n)
		}
		return nil
	})
	for i := range 3 {
		// The first call may meet the connection the failover broke
		// (go-redis re-sends it); none may fail for want of a replica.
		require.NoError(t, l.Lock(ctx), "lock %d after the failover", i)
		require.NoError(t, l.Unlock(ctx), "unlock %d after the failover", i)
	}
}

// Regression (issue 33, item 3): with the replica stopped, a semaphore's
// first Acquire returned ErrNotReplicated after two timeouts (the script
// not loaded yet: a WAIT with the refused EVALSHA, another with the EVAL),
// and a lock late by up to the server's timer period (1000/hz ms: WAIT's
// timeout is noticed only when the server wakes up). One bound now: a
// call's acknowledgement is bounded from its start, and the server is
// woken at the timeout. The server runs with hz 1 (a wake-up a second) so
// that the lateness shows; the margin is generous for a loaded machine.
func TestReplicaSyncOneBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0", "--hz", "1"))
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica := redistest.Start(t)
	replica.Do(t, "REPLICAOF", host, port)
	redistest.Eventually(t, 20*time.Second, "replica connected", func() error {
		if got := connectedReplicas(t, primary); got != 1 {
			return fmt.Errorf("%d replicas connected", got)
		}
		return nil
	})
	const timeout = 300 * time.Millisecond
	const bound = timeout + 500*time.Millisecond
	c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(redisync.ReplicasAll, timeout))
	s := semaphore.New(c, "sem")
	require.NoError(t, s.Release(ctx, 3)) // the count (1) is known; the acquisition's script is not loaded
	l := rlock.New(c, "lock")
	replica.Pause(t)
	defer replica.Resume(t)

	start := time.Now()
	require.ErrorIs(t, s.Acquire(ctx, 1), redisync.ErrNotReplicated)
	assert.Less(t, time.Since(start), bound, "semaphore acquisition, its script not loaded")
	for i := range 3 {
		start := time.Now()
		require.ErrorIs(t, l.Lock(ctx), redisync.ErrNotReplicated)
		assert.Less(t, time.Since(start), bound, "lock %d", i)
	}
	assert.Equal(t, "3", fmt.Sprint(primary.Do(t, "GET", "sem")), "the semaphore's permits on the primary")

	// A release not acknowledged says that it took effect (issue 33), and
	// is re-sent until acknowledged (issue 38): once, the ledger says.
	err := s.Release(ctx, 1)
	require.ErrorIs(t, err, redisync.ErrNotReplicated)
	assert.Contains(t, err.Error(), "released on the primary but not acknowledged by its replicas in time")
	replica.Resume(t)
	time.Sleep(2 * time.Second) // the completion's re-sends, acknowledged now
	assert.Equal(t, "4", fmt.Sprint(primary.Do(t, "GET", "sem")), "released once")
	assert.Zero(t, c.Stats().ReleasesFailed)
}
