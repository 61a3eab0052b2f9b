package gocronlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/extra/gocronlock"
	"github.com/redisync/redisync/internal/redistest"
)

// node is one scheduler process: a redisync Client through a proxy (to
// stall it), a gocron scheduler.
type node struct {
	id    int
	c     *redisync.Client
	rdb   *redis.Client
	proxy *redistest.Proxy
	s     gocron.Scheduler
}

// Three schedulers run a 300 ms job every second for 10 ticks. At tick 3
// the scheduler running it is killed mid-job (its Client closed without
// unlocking, its scheduler stopped); at tick 6 the one running it is
// stalled mid-job for 1.5 s, longer than its 600 ms lease. Each tick runs
// exactly once.
func TestOncePerTickThroughKillAndStall(t *testing.T) {
	const (
		every = time.Second
		lease = 600 * time.Millisecond
		ticks = 10
	)
	srv := redistest.Shared(t)
	job := redistest.Key(t)
	start := time.Now().Truncate(every).Add(2 * every)

	var mu sync.Mutex
	runs := map[int][]int{} // tick → schedulers that ran it
	var killed, stalled = -1, -1
	nodes := make([]*node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		p := redistest.NewProxy(t, srv.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		c := redisync.New(rdb) // the Client's lease stays 30s; the jobs' is their own
		t.Cleanup(func() { _ = c.Close() })
		s, err := gocron.NewScheduler()
		require.NoError(t, err)
		n := &node{id: i, c: c, rdb: rdb, proxy: p, s: s}
		nodes[i] = n
		task := func() {
			tick := int((time.Since(start) + every/2) / every)
			mu.Lock()
			runs[tick] = append(runs[tick], n.id)
			kill := tick == 3 && killed < 0
			stall := tick == 6 && stalled < 0 && !kill
			if kill {
				killed = n.id
			}
			if stall {
				stalled = n.id
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			switch {
			case kill: // the process dies mid-job: no unlock, no renewal
				_ = n.c.Close()
				wg.Add(1)
				go func() { defer wg.Done(); _ = n.s.Shutdown() }()
			case stall: // the process stops mid-job, past its lease
				n.proxy.Block()
				time.Sleep(1500 * time.Millisecond)
				n.proxy.Unblock()
			}
			time.Sleep(200 * time.Millisecond)
		}
		_, err = s.NewJob(gocron.DurationJob(every), gocron.NewTask(task),
			gocron.WithName(job),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithDistributedJobLocker(gocronlock.NewLocker(c, gocronlock.WithLease(lease)).ForInterval(every)))
		require.NoError(t, err)
		s.Start()
	}
	time.Sleep(time.Until(start.Add(ticks*every - every/2)))
	for _, n := range nodes {
		_ = n.s.Shutdown()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("killed scheduler %d at tick 3, stalled scheduler %d at tick 6; runs per tick: %v", killed, stalled, runs)
	require.GreaterOrEqual(t, killed, 0)
	require.GreaterOrEqual(t, stalled, 0)
	for tick := range ticks {
		assert.Len(t, runs[tick], 1, "tick %d ran on %v", tick, runs[tick])
	}
	for tick := range runs {
		assert.Less(t, tick, ticks, fmt.Sprintf("a run after the last tick: %d", tick))
	}
}

// The Elector: one of three schedulers leads; when its Client is closed
// another takes over; Close resigns.
func TestElector(t *testing.T) {
	srv := redistest.Shared(t)
	name := redistest.Key(t)
	var els []*gocronlock.Elector
	var cs []*redisync.Client
	for i := range 3 {
		c := redisync.New(srv.Client(t))
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
		el := gocronlock.NewElector(c, name, fmt.Sprint(i), election.WithLease(time.Second))
		t.Cleanup(func() { _ = el.Close() })
		els = append(els, el)
	}
	leader := func() int {
		var who []int
		for i, el := range els {
			if el.IsLeader(context.Background()) == nil {
				who = append(who, i)
			}
		}
		if len(who) > 1 {
			t.Fatalf("several leaders: %v", who)
		}
		if len(who) == 0 {
			return -1
		}
		return who[0]
	}
	redistest.Eventually(t, 5*time.Second, "a leader", func() error {
		if leader() < 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	first := leader()
	require.NoError(t, els[first].Close())
	redistest.Eventually(t, 5*time.Second, "a new leader after Close", func() error {
		if l := leader(); l < 0 || l == first {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	second := leader()
	require.NotNil(t, els[second].Leadership())
	_ = cs[second].Close() // killed: the lease frees the lock
	assert.ErrorIs(t, els[second].IsLeader(context.Background()), gocronlock.ErrNotLeader)
	redistest.Eventually(t, 5*time.Second, "a third leader after a kill", func() error {
		if l := leader(); l < 0 || l == first || l == second {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
}

// A job's lock is named the Locker's lock prefix and the job's name, and
// the Client's key prefix goes before both: the two prefixes are not one.
func TestLockPrefixIsNotTheKeyPrefix(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	rdb := srv.Client(t)
	job := redistest.Key(t)
	c := redisync.New(rdb, redisync.WithKeyPrefix("app:"))
	t.Cleanup(func() { _ = c.Close() })
	l, err := gocronlock.NewLocker(c, gocronlock.WithLockPrefix("jobs:")).Lock(ctx, job)
	require.NoError(t, err)
	n, err := rdb.Exists(ctx, "app:jobs:"+job).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the lock's key is the key prefix, the lock prefix, then the job")
	require.NoError(t, l.Unlock(ctx))
}

// A scheduler killed during a job kept the job's lock for the Client's
// whole lease (30 s), and the ticks in between ran nowhere, with no error
// anywhere. ForInterval's lease is the interval, and a tick found held by
// a run of an earlier tick is counted and reported.
func TestForIntervalLeaseAndUnrunTicks(t *testing.T) {
	const every = time.Second
	srv := redistest.Shared(t)
	ctx := context.Background()
	job := redistest.Key(t)

	dead := redisync.New(srv.Client(t)) // the Client's lease stays 30 s
	l := gocronlock.NewLocker(dead).ForInterval(every)
	lk, err := l.Lock(ctx, job)
	require.NoError(t, err)
	require.NotNil(t, lk)
	ttl, err := srv.Client(t).PTTL(ctx, "gocron:"+job).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, every, "the job's lease is its interval, not the Client's 30 s")
	require.NoError(t, dead.Close()) // killed: no Unlock, no renewal

	var mu sync.Mutex
	var reported []string
	live := clientOf(t, srv)
	other := gocronlock.NewLocker(live, gocronlock.WithOnUnrun(func(job string, since time.Time) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, job)
	})).ForInterval(every)
	time.Sleep(every/2 + 100*time.Millisecond) // the next tick, past the minimum hold's splay
	_, err = other.Lock(ctx, job)
	if err == nil {
		t.Fatal("the dead scheduler's lock was free within its lease")
	}
	require.ErrorIs(t, err, gocronlock.ErrJobTaken)
	assert.EqualValues(t, 1, other.Unrun(), "the tick the dead scheduler's lock keeps is counted")
	mu.Lock()
	assert.Equal(t, []string{job}, reported)
	mu.Unlock()

	// Within about one interval of the kill the job runs again.
	redistest.Eventually(t, 2*every, "the job's lock free after the dead scheduler's lease", func() error {
		lk, err := other.Lock(ctx, job)
		if err != nil {
			return err
		}
		return lk.Unlock(ctx)
	})
}

func clientOf(t *testing.T, srv *redistest.Server) *redisync.Client {
	t.Helper()
	c := redisync.New(srv.Client(t))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A Lock whose reply comes past half the minimum hold (Redis busy: a
// replica acknowledging late, a long script) is no run: the lock is given
// back and the error says it came late (ErrLockLate, beside ErrJobTaken,
// so gocron skips the run), or the Lock gave up at its budget first.
// Either way it is told apart from another scheduler's run.
func TestLateLockIsNoRun(t *testing.T) {
	const every = 400 * time.Millisecond // minimum hold 200 ms: a budget of 100 ms
	srv := redistest.Start(t)
	ctx := context.Background()
	job := redistest.Key(t)
	l := gocronlock.NewLocker(clientOf(t, srv)).ForInterval(every)
	busy := make(chan error, 1)
	go func() {
		// Redis runs nothing else for 300 ms
		busy <- srv.Client(t).Eval(ctx, `local t = redis.call('time')
local from = t[1] * 1000000 + t[2]
repeat t = redis.call('time') until t[1] * 1000000 + t[2] - from > 300000
return 1`, nil).Err()
	}()
	time.Sleep(50 * time.Millisecond)
	lk, err := l.Lock(ctx, job)
	require.NoError(t, <-busy)
	require.Error(t, err, "a lock that came late is no run")
	require.Nil(t, lk)
	if errors.Is(err, gocronlock.ErrJobTaken) {
		require.ErrorIs(t, err, gocronlock.ErrLockLate, "late, not taken by another scheduler")
	} else {
		require.ErrorIs(t, err, context.DeadlineExceeded, "the Lock gave up at its budget")
	}
	t.Logf("Lock: %v", err)
}
