package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// wakeBound is how soon a release must wake a waiter of the other side.
const wakeBound = 100 * time.Millisecond

// mode is one pub/sub mode on a Cluster, with the raw commands a Redisson
// client in that mode uses.
type mode struct {
	name    string
	opt     redisync.ShardedMode
	sharded bool
}

var modes = []mode{{"sharded", redisync.ShardedAuto, true}, {"classic", redisync.ShardedOff, false}}

// publish sends msg on channel as Redisson in mode m does: SPUBLISH (routed
// to the channel's slot) or PUBLISH.
func (m mode) publish(ctx context.Context, cc *redis.ClusterClient, channel, msg string) error {
	if m.sharded {
		return cc.SPublish(ctx, channel, msg).Err()
	}
	return cc.Publish(ctx, channel, msg).Err()
}

// subscribe subscribes as a Redisson waiter in mode m: SSUBSCRIBE on the
// master of the channel's slot, or SUBSCRIBE on another node (the bus
// carries PUBLISH everywhere), and waits for the confirmation.
func (m mode) subscribe(t *testing.T, cl *redistest.Cluster, channel string) *redis.PubSub {
	t.Helper()
	ctx := context.Background()
	master := cl.MasterOf(t, keys.Slot(channel))
	var ps *redis.PubSub
	if m.sharded {
		ps = master.Client(t).SSubscribe(ctx, channel)
	} else {
		other := cl.Servers[0]
		if other == master {
			other = cl.Servers[1]
		}
		ps = other.Client(t).Subscribe(ctx, channel)
	}
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	return ps
}

// received waits for a message on ps and returns it with the time it took.
func received(t *testing.T, ps *redis.PubSub, since time.Time) (*redis.Message, time.Duration) {
	t.Helper()
	msg, err := ps.ReceiveTimeout(context.Background(), 10*time.Second)
	require.NoError(t, err)
	m, ok := msg.(*redis.Message)
	require.True(t, ok, "got %v", msg)
	return m, time.Since(since)
}

// awaitWake runs wait in the background once a waiter of c is registered,
// runs release, and returns how long after release wait returned.
func awaitWake(t *testing.T, c *redisync.Client, wait func() error, release func() error) time.Duration {
	t.Helper()
	errc := make(chan error, 1)
	before := (*core.Client)(c).Mux().Stats().Waiters
	go func() { errc <- wait() }()
	require.Eventually(t, func() bool { return (*core.Client)(c).Mux().Stats().Waiters > before }, 10*time.Second, time.Millisecond)
	start := time.Now()
	require.NoError(t, release())
	select {
	case err := <-errc:
		require.NoError(t, err)
		return time.Since(start)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken within 10s")
		return 0
	}
}

// interopPrimitive is one primitive in TestRedissonInteropOnCluster: how
// Redisson holds and releases it, with raw commands in its layout, and how
// a redisync waiter waits for it and releases it.
type interopPrimitive struct {
	name    string
	channel func(name string) string
	// javaHolds, if not nil, leaves what a Redisson holder leaves.
	javaHolds func(t *testing.T, name string)
	// javaRelease frees it as Redisson does and returns the message
	// Redisson then publishes.
	javaRelease func(t *testing.T, name string) string
	// goSide returns the redisync waiter of name.
	goSide func(name string) interopWaiter
	// goMessage is what redisync's release publishes.
	goMessage string
	// The words of the log lines.
	javaReleases, goWaiter, goReleases string
}

// interopWaiter is a redisync waiter: wait blocks until it holds, release
// releases, and beforeRelease (if not nil) runs before the release is
// timed, with a Redisson waiter's subscription.
type interopWaiter struct {
	wait, release func() error
	beforeRelease func(t *testing.T, ps *redis.PubSub)
}

// interopPrimitives returns the primitives of TestRedissonInteropOnCluster,
// with redisync's side on c and Redisson's raw commands through cc.
func interopPrimitives(ctx context.Context, c *redisync.Client, cc *redis.ClusterClient, javaOwner string) []interopPrimitive {
	// Redisson's unlock and count down delete the key; its semaphore
	// release adds a permit and publishes the new count.
	del := func(msg string) func(*testing.T, string) string {
		return func(t *testing.T, name string) string {
			require.NoError(t, cc.Del(ctx, name).Err())
			return msg
		}
	}
	incr := func(t *testing.T, name string) string {
		n, err := cc.IncrBy(ctx, name, 1).Result()
		require.NoError(t, err)
		return strconv.FormatInt(n, 10)
	}
	// hash is a Redisson lock's hash, with a minute to live.
	hash := func(values ...any) func(*testing.T, string) {
		return func(t *testing.T, name string) {
			require.NoError(t, cc.HSet(ctx, name, values...).Err())
			require.NoError(t, cc.PExpire(ctx, name, time.Minute).Err())
		}
	}
	return []interopPrimitive{{
		name: "lock", channel: keys.LockChannel,
		javaHolds:   hash(javaOwner, 1),
		javaRelease: del("0"),
		goSide: func(name string) interopWaiter {
			l := rlock.New(c, name)
			return interopWaiter{wait: func() error { return l.Lock(ctx) }, release: func() error { return l.Unlock(ctx) }}
		},
		goMessage:    "0",
		javaReleases: "unlock", goWaiter: "waiter", goReleases: "unlock",
	}, {
		name: "rwlock", channel: keys.RWChannel,
		javaHolds:   hash("mode", "write", javaOwner+":write", 1),
		javaRelease: del("1"),
		goSide: func(name string) interopWaiter {
			rw := rwlock.New(c, name)
			return interopWaiter{wait: func() error { return rw.RLock(ctx) }, release: func() error { return rw.RUnlock(ctx) }}
		},
		goMessage:    "0",
		javaReleases: "write unlock", goWaiter: "reader", goReleases: "read unlock",
	}, {
		name: "semaphore", channel: keys.SemaphoreChannel,
		javaRelease: incr,
		goSide: func(name string) interopWaiter {
			s := semaphore.New(c, name)
			return interopWaiter{wait: func() error { return s.Acquire(ctx, 1) }, release: func() error { return s.Release(ctx, 1) }}
		},
		goMessage:    "1",
		javaReleases: "release", goWaiter: "waiter", goReleases: "release",
	}, {
		name: "expirable", channel: keys.SemaphoreChannel,
		javaRelease: incr,
		goSide: func(name string) interopWaiter {
			s := semaphore.NewExpirable(c, name)
			var id string
			return interopWaiter{
				wait:    func() error { var err error; id, err = s.Acquire(ctx, time.Minute); return err },
				release: func() error { return s.Release(ctx, id) },
			}
		},
		goMessage:    "1",
		javaReleases: "release", goWaiter: "waiter", goReleases: "release",
	}, {
		name: "latch", channel: keys.LatchChannel,
		javaHolds: func(t *testing.T, name string) {
			require.NoError(t, cc.Set(ctx, name, 1, 0).Err())
		},
		javaRelease: del("0"),
		goSide: func(name string) interopWaiter {
			l := countdown.New(c, name)
			return interopWaiter{
				wait:    func() error { return l.Wait(ctx) },
				release: func() error { return l.CountDown(ctx) },
				// Set the count again: its message reaches the Redisson
				// waiter first.
				beforeRelease: func(t *testing.T, ps *redis.PubSub) {
					ok, err := l.TrySetCount(ctx, 1)
					require.NoError(t, err)
					require.True(t, ok)
					msg, _ := received(t, ps, time.Now())
					assert.Equal(t, "1", msg.Payload)
				},
			}
		},
		goMessage:    "0",
		javaReleases: "count down", goWaiter: "waiter", goReleases: "count down",
	}}
}

// Redisson's sharded and classic behaviour, emulated with raw commands in
// its layout: a Redisson release wakes a redisync waiter, and a redisync
// release reaches a Redisson waiter, within 100 ms, for every primitive;
// waiters use the subscription Redisson uses in that mode.
func TestRedissonInteropOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			cc := cl.Client(t)
			c := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(m.opt), redisync.WithRecheckInterval(time.Minute))
			pub, err := (*core.Client)(c).PublishCommand(ctx)
			require.NoError(t, err)
			assert.Equal(t, map[bool]string{true: "spublish", false: "publish"}[m.sharded], pub)
			javaOwner := "java-" + redistest.Key(t) + ":1"

			// The waiter's subscription is the one Redisson's release reaches.
			subscribedAs := func(channel string) {
				t.Helper()
				nodes := []*redistest.Server{cl.MasterOf(t, keys.Slot(channel))}
				cmd := "SHARDNUMSUB"
				if !m.sharded {
					nodes, cmd = cl.Servers, "NUMSUB" // on any node
				}
				require.Eventually(t, func() bool {
					var n int64
					for _, s := range nodes {
						v, _ := s.Do(t, "PUBSUB", cmd, channel).([]any)
						if len(v) == 2 {
							n += v[1].(int64)
						}
					}
					return n == 1
				}, 5*time.Second, time.Millisecond, "%s: the waiter subscribes as Redisson does", channel)
			}

			for _, p := range interopPrimitives(ctx, c, cc, javaOwner) {
				t.Run(p.name, func(t *testing.T) {
					name := redistest.Key(t)
					ch := p.channel(name)
					if p.javaHolds != nil {
						p.javaHolds(t, name)
					}
					w := p.goSide(name)
					d := awaitWake(t, c, w.wait, func() error {
						subscribedAs(ch)
						msg := p.javaRelease(t, name)
						return m.publish(ctx, cc, ch, msg)
					})
					t.Logf("Redisson %s -> redisync %s: %v", p.javaReleases, p.goWaiter, d)
					assert.Less(t, d, wakeBound)

					ps := m.subscribe(t, cl, ch)
					if w.beforeRelease != nil {
						w.beforeRelease(t, ps)
					}
					start := time.Now()
					require.NoError(t, w.release())
					msg, d := received(t, ps, start)
					assert.Equal(t, p.goMessage, msg.Payload)
					t.Logf("redisync %s -> Redisson waiter: %v", p.goReleases, d)
					assert.Less(t, d, wakeBound)
				})
			}
		})
	}
}

// A latch whose name holds a hash tag has its channel in another slot than
// its counter: in sharded mode the latch publishes with SPUBLISH on the
// channel's own node, and its waiters are woken.
func TestLatchChannelInOtherSlotSharded(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	c := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(redisync.ShardedOn), redisync.WithRecheckInterval(time.Minute))
	// Find a name whose channel's slot is served by another master than the
	// counter's, the case a script cannot publish for.
	var name string
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("batch{%s-%d}", redistest.Key(t), i)
		if cl.MasterOf(t, keys.Slot(n)) != cl.MasterOf(t, keys.Slot(keys.LatchChannel(n))) {
			name = n
		}
	}
	l := countdown.New(c, name)
	ok, err := l.TrySetCount(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.CountDown(ctx))
	d := awaitWake(t, c, func() error { return l.Wait(ctx) }, func() error { return l.CountDown(ctx) })
	t.Logf("woken %v after the count down", d)
	assert.Less(t, d, 5*time.Second)
}

// sharedSlots returns n lock names whose slots are served by master, in
// distinct slots.
func namesOn(t *testing.T, cl *redistest.Cluster, master *redistest.Server, n int) []string {
	var names []string
	seen := map[int]bool{}
	for len(names) < n {
		name := redistest.Key(t)
		slot := keys.Slot(name)
		if !seen[slot] && cl.MasterOf(t, slot) == master {
			seen[slot] = true
			names = append(names, name)
		}
	}
	return names
}

// waitersFor starts one Lock per name through c and returns a channel that
// receives each name once its Lock returned and it unlocked again.
func waitersFor(t *testing.T, c *redisync.Client, names []string) <-chan string {
	ctx := context.Background()
	got := make(chan string, len(names))
	before := (*core.Client)(c).Mux().Stats().Waiters
	for _, name := range names {
		go func() {
			l := rlock.New(c, name)
			if err := l.Lock(ctx); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			assert.NoError(t, l.Unlock(ctx))
			got <- name
		}()
	}
	// A client's waiters for one lock line up locally; the head of each
	// line waits in Redis, on the pub/sub multiplexer.
	per := map[string]int{}
	for _, name := range names {
		per[name]++
	}
	cc := (*core.Client)(c)
	require.Eventually(t, func() bool {
		for name, n := range per {
			if cc.Lines().Len(core.LockLine("rlock", name)) != n {
				return false
			}
		}
		return cc.Mux().Stats().Waiters == before+len(per)
	}, 10*time.Second, time.Millisecond)
	return got
}

// expect waits until every name arrived on got (as often as it is listed),
// failing after within.
func expect(t *testing.T, got <-chan string, names []string, within time.Duration, what string) {
	t.Helper()
	deadline := time.After(within)
	left := map[string]int{}
	for _, n := range names {
		left[n]++
	}
	for missing := len(names); missing > 0; missing-- {
		select {
		case n := <-got:
			left[n]--
			require.GreaterOrEqual(t, left[n], 0, "%s: %s acquired more often than expected", what, n)
		case <-deadline:
			t.Fatalf("%s: %d of %d waiters did not get their lock within %v", what, missing, len(names), within)
		}
	}
}

// On a Cluster with replicas, in sharded mode: a manual failover and the
// kill of a master (automatic failover) while locks are held and waited
// for. The waiters' subscriptions move to the new masters, so the next
// releases wake them through pub/sub (their re-check interval is a minute);
// new acquisitions work once the cluster is ok again; nothing hangs.
func TestShardedFailover(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1), redistest.ClusterNodeTimeout(2*time.Second))
	ctx := context.Background()
	holderRdb := cl.Client(t)
	holder := clienttest.New(t, holderRdb, redisync.WithShardedPubSub(redisync.ShardedOn))
	waiter := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(redisync.ShardedOn), redisync.WithRecheckInterval(time.Minute))
	const within = 10 * time.Second

	run := func(what string, master *redistest.Server, fail func() *redistest.Server) {
		names := namesOn(t, cl, master, 4)
		var held []*rlock.Lock
		for _, name := range names {
			l := rlock.New(holder, name, rlock.WithLease(time.Minute))
			require.NoError(t, l.Lock(ctx))
			held = append(held, l)
		}
		got := waitersFor(t, waiter, names)
		next := fail()
		// Every waiter's subscription is on the new master.
		require.Eventually(t, func() bool {
			st := (*core.Client)(waiter).Mux().Stats()
			if st.Unrouted != 0 {
				return false
			}
			for _, name := range names {
				v, _ := next.Do(t, "PUBSUB", "SHARDNUMSUB", keys.LockChannel(name)).([]any)
				if len(v) != 2 || v[1] != int64(1) {
					return false
				}
			}
			return true
		}, 2*within, 10*time.Millisecond, "%s: subscriptions on the new master %s", what, next.Addr())
		start := time.Now()
		for _, l := range held {
			// The holder's lease survived the failover (replicated before
			// it). The holder's go-redis may still route to the killed
			// master until it reloads its slot map: an Unlock may fail to
			// connect until then (an error, not a hang).
			require.Eventually(t, func() bool {
				holderRdb.ReloadState(ctx)
				return l.Unlock(ctx) == nil
			}, 2*within, 50*time.Millisecond, what)
		}
		expect(t, got, names, within, what)
		t.Logf("%s: %d waiters got their locks %v after the releases", what, len(names), time.Since(start))
		// New acquisitions on the new master.
		l := rlock.New(waiter, namesOn(t, cl, next, 1)[0])
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
		st := (*core.Client)(waiter).Mux().Stats()
		assert.LessOrEqual(t, st.Conns, 3, "%s: at most one pub/sub connection per master: %+v", what, st)
	}

	m0 := cl.Servers[0]
	run("CLUSTER FAILOVER", m0, func() *redistest.Server {
		r := cl.ReplicaOf(t, m0)
		cl.Failover(t, r)
		return r
	})
	m1 := cl.Servers[1]
	run("master killed", m1, func() *redistest.Server { return cl.KillMaster(t, m1) })
}

// Migrating the slot of a lock with waiters: Redis ends their sharded
// subscription on the old master, they subscribe again on the new one, and
// the next release wakes them.
func TestShardedSlotMigration(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	holder := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(redisync.ShardedOn))
	waiter := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(redisync.ShardedOn), redisync.WithRecheckInterval(time.Minute))
	name := redistest.Key(t)
	l := rlock.New(holder, name, rlock.WithLease(time.Minute))
	require.NoError(t, l.Lock(ctx))
	got := waitersFor(t, waiter, []string{name, name, name})

	slot := keys.Slot(name)
	from := cl.MasterOf(t, slot)
	to := cl.Servers[(slices.Index(cl.Servers, from)+1)%len(cl.Servers)]
	cl.MigrateSlot(t, slot, to)
	require.Eventually(t, func() bool {
		v, _ := to.Do(t, "PUBSUB", "SHARDNUMSUB", keys.LockChannel(name)).([]any)
		return len(v) == 2 && v[1] == int64(1)
	}, 10*time.Second, 10*time.Millisecond, "the waiters subscribe on the slot's new master")
	v, _ := from.Do(t, "PUBSUB", "SHARDNUMSUB", keys.LockChannel(name)).([]any)
	assert.Equal(t, int64(0), v[1], "no subscription left on the old master")

	start := time.Now()
	require.NoError(t, l.Unlock(ctx))
	expect(t, got, []string{name}, 5*time.Second, "first waiter after the migration")
	t.Logf("woken %v after the release", time.Since(start))
	expect(t, got, []string{name, name}, 5*time.Second, "the other waiters, one release each")
}

// Through Sentinel, SENTINEL FAILOVER with waiters: the pub/sub connection
// follows the new master and the next release wakes the waiters (their
// re-check interval is a minute).
func TestSentinelFailoverWaiters(t *testing.T) {
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	ctx := context.Background()
	holder := clienttest.New(t, sn.Client(t))
	waiter := clienttest.New(t, sn.Client(t), redisync.WithRecheckInterval(time.Minute))
	names := []string{redistest.Key(t), redistest.Key(t)}
	var held []*rlock.Lock
	for _, name := range names {
		l := rlock.New(holder, name, rlock.WithLease(time.Minute))
		require.NoError(t, l.Lock(ctx))
		held = append(held, l)
	}
	got := waitersFor(t, waiter, names)
	next := sn.Failover(t)
	require.Eventually(t, func() bool {
		for _, name := range names {
			v, _ := next.Do(t, "PUBSUB", "NUMSUB", keys.LockChannel(name)).([]any)
			if len(v) != 2 || v[1] != int64(1) {
				return false
			}
		}
		return true
	}, 15*time.Second, 10*time.Millisecond, "the waiters' subscriptions follow the new master")
	start := time.Now()
	for _, l := range held {
		require.Eventually(t, func() bool { return l.Unlock(ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	}
	expect(t, got, names, 10*time.Second, "waiters after the sentinel failover")
	t.Logf("woken %v after the releases", time.Since(start))
}

// clusterStat sums a CLUSTER INFO counter over the nodes.
func clusterStat(t *testing.T, cl *redistest.Cluster, field string) int64 {
	var sum int64
	for _, s := range cl.Nodes() {
		info, _ := s.Do(t, "CLUSTER", "INFO").(string)
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// subConns counts, on node, the client connections with a classic or a
// sharded subscription.
func subConns(t *testing.T, node *redistest.Server) int {
	list, _ := node.Do(t, "CLIENT", "LIST").(string)
	n := 0
	for line := range strings.Lines(list) {
		for _, f := range strings.Fields(line) {
			if (strings.HasPrefix(f, "sub=") || strings.HasPrefix(f, "ssub=")) && !strings.HasSuffix(f, "=0") {
				n++
				break
			}
		}
	}
	return n
}

// The figures of docs/cluster-sentinel.md, classic against
// sharded pub/sub, on 3 masters with a replica each: cluster-bus messages
// per release, pub/sub connections of one client with 10,000 waiters on
// 1,000 locks, and the handoff latency of a lock between two clients over
// 200 handoffs. Only the connection bounds are asserted; the rest is logged.
func TestClusterScaleFigures(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1))
	ctx := context.Background()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			a := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(m.opt))
			b := clienttest.New(t, cl.Client(t), redisync.WithShardedPubSub(m.opt))

			// Bus messages per release (a lock release that publishes).
			const releases = 200
			base := redistest.Key(t)
			pub0, shard0 := clusterStat(t, cl, "cluster_stats_messages_publish_sent"), clusterStat(t, cl, "cluster_stats_messages_publishshard_sent")
			for i := range releases {
				l := rlock.New(a, base+":"+strconv.Itoa(i))
				require.NoError(t, l.Lock(ctx))
				require.NoError(t, l.Unlock(ctx))
			}
			pub1, shard1 := clusterStat(t, cl, "cluster_stats_messages_publish_sent"), clusterStat(t, cl, "cluster_stats_messages_publishshard_sent")
			t.Logf("FIGURE %s: bus messages per release: publish %.2f, publishshard %.2f",
				m.name, float64(pub1-pub0)/releases, float64(shard1-shard0)/releases)

			// 10,000 waiters over 1,000 locks: the multiplexer's waiters
			// (a Lock waiting is one such waiter; goroutines are not needed
			// to count connections).
			mux := (*core.Client)(a).Mux()
			var ws []interface{ Close() }
			for i := range 1000 {
				ch := keys.LockChannel(base + ":w" + strconv.Itoa(i))
				for range 10 {
					w, err := mux.Subscribe(ctx, ch, nil)
					require.NoError(t, err)
					ws = append(ws, w)
				}
			}
			st := mux.Stats()
			var perNode []int
			for _, s := range cl.Nodes() {
				perNode = append(perNode, subConns(t, s))
			}
			t.Logf("FIGURE %s: 10,000 waiters on 1,000 locks: %d pub/sub connections (per node, masters then replicas: %v); %+v", m.name, st.Conns, perNode, st)
			assert.Equal(t, 10000, st.Waiters)
			if m.sharded {
				assert.LessOrEqual(t, st.Conns, 3)
			} else {
				assert.Equal(t, 1, st.Conns)
			}
			for _, w := range ws {
				w.Close()
			}

			// Handoffs: a holds, b waits, a releases; the time from the
			// release to b's acquisition.
			var lat []time.Duration
			for i := range 200 {
				name := base + ":h" + strconv.Itoa(i)
				la := rlock.New(a, name)
				require.NoError(t, la.Lock(ctx))
				lb := rlock.New(b, name)
				d := awaitWake(t, b, func() error { return lb.Lock(ctx) }, func() error { return la.Unlock(ctx) })
				lat = append(lat, d)
				require.NoError(t, lb.Unlock(ctx))
			}
			slices.Sort(lat)
			t.Logf("FIGURE %s: handoff over 200 handoffs: p50 %v, p99 %v, max %v", m.name, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
		})
	}
}
