package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func newPipeline(t *testing.T, rdb redis.UniversalClient) *Pipeline {
	g := bg.New()
	t.Cleanup(func() { g.Close(); g.Wait() })
	return New(rdb, DefaultSettings, g, slog.New(slog.DiscardHandler))
}

// A batch in which one script is loaded and another is not: only the call
// answered NOSCRIPT is sent again (with its source), alone, and each call
// gets its own reply.
func TestNoScriptResendsOnlyThoseCalls(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	r := newPipeline(t, rdb)
	loaded := lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"})
	require.NoError(t, loaded.Run(ctx, rdb).Err()) // EVAL: loaded now
	var tr redistest.Recorder
	rdb.AddHook(&tr)
	other := lua.NewCommand(lua.SemaphorePermitState, []string{"sem", "{sem}:timeout", "redisson_sc:{sem}"}, []any{"publish"})
	calls := []*call{newCall(ctx, loaded, true), newCall(ctx, other, true)}
	r.send(ctx, r.primaries.get(""), rdb, calls)
	for i, c := range calls {
		require.NoError(t, c.reply.Err(), "call %d", i)
		assert.NoError(t, c.ackErr, "call %d: no replica to wait for", i)
	}
	assert.Equal(t, [][]string{{"info"}, {"evalsha", "evalsha"}, {"eval"}}, tr.Trips(),
		"round trips: the count read once, before the first batch that waits for replicas (readFirst), the batch, then the call that lacked its script alone")
}

// The bounds of a batch: at most maxBatch calls, and a call that would
// take it past maxBatchBytes waits for the next one (a call larger than
// that goes alone).
func TestTakeBounds(t *testing.T) {
	ctx := context.Background()
	small := lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"})
	big := lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{strings.Repeat("x", maxBatchBytes), "p"})
	var q queue
	for range maxBatch + 1 {
		q.pending = append(q.pending, newCall(ctx, small, false))
	}
	assert.Len(t, q.take(nil), maxBatch)
	assert.Len(t, q.pending, 1)
	q.pending = append(q.pending, newCall(ctx, big, false), newCall(ctx, small, false))
	assert.Len(t, q.take(nil), 1, "the small call, then the big one apart")
	assert.Len(t, q.take(nil), 1, "the big call alone")
	assert.Len(t, q.take(nil), 1)
	assert.Empty(t, q.pending)
}

// A caller whose context ends while its call waits behind a batch in
// flight returns at once with the context's error; the batch and its own
// call go on, and the calls are given back to the pool (no goroutine
// left: redistest.Main checks).
func TestCancelledCallReturnsAtOnce(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	r := newPipeline(t, rdb)
	p := r.primaries.get("")
	block := lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"})
	require.NoError(t, block.Run(ctx, rdb).Err())
	srv.Pause(t) // the first calls' batches stay in flight
	// As many batches in flight as may be (maxInFlight, each of one call
	// sent beside the others): the next call waits in the queue. (A call
	// sent beside them goes on its caller's goroutine, as a direct call
	// does, and its context bounds it as go-redis's options say.)
	first := make(chan *redis.Cmd, maxInFlight)
	for range maxInFlight {
		go func() {
			reply, _ := r.pipelined(ctx, p, rdb, newCall(ctx, block, false))
			first <- reply
		}()
	}
	require.Eventually(t, func() bool {
		p.queue.mu.Lock()
		defer p.queue.mu.Unlock()
		return p.queue.inFlight == maxInFlight
	}, 5*time.Second, time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	reply, _ := r.pipelined(short, p, rdb, newCall(short, block, false))
	require.ErrorIs(t, reply.Err(), context.DeadlineExceeded)
	select {
	case <-first:
		t.Fatal("the batch in flight ended first")
	default:
	}
	srv.Resume(t)
	for range maxInFlight {
		require.NoError(t, (<-first).Err())
	}
	require.Eventually(t, func() bool {
		p.queue.mu.Lock()
		defer p.queue.mu.Unlock()
		return p.queue.inFlight == 0 && len(p.queue.pending) == 0
	}, 5*time.Second, time.Millisecond, "the queue drained")
}

// A replica cut off from its primary for longer than the primary's
// repl-timeout drops out of the primary's count but could still be
// promoted: a write is not acknowledged for want of it until it has been
// gone for Forget; then the count drops to the replicas online (issue 38).
func TestReplicaGoneStillWaitedFor(t *testing.T) {
	ctx := context.Background()
	primary := redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0", "--repl-timeout", "2"))
	proxy := redistest.NewProxy(t, primary.Addr())
	replica := redistest.Start(t, redistest.WithArgs("--repl-timeout", "2"))
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	replica.Do(t, "REPLICAOF", host, port)
	online := func() int {
		return strings.Count(fmt.Sprint(primary.Do(t, "INFO", "replication")), "state=online")
	}
	redistest.Eventually(t, 20*time.Second, "replica online", func() error {
		if n := online(); n != 1 {
			return fmt.Errorf("%d replicas online", n)
		}
		return nil
	})
	rdb := primary.Client(t)
	g := bg.New()
	t.Cleanup(func() { g.Close(); g.Wait() })
	const forget = 4 * time.Second
	r := New(rdb, Settings{Replicas: All, Timeout: 200 * time.Millisecond, Forget: forget}, g, slog.New(slog.DiscardHandler))
	write := func() error {
		s := r.NewSync()
		if err := r.EvalCommand(ctx, s, lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"})).Err(); err != nil {
			// A primary without a replica it is counted with: its
			// reply is not believed either.
			require.ErrorIs(t, err, errs.ErrNotReplicated)
			return err
		}
		return s.SyncErr()
	}
	require.NoError(t, write(), "acknowledged while the replica is connected")

	proxy.Block()
	defer proxy.Unblock()
	redistest.Eventually(t, 20*time.Second, "the primary drops the replica", func() error {
		if n := online(); n != 0 {
			return fmt.Errorf("%d replicas online", n)
		}
		return nil
	})
	dropped := time.Now()
	for time.Since(dropped) < forget/2 {
		require.ErrorIs(t, write(), errs.ErrNotReplicated, "a write acknowledged without the replica that dropped out")
	}
	redistest.Eventually(t, 3*forget, "the count drops once the replica has been gone for Forget", func() error {
		return write()
	})
}

// primaryAndReplica starts a primary and a replica of it, online.
func primaryAndReplica(t *testing.T) (primary, replica *redistest.Server) {
	primary = redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	replica = redistest.Start(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica.Do(t, "REPLICAOF", host, port)
	redistest.Eventually(t, 20*time.Second, "replica online", func() error {
		if n := strings.Count(fmt.Sprint(primary.Do(t, "INFO", "replication")), "state=online"); n != 1 {
			return fmt.Errorf("%d replicas online", n)
		}
		return nil
	})
	return primary, replica
}

// A client that reaches two primaries at once (a Sentinel client whose
// connections straddle a failover: the old primary, back from a
// partition, still takes writes until the sentinels demote it) holds each
// to its own replicas: a write that lands on the old primary, which has
// lost its replica to the promotion, is not acknowledged, although the
// client's last count (of the promoted replica, which has none) asked for
// no acknowledgement at all. Without the check such a write was believed
// safe, and a lock taken so was held twice (issue 38's split brain).
func TestWriteOnTheOtherPrimaryJudgedByItsReplicas(t *testing.T) {
	ctx := context.Background()
	old, promoted := primaryAndReplica(t)
	oldRDB, promotedRDB := old.Client(t), promoted.Client(t)
	g := bg.New()
	t.Cleanup(func() { g.Close(); g.Wait() })
	r := New(oldRDB, Settings{Replicas: All, Timeout: 200 * time.Millisecond}, g, slog.New(slog.DiscardHandler))
	p := r.primaries.get("") // the one primary of a Sentinel client, whichever server it reaches
	write := func(node *redis.Client) error {
		reply, ackErr := r.pipelined(ctx, p, node, newCall(ctx, lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"}), true))
		if ackErr != nil {
			// The other primary's reply is not believed either: the
			// call fails as one whose reply was lost.
			require.ErrorIs(t, reply.Err(), errs.ErrNotReplicated)
		} else {
			require.NoError(t, reply.Err())
		}
		return ackErr
	}
	require.NoError(t, write(oldRDB), "acknowledged by the old primary's replica")

	promoted.Do(t, "REPLICAOF", "NO", "ONE") // the failover: the old primary keeps running, without replica
	redistest.Eventually(t, 5*time.Second, "the promoted replica has no replica: nothing to wait for", func() error {
		return write(promotedRDB)
	})
	err := write(oldRDB)
	require.ErrorIs(t, err, errs.ErrNotReplicated, "a write on the old primary, whose replica is gone")
	assert.Contains(t, err.Error(), "old primary")
	require.NoError(t, write(promotedRDB), "the promoted one again")
	require.ErrorIs(t, write(oldRDB), errs.ErrNotReplicated, "the old one again: its own count (the replica it had)")

	// A call that waits for no replica (an undo, a cleanup) is not
	// believed from the old primary either: its reply fails.
	direct := func(node *redis.Client) error {
		reply, ackErr := r.pipelined(ctx, p, node, newCall(ctx, lua.NewCommand(lua.RWReadCount, []string{"rw"}, []any{"f", "p"}), false))
		require.NoError(t, ackErr)
		return reply.Err()
	}
	require.ErrorIs(t, direct(oldRDB), errs.ErrNotReplicated, "a direct call on the old primary")
	require.NoError(t, direct(promotedRDB), "a direct call on the promoted one")
}

// A copy of a request that replays its record (a go-redis re-send, on a
// new connection) is acknowledged only once the first run's writes are.
// WAIT waits for the offset of the connection's last write, so a copy
// that writes nothing on a fresh connection (offset 0) could be
// acknowledged by a replica that has not the first run: redis-cli showed
// WAIT on a fresh connection answering 1 with a stopped replica that had
// acknowledged nothing. The scripts now write their record again when
// they replay it. (Here Redis 7.0 did not acknowledge the copy without
// the rewrite either; the test holds the behaviour, whichever way.)
func TestReplayAcknowledgedOnlyWithTheFirstRun(t *testing.T) {
	ctx := context.Background()
	primary, replica := primaryAndReplica(t)
	primary.Do(t, "SET", "latch", "3")
	redistest.Eventually(t, 10*time.Second, "the replica has acknowledged the primary's offset", func() error {
		info := fmt.Sprint(primary.Do(t, "INFO", "replication"))
		_, off, _ := strings.Cut(info, "master_repl_offset:")
		off, _, _ = strings.Cut(off, "\r")
		if !strings.Contains(info, ",offset="+off+",") {
			return fmt.Errorf("not yet: %q", info)
		}
		return nil
	})
	g := bg.New()
	t.Cleanup(func() { g.Close(); g.Wait() })
	r := New(primary.Client(t), Settings{Replicas: All, Timeout: 200 * time.Millisecond}, g, slog.New(slog.DiscardHandler))
	p := r.primaries.get("")
	deadline := time.Now().Add(time.Minute).UnixMilli()
	down := func() (*redis.Cmd, error) {
		cmd := lua.NewCommand(lua.LatchCountDown, []string{"latch", "request"}, []any{deadline, "0", ""})
		return r.pipelined(ctx, p, primary.Client(t), newCall(ctx, cmd, true)) // a new connection each time
	}
	replica.Pause(t) // listed online by the primary, acknowledging nothing
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			replica.Resume(t)
		}
	})
	_, ackErr := down()
	require.ErrorIs(t, ackErr, errs.ErrNotReplicated, "the first run, with the replica stopped")
	_, ackErr = down()
	require.ErrorIs(t, ackErr, errs.ErrNotReplicated, "its copy on another connection, the replica still stopped")
	replica.Resume(t)
	resumed = true
	redistest.Eventually(t, 10*time.Second, "the copy acknowledged once the replica has the first run", func() error {
		reply, ackErr := down()
		if ackErr != nil {
			return ackErr
		}
		if n, err := reply.Int64(); err != nil || n != 2 {
			return fmt.Errorf("reply %d, %v: want the first run's 2", n, err)
		}
		return nil
	})
	assert.Equal(t, "2", fmt.Sprint(replica.Do(t, "GET", "latch")), "counted down once")
}
