package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

func ExampleLock_Lock() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	l := rlock.New(c, "example:orders:42")
	if err := l.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	defer l.Unlock(ctx)

	// The watchdog renews the lease while the work runs; Done closes if the
	// lock is lost anyway (Redis unreachable for a whole lease, a
	// force-unlock), so long work should watch it.
	select {
	case <-l.Done():
		fmt.Println("lost:", l.Err())
	default:
		fmt.Println("holding", l.Name())
	}
	// Output: holding example:orders:42
}

func ExampleLock_TryLock() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	first := rlock.New(c, "example:report")
	second := rlock.New(c, "example:report") // another handle is another owner
	_ = first.Lock(ctx)

	ok, err := second.TryLock(ctx, 100*time.Millisecond)
	fmt.Println("second got it:", ok, err)

	_ = first.Unlock(ctx)
	ok, err = second.TryLock(ctx, 0)
	fmt.Println("after release:", ok, err)
	_ = second.Unlock(ctx)
	// Output:
	// second got it: false <nil>
	// after release: true <nil>
}

// Reentrancy: a context owner that holds a lock may take it again; it is
// free after as many Unlocks. (A handle used without a context owner is not
// reentrant: its second Lock would wait, as with sync.Mutex.)
func ExampleLock_HoldCount() {
	ctx := redisync.WithOwner(context.Background())
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	l := rlock.New(c, "example:reentrant")
	_ = l.Lock(ctx)
	_ = l.Lock(ctx)
	n, _ := l.HoldCount(ctx)
	fmt.Println("holds:", n)
	_ = l.Unlock(ctx)
	_ = l.Unlock(ctx)
	locked, _ := l.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// holds: 2
	// locked: false
}

// A context owner makes every handle used with the context act for one
// owner, as a Java thread does with Redisson: functions down the call chain
// re-enter the locks their callers hold.
func ExampleWithOwner() {
	ctx := redisync.WithOwner(context.Background())
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	outer := rlock.New(c, "example:account:7")
	_ = outer.Lock(ctx)
	defer outer.Unlock(ctx)

	inner := rlock.New(c, "example:account:7") // e.g. inside a helper function
	ok, _ := inner.TryLock(ctx, 0)
	fmt.Println("re-entered:", ok)
	_ = inner.Unlock(ctx)
	// Output: re-entered: true
}

// Fencing tokens protect the guarded resource from a holder whose lease ran
// out without it noticing: the resource rejects writes with a token lower
// than one it has already seen.
func ExampleWithFencing() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	store := &fencedStore{}
	l := rlock.New(c, "example:fenced", rlock.WithFencing())

	_ = l.Lock(ctx)
	stale := l.FencingToken()
	_ = l.Unlock(ctx)
	_ = l.Lock(ctx) // the next acquisition, say by another process
	fmt.Println(store.Write(l.FencingToken(), "new"))
	_ = l.Unlock(ctx)

	fmt.Println(store.Write(stale, "old")) // a paused holder wakes up late
	// Output:
	// <nil>
	// stale fencing token
}

// fencedStore is a resource that checks fencing tokens.
type fencedStore struct {
	highest int64
	value   string
}

func (s *fencedStore) Write(token int64, v string) error {
	if token < s.highest {
		return errors.New("stale fencing token")
	}
	s.highest, s.value = token, v
	return nil
}

// The job pattern: a periodic job takes the lock with a context owner, runs
// its work under the hold's context (cancelled the moment the lock is lost,
// with the reason as its cause) and stamps every write with the hold's
// fencing token. Nested steps that take the same lock re-enter it and write
// with the same token, so the store accepts the outer scope's writes after
// them; a later holder's token is larger, so a holder that lost the lock
// without noticing is refused.
func ExampleLock_Hold() {
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	store := &fencedStore{}
	l := rlock.New(c, "example:job", rlock.WithFencing())

	job := func(ctx context.Context) error {
		ctx = redisync.WithOwner(ctx) // this run of the job is one owner
		if err := l.Lock(ctx); err != nil {
			return err
		}
		defer l.Unlock(ctx)
		hold := l.Hold(ctx)
		// Work under the hold: it stops when the caller gives up or the
		// lock is lost, whichever comes first.
		work, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(hold.Context(), func() { cancel(context.Cause(hold.Context())) })
		defer stop()

		step := func(ctx context.Context, v string) error {
			if err := l.Lock(ctx); err != nil { // a nested step re-enters
				return err
			}
			defer l.Unlock(ctx)
			return store.Write(l.Hold(ctx).FencingToken(), v)
		}
		if err := step(work, "step 1"); err != nil {
			return err
		}
		if err := work.Err(); err != nil {
			return context.Cause(work) // the lock was lost: stop here
		}
		return store.Write(hold.FencingToken(), "summary") // same token as the steps
	}

	for run := 1; run <= 2; run++ {
		fmt.Printf("run %d: %v (%s)\n", run, job(context.Background()), store.value)
	}
	// Output:
	// run 1: <nil> (summary)
	// run 2: <nil> (summary)
}

// With a fixed lease the lock needs no renewal and ends by itself.
func ExampleWithLease() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	l := rlock.New(c, "example:lease", rlock.WithLease(200*time.Millisecond))
	_ = l.Lock(ctx)
	<-l.Done() // closes when the lease runs out, never after Redis expires it
	fmt.Println(errors.Is(l.Err(), redisync.ErrLockLost))
	_ = l.Unlock(ctx) // pairs the Lock (ErrNotHeld: the lease ran out)

	next := rlock.New(c, "example:lease")
	ok, _ := next.TryLock(ctx, time.Second)
	fmt.Println("next owner:", ok)
	_ = next.Unlock(ctx)
	// Output:
	// true
	// next owner: true
}

// A handle may be shared by any number of goroutines, as a sync.Mutex is:
// they exclude each other, and other handles and processes, through Redis.
func ExampleLock_shared() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	type server struct {
		mu      *rlock.Lock // shared by every request handler
		counter int
	}
	srv := &server{mu: rlock.New(c, "example:shared")}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.mu.Lock(ctx); err != nil {
				return
			}
			defer srv.mu.Unlock(ctx)
			srv.counter++ // a read-modify-write only one goroutine does at a time
		}()
	}
	wg.Wait()
	fmt.Println("counter:", srv.counter)
	// Output: counter: 8
}

// A spin lock waits without pub/sub: it re-tries with a growing pause. It is
// the same lock as an rlock.Lock of the same name.
func ExampleNewSpin() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()

	holder := rlock.New(c, "example:spin")
	_ = holder.Lock(ctx)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = holder.Unlock(ctx)
	}()

	l := rlock.NewSpin(c, "example:spin", rlock.WithBackoff(time.Millisecond, 20*time.Millisecond))
	ok, err := l.TryLock(ctx, 5*time.Second)
	fmt.Println("spun in:", ok, err)
	_ = l.Unlock(ctx)
	// Output: spun in: true <nil>
}

// A fair lock serves its waiters in the order they asked for it, across
// handles, clients and processes: here three workers queue behind a holder
// and get the lock in turn.
func ExampleNewFair() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	c := redisync.New(rdb)
	defer c.Close()

	const name = "example:fair"
	holder := rlock.NewFair(c, name)
	_ = holder.Lock(ctx)

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		order []int
	)
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := rlock.NewFair(c, name) // a handle of its own: its own place in the queue
			if err := l.Lock(ctx); err != nil {
				fmt.Println("lock:", err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			_ = l.Unlock(ctx)
		}()
		// Let worker i take its place in the queue before the next asks.
		for rdb.LLen(ctx, "redisson_lock_queue:{"+name+"}").Val() < int64(i) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = holder.Unlock(ctx)
	wg.Wait()
	fmt.Println("served in order:", order)
	// Output: served in order: [1 2 3]
}

func ExampleLock_Inspect() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}), redisync.WithID("inspect-example"))
	defer c.Close()

	l := rlock.New(c, "example:inspect", rlock.WithFencing())
	owner := redisync.WithOwnerToken(ctx, 7)
	if err := l.Lock(owner); err != nil {
		fmt.Println("lock:", err)
		return
	}
	defer l.Unlock(owner)

	// One round trip: who holds it, how many times, for how long.
	info, err := l.Inspect(ctx)
	if err != nil {
		fmt.Println("inspect:", err)
		return
	}
	for _, h := range info.Holders {
		fmt.Printf("held by %s, count %d, lease left > 20s: %v\n", h.Owner, h.Count, info.TTL > 20*time.Second)
	}
	fmt.Println("fenced:", info.FencingToken > 0)
	// Output:
	// held by inspect-example:7, count 1, lease left > 20s: true
	// fenced: true
}

// A job that must run once per period across schedulers whose clocks
// differ a little: the minimum hold keeps the lock after a quick run, so a
// scheduler that comes late finds the job taken.
func ExampleWithMinHold() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}))
	defer c.Close()
	name := fmt.Sprintf("example:nightly-report:%d", time.Now().UnixNano())

	early := rlock.New(c, name, rlock.WithMinHold(2*time.Second))
	if ok, _ := early.TryLock(ctx, 0); ok {
		fmt.Println("early scheduler runs the job")
		_ = early.Unlock(ctx) // the job was quick: the lock stays until 2s after it was taken
	}

	late := rlock.New(c, name, rlock.WithMinHold(2*time.Second)) // 300ms late
	time.Sleep(300 * time.Millisecond)
	if ok, _ := late.TryLock(ctx, 0); !ok {
		fmt.Println("late scheduler finds the job taken")
	}
	// Output:
	// early scheduler runs the job
	// late scheduler finds the job taken
}

func ExampleLock_Events() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	// An operator's setting (redis.conf: notify-keyspace-events Kgx), made
	// here for the example and put back after it.
	old := rdb.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
	rdb.ConfigSet(ctx, "notify-keyspace-events", "Kgx")
	defer rdb.ConfigSet(ctx, "notify-keyspace-events", old)

	c := redisync.New(rdb)
	defer c.Close()
	l := rlock.New(c, "example:events")
	ectx, stop := context.WithCancel(ctx)
	defer stop() // closes the channel, ends the subscription
	events, err := l.Events(ectx)
	if err != nil {
		fmt.Println("events:", err) // ErrKeyspaceEventsOff names the CONFIG SET to run
		return
	}

	_ = l.Lock(ctx)
	_ = l.Unlock(ctx) // the release deletes the key
	fmt.Println((<-events).Kind)

	_ = rlock.New(c, "example:events", rlock.WithLease(10*time.Millisecond)).Lock(ctx)
	fmt.Println((<-events).Kind) // nobody renews a fixed lease

	// The holder's Done uses the same notifications: a DEL by someone else
	// (an operator, redisync unlock -force) ends the hold within a round
	// trip, not at the watchdog's next renewal 10 s later.
	_ = l.Lock(ctx)
	done := l.Done()
	rdb.Del(ctx, "example:events")
	<-done
	fmt.Println((<-events).Kind, errors.Is(l.Err(), redisync.ErrLockLost))
	_ = l.Unlock(ctx) // the handle's own hold is over: Unlock lets its next Lock through
	// Output:
	// deleted
	// expired
	// deleted true
}
