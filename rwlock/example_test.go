package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rwlock"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

// Readers share the lock; a writer waits until they are gone.
func ExampleRWLock_RLock() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()

	a := rwlock.New(c, "example:config")
	b := rwlock.New(c, "example:config")
	if err := a.RLock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	ok, _ := b.TryRLock(ctx, 0)
	fmt.Println("second reader gets in:", ok)

	writer := rwlock.New(c, "example:config")
	ok, _ = writer.TryLock(ctx, 0)
	fmt.Println("writer gets in:", ok)

	_ = a.RUnlock(ctx)
	_ = b.RUnlock(ctx)
	ok, _ = writer.TryLock(ctx, 0)
	fmt.Println("writer gets in after the readers left:", ok)
	_ = writer.Unlock(ctx)
	// Output:
	// second reader gets in: true
	// writer gets in: false
	// writer gets in after the readers left: true
}

// The writer excludes everyone. A reader may not become a writer.
func ExampleRWLock_Lock() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()

	rw := rwlock.New(c, "example:catalog")
	if err := rw.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	reader := rwlock.New(c, "example:catalog")
	ok, _ := reader.TryRLock(ctx, 0)
	fmt.Println("reader gets in while writing:", ok)
	_ = rw.Unlock(ctx)

	octx := redisync.WithOwner(ctx) // upgrades concern context owners
	_ = reader.RLock(octx)
	err := reader.Lock(octx) // an upgrade: refused at once
	fmt.Println("upgrade refused:", errors.Is(err, redisync.ErrUpgrade))
	_ = reader.RUnlock(octx)
	// Output:
	// reader gets in while writing: false
	// upgrade refused: true
}

// A writer (a context owner) downgrades by taking a read hold before releasing the write
// side: no other writer can slip in between, and waiting readers get in at
// once.
func ExampleRWLock_downgrade() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()

	octx := redisync.WithOwner(ctx) // downgrades concern context owners
	rw := rwlock.New(c, "example:cache")
	if err := rw.Lock(octx); err != nil {
		fmt.Println(err)
		return
	}
	// ... refresh the cache ...
	_ = rw.RLock(octx)  // still exclusive: the write side is held
	_ = rw.Unlock(octx) // now read-locked, shared with other readers

	readLocked, _ := rw.IsReadLocked(ctx)
	fmt.Println("read-locked:", readLocked)
	reader := rwlock.New(c, "example:cache")
	ok, _ := reader.TryRLock(ctx, 0)
	fmt.Println("another reader gets in:", ok)
	ok, _ = rwlock.New(c, "example:cache").TryLock(ctx, 0)
	fmt.Println("another writer gets in:", ok)
	_ = reader.RUnlock(ctx)
	_ = rw.RUnlock(octx)
	// Output:
	// read-locked: true
	// another reader gets in: true
	// another writer gets in: false
}

// A read side joins other locks as a redisync.Locker, for example in a
// multilock.MultiLock.
func ExampleRWLock_ReadLocker() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()

	var l redisync.Locker = rwlock.New(c, "example:schema").ReadLocker()
	if err := l.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer l.Unlock(ctx)
	fmt.Println("schema read-locked")
	// Output: schema read-locked
}

// A handle may be shared by any number of goroutines, as a sync.RWMutex is:
// readers through it share the lock, a writer through it excludes them and
// everyone else.
func ExampleRWLock_shared() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()

	config := struct {
		mu      *rwlock.RWLock
		version int
	}{mu: rwlock.New(c, "example:config")}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%3 == 0 { // a writer
				if err := config.mu.Lock(ctx); err == nil {
					config.version++
					_ = config.mu.Unlock(ctx)
				}
				return
			}
			if err := config.mu.RLock(ctx); err == nil {
				_ = config.version // readers only read
				_ = config.mu.RUnlock(ctx)
			}
		}()
	}
	wg.Wait()
	fmt.Println("version:", config.version)
	// Output: version: 2
}

// Owners sharing one handle each follow their own read hold: the handle's
// Done follows the latest acquisition through it, whoever made it, while an
// owner's ReadHold ends only with that owner's release (or a loss).
func ExampleRWLock_ReadHold() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr})
	defer rdb.Close()
	c := redisync.New(rdb)
	defer c.Close()
	rw := rwlock.New(c, "example:shared-config")

	a := redisync.WithOwner(context.Background())
	b := redisync.WithOwner(context.Background())
	_ = rw.RLock(a)
	_ = rw.RLock(b)
	held := rw.ReadHold(a)
	_ = rw.RUnlock(b) // B is done; A still reads

	select {
	case <-held.Done():
		fmt.Println("A's hold ended:", held.Err())
	default:
		fmt.Println("A still holds its read hold")
	}
	_ = rw.RUnlock(a)
	<-held.Context().Done()
	fmt.Println("after A's release:", errors.Is(context.Cause(held.Context()), redisync.ErrNotHeld))
	// Output:
	// A still holds its read hold
	// after A's release: true
}

func ExampleRWLock_Inspect() {
	ctx := context.Background()
	c := redisync.New(redis.NewClient(&redis.Options{Addr: exampleAddr}), redisync.WithID("rw-inspect-example"))
	defer c.Close()

	rw := rwlock.New(c, "example:rw-inspect")
	a, b := redisync.WithOwnerToken(ctx, 1), redisync.WithOwnerToken(ctx, 2)
	for _, owner := range []context.Context{a, b, b} {
		if err := rw.RLock(owner); err != nil {
			fmt.Println("rlock:", err)
			return
		}
	}
	defer rw.RUnlock(a)
	defer rw.RUnlock(b)
	defer rw.RUnlock(b)

	info, err := rw.Inspect(ctx)
	if err != nil {
		fmt.Println("inspect:", err)
		return
	}
	fmt.Println("mode:", info.Mode, "writer:", info.Writer)
	for _, r := range info.Readers {
		fmt.Printf("reader %s, count %d\n", r.Owner, r.Count)
	}
	// Output:
	// mode: read writer: <nil>
	// reader rw-inspect-example:1, count 1
	// reader rw-inspect-example:2, count 2
}

// Events reports the deletions and expiries of the lock's hash, whoever
// causes them, from Redis keyspace notifications.
func ExampleRWLock_Events() {
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
	rw := rwlock.New(c, "example:rw-events")
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := rw.Events(ectx)
	if err != nil {
		fmt.Println("events:", err)
		return
	}
	_ = rw.RLock(ctx)
	_ = rw.RUnlock(ctx) // the last release deletes the hash
	ev := <-events
	fmt.Println(ev.Key, ev.Kind)
	// Output: example:rw-events deleted
}
