package integration

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// dropBatch is a go-redis hook that, once armed, makes the proxy lose the
// reply of the next pipeline carrying at least two scripts (a batch of
// the Client's script pipeline): the server runs the batch, the client
// sees its connection closed, and go-redis sends the batch again.
type dropBatch struct {
	proxy *redistest.Proxy
	armed atomic.Bool
	hit   atomic.Int64 // scripts in the batch whose reply was lost
}

func (*dropBatch) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*dropBatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dropBatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		scripts := 0
		for _, cmd := range cmds {
			if n := strings.ToLower(cmd.Name()); n == "evalsha" || n == "eval" {
				scripts++
			}
		}
		if scripts >= 2 && d.armed.CompareAndSwap(true, false) {
			d.hit.Store(int64(scripts))
			d.proxy.DropNextReply()
		}
		return next(ctx, cmds)
	}
}

// together runs f(i) in n goroutines started at once, and returns their
// errors.
func together(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = f(i)
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// The reply of a batch of the script pipeline is lost (the proxy closes
// the connection once the server ran it): go-redis sends the same batch
// again, and every caller's outcome is applied once, as each script's
// request record makes a second run of it a no-op (issue 32).
func TestPipelineLostBatchReplyAppliedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	drop := &dropBatch{proxy: proxy}
	rdb.AddHook(drop)
	c := clienttest.New(t, rdb)
	s := semaphore.New(c, "sem")
	require.NoError(t, s.Release(ctx, 1)) // scripts loaded, the replica count known
	require.NoError(t, s.Acquire(ctx, 1))
	proxy.SetLatency(2 * time.Millisecond) // calls meet in batches

	const n = 32
	for round := 0; drop.hit.Load() == 0; round++ {
		require.Less(t, round, 20, "no batch of two scripts or more in 20 rounds")
		drop.armed.Store(true)
		for i, err := range together(n, func(int) error { return s.Release(ctx, 1) }) {
			require.NoError(t, err, "release %d", i)
		}
		drop.armed.Store(false)
	}
	require.Equal(t, 1, proxy.Dropped(), "replies lost")
	n0, err := srv.Client(t).Get(ctx, "sem").Int()
	require.NoError(t, err)
	require.Zero(t, n0%n, "permits after the releases: each applied once (%d scripts in the batch whose reply was lost)", drop.hit.Load())

	drop.hit.Store(0)
	locks := make([]*rlock.Lock, n)
	for i := range locks {
		locks[i] = rlock.New(c, fmt.Sprintf("lock-%d", i))
	}
	for round := 0; drop.hit.Load() == 0; round++ {
		require.Less(t, round, 20, "no batch of two scripts or more in 20 rounds")
		require.NoError(t, s.Release(ctx, n)) // as many as are acquired below
		drop.armed.Store(true)
		// The locks first, all at once: a semaphore's callers in one Client
		// take turns, and a few calls at once go side by side (the
		// pipeline's small batches in flight), not in one batch.
		errs := together(n, func(i int) error {
			if err := locks[i].Lock(ctx); err != nil {
				return err
			}
			if err := s.Acquire(ctx, 1); err != nil {
				return err
			}
			return locks[i].Unlock(ctx)
		})
		drop.armed.Store(false)
		for i, err := range errs {
			require.NoError(t, err, "caller %d", i)
		}
	}
	require.Equal(t, 2, proxy.Dropped(), "replies lost")
	got, err := srv.Client(t).Get(ctx, "sem").Int()
	require.NoError(t, err)
	assert.Equal(t, n0, got, "permits after the acquisitions: each applied once (%d scripts in the batch whose reply was lost)", drop.hit.Load())
	for i := range locks {
		held, err := locks[i].IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, held, "lock %d after its unlock", i)
	}
}

// A caller whose context ends while its call waits in the queue behind a
// batch in flight returns at once, before that batch's reply; its
// acquisition is undone after (issue 32).
func TestPipelineCancelledCallReturnsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t), redisync.WithReplicaSync(1, 3*time.Second))
	s := semaphore.New(c, "sem")
	require.NoError(t, s.Release(ctx, 2)) // the replica count known
	replicas[0].Pause(t)
	defer replicas[0].Resume(t)

	slow := make(chan error, 1)
	go func() { slow <- s.Acquire(ctx, 1) }() // a batch blocked in WAIT for 3 s
	redistest.Eventually(t, 5*time.Second, "the first acquisition's WAIT blocked", func() error {
		if info := fmt.Sprint(primary.Do(t, "INFO", "clients")); !strings.Contains(info, "blocked_clients:1") {
			return errors.New("no blocked client")
		}
		return nil
	})
	l := rlock.New(c, "lock")
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Lock(short), context.DeadlineExceeded)
	select {
	case err := <-slow:
		t.Fatalf("the batch in flight ended before the cancelled call returned: %v", err)
	default:
	}
	require.ErrorIs(t, <-slow, redisync.ErrNotReplicated)
	replicas[0].Resume(t)
	redistest.Eventually(t, 10*time.Second, "the cancelled acquisition undone", func() error {
		if held, err := l.IsLocked(ctx); err != nil || held {
			return fmt.Errorf("locked %v, %v", held, err)
		}
		return nil
	})
}

// Concurrent calls of one Client go together in batches, and with a
// replica one WAIT ends each batch: fewer WAITs than acquisitions and
// releases, each acknowledged (issue 32).
func TestPipelineGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	c := clienttest.New(t, primary.Client(t))
	s := semaphore.New(c, "sem")
	require.NoError(t, s.Release(ctx, 1)) // the replica count known
	before := waitCalls(t, primary)
	const n = 64
	for i, err := range together(n, func(i int) error {
		l := rlock.New(c, fmt.Sprintf("lock-%d", i))
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	}) {
		require.NoError(t, err, "caller %d", i)
	}
	waits := waitCalls(t, primary) - before
	st := (*core.Client)(c).Pipeline().Stats()
	t.Logf("%d WAITs for %d acquisitions and releases; %d calls in %d batches", waits, 2*n, st.Calls, st.Batches)
	assert.Positive(t, waits)
	assert.Less(t, waits, 2*n, "WAITs: one a batch")
	assert.Greater(t, st.Calls, st.Batches, "calls per batch")
	require.NoError(t, s.Acquire(ctx, 1))
	assert.Equal(t, "0", fmt.Sprint(replicas[0].Do(t, "GET", "sem")), "what the primary acknowledged, the replica has")
}

// handoffWaits is a go-redis hook that counts the pipelines that carry
// lock_handoff.lua and end with WAIT: handoffs that wait for the replicas.
// handoffWaits is a go-redis hook that counts the pipelines that run the
// lock's handoff script (handoffs) and those of them that end with WAIT
// (n).
type handoffWaits struct{ n, handoffs atomic.Int64 }

func (*handoffWaits) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*handoffWaits) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *handoffWaits) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		handoff, wait := false, false
		for _, cmd := range cmds {
			args := cmd.Args()
			switch strings.ToLower(cmd.Name()) {
			case "evalsha":
				handoff = handoff || fmt.Sprint(args[1]) == lua.LockHandoff.Hash()
			case "eval":
				handoff = handoff || fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprint(args[1])))) == lua.LockHandoff.Hash()
			case "wait":
				wait = true
			}
		}
		if handoff {
			h.handoffs.Add(1)
		}
		if handoff && wait {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// With a replica, an in-process handoff and a latch's count-down wait for
// it as acquisitions and releases do; a count-down not acknowledged says
// that it took effect (issue 32).
func TestHandoffAndCountDownAcknowledged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, replicas := replicated(t, 1)
	rdb := primary.Client(t)
	waits := &handoffWaits{}
	rdb.AddHook(waits)
	c := clienttest.New(t, rdb)
	// As rlock's TestUnlockHandsOverInProcess: a and b wait behind
	// another client, so that b waits already when a's hold begins a chain
	// of handoffs.
	a, b := rlock.New(c, "lock"), rlock.New(c, "lock")
	lineLen := func() int { return (*core.Client)(c).Lines().Len(core.LockLine("rlock", "lock")) }
	other := rlock.New(clienttest.New(t, primary.Client(t)), "lock")
	// On a loaded machine b may not be ready at the very moment a
	// releases (it re-checks on its own), and a releases without a
	// handoff: the round is run again, up to 5 times.
	for round := 0; round < 5 && waits.handoffs.Load() == 0; round++ {
		require.NoError(t, other.Lock(ctx))
		gotA := make(chan error, 1)
		go func() { gotA <- a.Lock(ctx) }()
		require.Eventually(t, func() bool { return lineLen() == 1 }, 5*time.Second, time.Millisecond)
		gotB := make(chan error, 1)
		go func() { gotB <- b.Lock(ctx) }()
		require.Eventually(t, func() bool { return lineLen() == 2 }, 5*time.Second, time.Millisecond)
		require.NoError(t, other.Unlock(ctx))
		require.NoError(t, <-gotA)
		require.Eventually(t, func() bool {
			return (*core.Client)(c).Lines().HeadAccepts(core.LockLine("rlock", "lock"))
		}, 5*time.Second, time.Millisecond, "b ready for a handoff")
		require.NoError(t, a.Unlock(ctx))
		require.NoError(t, <-gotB)
		require.NoError(t, b.Unlock(ctx))
	}
	assert.Positive(t, waits.n.Load(), "handoff pipelines that waited for the replica (EVALSHA, then EVAL: the script was not loaded)")
	assert.Equal(t, waits.handoffs.Load(), waits.n.Load(), "every handoff pipeline waited for the replica")

	latch := countdown.New(c, "latch")
	ok, err := latch.TrySetCount(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok)
	before := waitCalls(t, primary)
	require.NoError(t, latch.CountDown(ctx))
	assert.Positive(t, waitCalls(t, primary)-before, "WAITs of a count-down")
	replicas[0].Pause(t)
	defer replicas[0].Resume(t)
	err = latch.CountDown(ctx)
	require.ErrorIs(t, err, redisync.ErrNotReplicated)
	assert.Contains(t, err.Error(), "took effect: do not count down again")
	assert.Equal(t, "1", fmt.Sprint(primary.Do(t, "GET", "latch")), "the count on the primary")
}

// movedCalls is a go-redis hook that counts the pipelines in which some
// script calls were redirected (MOVED, ASK) and others ran.
type movedCalls struct{ mixed, moved atomic.Int64 }

func (*movedCalls) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*movedCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (m *movedCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		moved, ran := 0, 0
		for _, cmd := range cmds {
			if n := strings.ToLower(cmd.Name()); n != "evalsha" && n != "eval" {
				continue
			}
			switch e := cmd.Err(); {
			case e != nil && (redis.HasErrorPrefix(e, "MOVED") || redis.HasErrorPrefix(e, "ASK")):
				moved++
			case e == nil:
				ran++
			}
		}
		m.moved.Add(int64(moved))
		if moved > 0 && ran > 0 {
			m.mixed.Add(1)
		}
		return err
	}
}

// On a Cluster, the calls of a batch to one master whose slot moves away
// meanwhile are redirected, each alone, while the others of the batch
// stand: every lock and unlock succeeds across a slot migration (issue
// 32).
func TestPipelineClusterMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	hook := &movedCalls{}
	// The script pipeline sends its batches on the nodes' clients, whose
	// hooks are their own.
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(hook) })
	c := clienttest.New(t, rdb)
	// Two hash tags served by one master, in two slots: one moves.
	var moving, staying string
	for i := 0; moving == "" || staying == ""; i++ {
		tag := fmt.Sprintf("t%d", i)
		if moving == "" {
			moving = tag
			continue
		}
		if cl.MasterOf(t, keys.Slot("{"+tag+"}")) == cl.MasterOf(t, keys.Slot("{"+moving+"}")) &&
			keys.Slot("{"+tag+"}") != keys.Slot("{"+moving+"}") {
			staying = tag
		}
	}
	const n = 16
	stop := make(chan struct{})
	errc := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		tag := moving
		if i%2 == 1 {
			tag = staying
		}
		l := rlock.New(c, fmt.Sprintf("{%s}:%d", tag, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					errc <- err
					return
				}
				if err := l.Unlock(ctx); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	slot := keys.Slot("{" + moving + "}")
	from := cl.MasterOf(t, slot)
	to := cl.Servers[(slices.Index(cl.Servers, from)+1)%len(cl.Servers)]
	cl.MigrateSlot(t, slot, to)
	redistest.Eventually(t, 10*time.Second, "a redirected call", func() error {
		if hook.moved.Load() == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("lock or unlock across the migration: %v", err)
	}
	t.Logf("%d calls redirected, %d batches with calls redirected and calls run", hook.moved.Load(), hook.mixed.Load())
}
