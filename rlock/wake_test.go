package rlock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
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

// The lock's queue of waiting Clients (docs/wake.md): a release wakes the
// first live Client of the queue, on its own channel, not every waiting
// process. Each Client here stands for a process: its own connections.

// queued returns the ids of the Clients in the lock's queue, first first.
func queued(t *testing.T, rdb *redis.Client, name string) []string {
	t.Helper()
	return clienttest.Queued(t, rdb, keys.LockWaiters(name))
}

// waitClientsQueued waits until the lock's queue holds n Clients.
func waitClientsQueued(t *testing.T, rdb *redis.Client, name string, n int) {
	t.Helper()
	clienttest.WaitQueued(t, rdb, keys.LockWaiters(name), n)
}

// lockAsync locks l on ctx in a goroutine; the channel gets its result.
func lockAsync(ctx context.Context, l *rlock.Lock) <-chan error {
	return clienttest.Async(func() error { return l.Lock(ctx) })
}

// Clients are woken in the order they joined, one per release, and once
// the holder is one the queue recorded nobody listens on the lock's
// channel: a release publishes there only for a listener.
func TestReleaseWakesTheFirstClientQueued(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(ctx))

	var locks []*rlock.Lock
	var got []<-chan error
	for i := range 4 {
		l := rlock.New(clienttest.New(t, s.Client(t)), name)
		locks = append(locks, l)
		got = append(got, lockAsync(ctx, l))
		waitClientsQueued(t, rdb, name, i+1)
	}
	require.NoError(t, holder.Unlock(ctx))
	for i, l := range locks {
		select {
		case err := <-got[i]:
			require.NoError(t, err, "waiter %d", i)
		case <-time.After(3 * time.Second):
			st, _ := rdb.HGetAll(ctx, keys.LockWaitState(name)).Result()
			held, _ := rdb.HGetAll(ctx, name).Result()
			subs, _ := rdb.PubSubChannels(ctx, "*").Result()
			t.Fatalf("waiter %d not woken in its turn: queue %v, state %v, lock %v, channels %v", i, queued(t, rdb, name), st, held, subs)
		}
		for j := i + 1; j < len(locks); j++ {
			select {
			case err := <-got[j]:
				t.Fatalf("waiter %d took the lock (%v) before waiter %d released it", j, err, i)
			default:
			}
		}
		if i > 0 {
			// the holders since the first were taken while clients
			// queued: recorded, so nobody listens on the lock's channel
			n, err := rdb.PubSubNumSub(ctx, keys.LockChannel(name)).Result()
			require.NoError(t, err)
			assert.Zero(t, n[keys.LockChannel(name)], "listeners on the lock's channel behind a recorded holder")
		}
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Empty(t, queued(t, rdb, name), "nobody left in the queue")
}

// A Client whose last wait ends without the lock (cancelled, timed out)
// leaves the queue, and a wake-up it was given passes on: the next Client
// gets the lock at once, not at its next re-check.
func TestLeavingTheQueuePassesTheWakeOn(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()

	t.Run("cancelled", func(t *testing.T) {
		name := redistest.Key(t)
		holder := rlock.New(clienttest.New(t, s.Client(t)), name)
		require.NoError(t, holder.Lock(ctx))
		cctx, cancel := context.WithCancel(ctx)
		first := lockAsync(cctx, rlock.New(clienttest.New(t, s.Client(t)), name))
		waitClientsQueued(t, rdb, name, 1)
		second := rlock.New(clienttest.New(t, s.Client(t)), name)
		got := lockAsync(ctx, second)
		waitClientsQueued(t, rdb, name, 2)
		cancel()
		require.ErrorIs(t, <-first, context.Canceled)
		waitClientsQueued(t, rdb, name, 1)
		start := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-got)
		assert.Less(t, time.Since(start), time.Second, "woken by the release, not a re-check")
		require.NoError(t, second.Unlock(ctx))
	})

	t.Run("timed out", func(t *testing.T) {
		name := redistest.Key(t)
		holder := rlock.New(clienttest.New(t, s.Client(t)), name)
		require.NoError(t, holder.Lock(ctx))
		ok, err := rlock.New(clienttest.New(t, s.Client(t)), name).TryLock(ctx, 100*time.Millisecond)
		require.NoError(t, err)
		require.False(t, ok)
		waitClientsQueued(t, rdb, name, 0)
		require.NoError(t, holder.Unlock(ctx))
	})

	t.Run("woken while leaving", func(t *testing.T) {
		// the first Client is woken by a release and gives up at that
		// moment: the lock is free, and the next Client must not wait for
		// its re-check
		name := redistest.Key(t)
		holder := rlock.New(clienttest.New(t, s.Client(t)), name)
		require.NoError(t, holder.Lock(ctx))
		fc := clienttest.New(t, s.Client(t))
		cctx, cancel := context.WithCancel(ctx)
		first := lockAsync(cctx, rlock.New(fc, name))
		waitClientsQueued(t, rdb, name, 1)
		second := rlock.New(clienttest.New(t, s.Client(t)), name)
		got := lockAsync(ctx, second)
		waitClientsQueued(t, rdb, name, 2)
		start := time.Now()
		cancel()
		require.NoError(t, holder.Unlock(ctx))
		if err := <-first; err == nil {
			// it got the lock before it saw the cancellation
			require.NoError(t, rlock.New(fc, name).Unlock(ctx))
		}
		require.NoError(t, <-got)
		assert.Less(t, time.Since(start), 2*time.Second, "the wake-up passed on")
		require.NoError(t, second.Unlock(ctx))
	})
}

// A queued Client whose process is gone (its connections closed, as a
// process killed by SIGKILL leaves them; or its Client closed) does not
// stall the lock: the release finds it no longer listening and wakes the
// next one at once.
func TestDeadClientInTheQueueIsPassedOver(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()

	for _, how := range []string{"connections closed", "client closed"} {
		t.Run(how, func(t *testing.T) {
			name := redistest.Key(t)
			holder := rlock.New(clienttest.New(t, s.Client(t)), name)
			require.NoError(t, holder.Lock(ctx))
			deadRdb := s.Client(t)
			dead := redisync.New(deadRdb)
			deadGot := lockAsync(ctx, rlock.New(dead, name))
			waitClientsQueued(t, rdb, name, 1)
			next := rlock.New(clienttest.New(t, s.Client(t)), name)
			got := lockAsync(ctx, next)
			waitClientsQueued(t, rdb, name, 2)
			if how == "client closed" {
				require.NoError(t, dead.Close())
			} else {
				// The process's connections go, as a SIGKILL takes them:
				// its Client can send nothing any more.
				require.NoError(t, deadRdb.Close())
			}
			require.Error(t, <-deadGot)
			start := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			require.NoError(t, <-got)
			delay := time.Since(start)
			t.Logf("lock taken %v after the release, a dead client queued first", delay)
			assert.Less(t, delay, time.Second, "the dead client was passed over, not waited for")
			require.NoError(t, next.Unlock(ctx))
			_ = dead.Close()
		})
	}
}

// Callers of one Client keep their order behind other Clients: the Client
// stays queued while its own callers wait (a release that hands the lock
// on to none of them puts it back in the queue), and every caller gets the
// lock.
func TestQueueWithCallersInLine(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := redistest.Key(t)
	var x clienttest.Exclusion
	clients := make([]*redisync.Client, 4)
	for i := range clients {
		clients[i] = clienttest.New(t, s.Client(t))
	}
	const each = 4
	done := make(chan error, len(clients)*each)
	for _, c := range clients {
		for range each {
			go func() {
				for range 25 {
					l := rlock.New(c, name)
					if err := l.Lock(ctx); err != nil {
						done <- err
						return
					}
					x.Pass()
					if err := l.Unlock(ctx); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
	}
	for range len(clients) * each {
		require.NoError(t, <-done)
	}
	assert.EqualValues(t, 1, x.Most(), "two holders at once")
	assert.Empty(t, queued(t, s.Client(t), name), "nobody left in the queue")
}

// wakeChildEnv, when set, makes TestQueuedProcessChild the child process
// of TestKilledProcessInTheQueue: it connects to the address the variable
// holds, locks the lock named in wakeChildName (waiting in its queue), and
// is killed there.
const (
	wakeChildEnv  = "REDISYNC_WAKE_CHILD_ADDR"
	wakeChildName = "REDISYNC_WAKE_CHILD_NAME"
)

// TestQueuedProcessChild is the child process of
// TestKilledProcessInTheQueue (it does nothing in a test run of its own).
func TestQueuedProcessChild(t *testing.T) {
	addr := os.Getenv(wakeChildEnv)
	if addr == "" {
		return // not a child: nothing to do
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c := redisync.New(rdb, redisync.WithRecheckInterval(time.Minute))
	fmt.Println("waiting")
	err := rlock.New(c, os.Getenv(wakeChildName)).Lock(context.Background())
	fmt.Println("locked", err) // not reached: the parent kills the process first
	select {}
}

// A process killed with SIGKILL while it is the first in the lock's queue
// (its Client never leaves the queue) does not stall the lock: the next
// release finds it no longer listening, passes it over and wakes the next
// process, which gets the lock within milliseconds, not at its re-check
// (a minute here) nor when the dead entry runs out.
func TestKilledProcessInTheQueue(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL: a Unix test")
	}
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, s.Client(t)), name)
	require.NoError(t, holder.Lock(ctx))

	exe, err := os.Executable()
	require.NoError(t, err)
	child := exec.Command(exe, "-test.run=^TestQueuedProcessChild$", "-test.count=1")
	child.Env = append(os.Environ(), wakeChildEnv+"="+s.Addr(), wakeChildName+"="+name)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "waiting\n", line)
	waitClientsQueued(t, rdb, name, 1)

	next := rlock.New(clienttest.New(t, s.Client(t), redisync.WithRecheckInterval(time.Minute)), name)
	got := lockAsync(ctx, next)
	waitClientsQueued(t, rdb, name, 2)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	// the server notices the closed connections (the kernel closes them)
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, keys.LockWakePrefix(name)+queued(t, rdb, name)[0]).Result()
		return err == nil && n[keys.LockWakePrefix(name)+queued(t, rdb, name)[0]] == 0
	}, 5*time.Second, time.Millisecond, "the killed process's subscription gone")

	start := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the next process not woken: the killed one stalls the lock")
	}
	delay := time.Since(start)
	t.Logf("lock taken %v after the release, a process killed with SIGKILL queued first", delay)
	assert.Less(t, delay, time.Second, "the killed process was passed over at the release")
	assert.Empty(t, queued(t, rdb, name), "the killed process's entry dropped")
	require.NoError(t, next.Unlock(ctx))
}

// A queued wait that took the lock keeps its Client's channel subscribed
// for a second (it lingers), so that the Client's next wait joins the
// queue with its first attempt instead of subscribing again; then, or when
// the Client closes, the channel is unsubscribed. The Client is not in the
// queue meanwhile, and a wait in the window is woken as any other.
func TestSubscriptionLingersAfterAQueuedWait(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t)
	holder := rlock.New(clienttest.New(t, s.Client(t)), name)
	wc := clienttest.New(t, s.Client(t))
	waiter := rlock.New(wc, name)
	wake := keys.LockWakePrefix(name) + wc.ID()
	numsub := func() int64 {
		n, err := rdb.PubSubNumSub(ctx, wake).Result()
		require.NoError(t, err)
		return n[wake]
	}

	for round := range 2 { // the second wait takes the parked subscription back
		require.NoError(t, holder.Lock(ctx))
		got := lockAsync(ctx, waiter)
		waitClientsQueued(t, rdb, name, 1)
		require.NoError(t, holder.Unlock(ctx))
		select {
		case err := <-got:
			require.NoError(t, err, "round %d", round)
		case <-time.After(3 * time.Second):
			t.Fatalf("round %d: the queued waiter was not woken", round)
		}
		assert.Empty(t, queued(t, rdb, name), "round %d: the Client left the queue", round)
		assert.Equal(t, int64(1), numsub(), "round %d: the Client's channel stays subscribed", round)
		require.NoError(t, waiter.Unlock(ctx))
	}
	require.Eventually(t, func() bool { return numsub() == 0 }, 3*time.Second, 10*time.Millisecond,
		"unsubscribed once the subscription has lingered")

	// Closing the Client ends a lingering subscription at once.
	require.NoError(t, holder.Lock(ctx))
	got := lockAsync(ctx, waiter)
	waitClientsQueued(t, rdb, name, 1)
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-got)
	require.NoError(t, waiter.Unlock(ctx))
	require.Equal(t, int64(1), numsub())
	closed := time.Now()
	require.NoError(t, wc.Close())
	// Redis sees the connection close a moment later; the linger is a second.
	require.Eventually(t, func() bool { return numsub() == 0 }, 400*time.Millisecond, 5*time.Millisecond,
		"closed with the Client")
	assert.Less(t, time.Since(closed), 500*time.Millisecond)
}
