package redistest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// The harness is tested with the standard library only, so that it does
// not depend on testify's own dependencies being in go.sum.

func TestStart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	equal(t, s.Addr(), fmt.Sprintf("127.0.0.1:%d", s.Port()))

	ctx := context.Background()
	rdb := s.Client(t)
	noErr(t, rdb.Set(ctx, "k", "v", 0).Err())
	equal(t, s.Do(t, "GET", "k"), any("v"))
	equal(t, s.Do(t, "GET", "missing"), nil) // a nil reply is nil, not an error
	equal(t, s.Do(t, "CONFIG", "GET", "save"), any([]any{"save", ""}))
	equal(t, s.Do(t, "CONFIG", "GET", "appendonly"), any([]any{"appendonly", "no"}))
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.WithArgs("--maxmemory", "12mb", "--maxmemory-policy", "allkeys-lru"))
	equal(t, s.Do(t, "CONFIG", "GET", "maxmemory"), any([]any{"maxmemory", "12582912"}))
	equal(t, s.Do(t, "CONFIG", "GET", "maxmemory-policy"), any([]any{"maxmemory-policy", "allkeys-lru"}))
}

func TestShared(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	if s2 := redistest.Shared(t); s2 != s {
		t.Fatalf("Shared returned %p, then %p", s, s2)
	}

	key := redistest.Key(t)
	ctx := context.Background()
	noErr(t, s.Client(t).Set(ctx, key, "x", time.Minute).Err())
	equal(t, s.Do(t, "GET", key), any("x"))
}

func TestKey(t *testing.T) {
	t.Parallel()
	k1, k2 := redistest.Key(t), redistest.Key(t)
	if k1 == k2 {
		t.Errorf("two calls returned %s", k1)
	}
	matches(t, `^t:TestKey:[0-9a-f]{8}$`, k1)
	matches(t, `^t:TestKey:[0-9a-f]{8}:lock:owner$`, redistest.Key(t, "lock", "owner"))
	matches(t, `^t:TestKey:[0-9a-f]{8}:_tag_$`, redistest.Key(t, "{tag}")) // no hash tags from parts

	t.Run("sub {x}/y z", func(t *testing.T) {
		matches(t, `^t:TestKey_sub__x__y_z:[0-9a-f]{8}$`, redistest.Key(t))
	})

	seen := map[string]bool{}
	for range 1000 {
		k := redistest.Key(t)
		if seen[k] {
			t.Fatalf("duplicate key %s", k)
		}
		seen[k] = true
	}
}

func TestStopRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	port := s.Port()
	ctx := context.Background()
	rdb := s.Client(t, func(o *redis.Options) { o.MaxRetries = -1 })
	key := redistest.Key(t)
	noErr(t, rdb.Set(ctx, key, "v", 0).Err())

	s.Stop(t)
	s.Stop(t) // stopping twice is harmless
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the port still accepts connections after Stop")
	}
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded on a stopped server")
	}

	s.Restart(t)
	equal(t, s.Port(), port)
	equal(t, s.Addr(), fmt.Sprintf("127.0.0.1:%d", port))
	eventually(t, 5*time.Second, func() error { return rdb.Ping(ctx).Err() })
	equal(t, s.Do(t, "GET", key), nil) // nothing is persisted across a restart

	s.Restart(t) // restarting a running server works too
	equal(t, s.Do(t, "PING"), any("PONG"))
	equal(t, s.Port(), port)
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := context.Background()
	rdb := s.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.MaxRetries = -1
	})
	noErr(t, rdb.Ping(ctx).Err())

	s.Pause(t)
	start := time.Now()
	err := rdb.Ping(ctx).Err()
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("PING on a paused server: %v; want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("PING took %v to time out with a 200ms ReadTimeout", d)
	}

	s.Resume(t)
	noErr(t, rdb.Ping(ctx).Err())
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	if p.Addr() == s.Addr() {
		t.Fatalf("proxy and server share %s", p.Addr())
	}

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	key := redistest.Key(t)
	big := strings.Repeat("x", 100_000) // several chunks each way
	noErr(t, rdb.Set(ctx, key, big, time.Minute).Err())
	got, err := rdb.Get(ctx, key).Result()
	noErr(t, err)
	equal(t, got, big)
	equal(t, s.Do(t, "STRLEN", key), any(int64(100_000)))
	equal(t, p.Dropped(), 0)
}

// TestProxyDropNextReply checks the fault the proxy exists for: the server
// runs the command, the reply is lost, and go-redis runs it again.
func TestProxyDropNextReply(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()}) // default MaxRetries
	defer rdb.Close()
	key := redistest.Key(t)
	noErr(t, rdb.Ping(ctx).Err()) // connection set up before arming

	p.DropNextReply()
	n, err := rdb.Incr(ctx, key).Result()
	noErr(t, err)
	equal(t, n, int64(2)) // once before the lost reply, once on retry
	equal(t, s.Do(t, "GET", key), any("2"))
	equal(t, p.Dropped(), 1)

	n, err = rdb.Incr(ctx, key).Result()
	noErr(t, err)
	equal(t, n, int64(3)) // disarmed after firing once
	equal(t, p.Dropped(), 1)
	s.Do(t, "DEL", key)
}

func TestProxyCutAll(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())

	conn, err := net.Dial("tcp", p.Addr())
	noErr(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	equal(t, rawPing(t, conn, r), "+PONG\r\n")

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	noErr(t, rdb.Ping(ctx).Err())

	p.CutAll()
	noErr(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = r.ReadByte()
	var netErr net.Error
	if err == nil || errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("read on a cut connection: %v; want EOF or reset", err)
	}

	conn2, err := net.Dial("tcp", p.Addr())
	noErr(t, err) // new connections are still accepted
	defer conn2.Close()
	equal(t, rawPing(t, conn2, bufio.NewReader(conn2)), "+PONG\r\n")
	noErr(t, rdb.Ping(ctx).Err()) // go-redis replaces its cut connection
}

func TestProxyBlock(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())

	c1, err := net.Dial("tcp", p.Addr())
	noErr(t, err)
	defer c1.Close()
	r1 := bufio.NewReader(c1)
	equal(t, rawPing(t, c1, r1), "+PONG\r\n")

	p.Block()
	p.Block()
	c2, err := net.Dial("tcp", p.Addr())
	noErr(t, err) // new connections are accepted while blocked
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	conns := []struct {
		c net.Conn
		r *bufio.Reader
	}{{c1, r1}, {c2, r2}}
	for _, cr := range conns {
		_, err := cr.c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		noErr(t, err)
		noErr(t, cr.c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		_, err = cr.r.ReadByte()
		var netErr net.Error
		if !errors.As(err, &netErr) || !netErr.Timeout() {
			t.Fatalf("read while blocked: %v; want a timeout", err)
		}
	}

	p.Unblock()
	p.Unblock()
	for _, cr := range conns {
		noErr(t, cr.c.SetReadDeadline(time.Now().Add(5*time.Second)))
		line, err := cr.r.ReadString('\n')
		noErr(t, err)
		equal(t, line, "+PONG\r\n") // held bytes are delivered after Unblock
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	equal(t, len(c.Servers), 3)
	equal(t, len(c.Addrs()), 3)

	ctx := context.Background()
	cc := c.Client(t)
	for i := range 100 {
		key := redistest.Key(t, fmt.Sprint(i))
		noErr(t, cc.Set(ctx, key, i, 0).Err())
		got, err := cc.Get(ctx, key).Result()
		noErr(t, err)
		equal(t, got, fmt.Sprint(i))
	}
	for _, s := range c.Servers {
		if n := s.Do(t, "DBSIZE").(int64); n == 0 {
			t.Errorf("node %s holds no keys; want the keys spread over every master", s.Addr())
		}
	}

	// StartCluster returned only once the bus links carry PUBLISH: a message
	// published on one node reaches a subscriber on another at once.
	sub := redis.NewClient(&redis.Options{Addr: c.Servers[0].Addr()})
	defer sub.Close()
	channel := redistest.Key(t, "channel")
	ps := sub.Subscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx)
	noErr(t, err)
	for _, s := range c.Servers[1:] {
		s.Do(t, "PUBLISH", channel, s.Addr())
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		noErr(t, err)
		equal(t, msg.(*redis.Message).Payload, s.Addr())
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t)
	matches(t, `^127\.0\.0\.1:\d+$`, sn.SentinelAddr)

	ctx := context.Background()
	rdb := sn.Client(t)
	key := redistest.Key(t)
	noErr(t, rdb.Set(ctx, key, "via-sentinel", 0).Err())
	got, err := rdb.Get(ctx, key).Result()
	noErr(t, err)
	equal(t, got, "via-sentinel")
	equal(t, sn.Master.Do(t, "GET", key), any("via-sentinel"))
}

// rawPing sends PING on conn and returns the reply line.
func rawPing(t *testing.T, conn net.Conn, r *bufio.Reader) string {
	t.Helper()
	noErr(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	noErr(t, err)
	line, err := r.ReadString('\n')
	noErr(t, err)
	return line
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equal[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func matches(t *testing.T, pattern, s string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(s) {
		t.Errorf("%q does not match %s", s, pattern)
	}
}

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A cluster with replicas: a slot migrates with its keys, a replica takes
// over with CLUSTER FAILOVER, and after its master is killed a replica is
// elected in its place; the cluster serves every key throughout.
func TestClusterReplicasFailoverMigrate(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1), redistest.ClusterNodeTimeout(2*time.Second))
	equal(t, len(c.Replicas), 3)
	equal(t, len(c.Nodes()), 6)
	equal(t, c.MasterOf(t, 0), c.Servers[0])
	equal(t, c.ReplicaOf(t, c.Servers[0]), c.Replicas[0])

	ctx := context.Background()
	cc := c.Client(t)
	key := "{" + redistest.Key(t) + "}"
	noErr(t, cc.Set(ctx, key, "v", 0).Err())
	slot := int(c.Servers[0].Do(t, "CLUSTER", "KEYSLOT", key).(int64))
	from := c.MasterOf(t, slot)
	to := c.Servers[0]
	if from == to {
		to = c.Servers[1]
	}
	c.MigrateSlot(t, slot, to)
	equal(t, c.MasterOf(t, slot), to)
	equal(t, to.Do(t, "GET", key), any("v"))
	got, err := cc.Get(ctx, key).Result()
	noErr(t, err)
	equal(t, got, "v")

	r := c.ReplicaOf(t, c.Servers[0])
	c.Failover(t, r)
	equal(t, c.MasterOf(t, 0), r)
	equal(t, c.ReplicaOf(t, r), c.Servers[0])

	next := c.KillMaster(t, r)
	equal(t, next, c.Servers[0])
	equal(t, c.MasterOf(t, 0), c.Servers[0])
	noErr(t, cc.Set(ctx, key, "w", 0).Err())
}

// Through a sentinel with a replica, SENTINEL FAILOVER promotes the
// replica; the failover client follows it.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	equal(t, len(sn.Replicas), 1)
	old, replica := sn.Master, sn.Replicas[0]
	ctx := context.Background()
	rdb := sn.Client(t)
	key := redistest.Key(t)
	noErr(t, rdb.Set(ctx, key, "before", 0).Err())
	next := sn.Failover(t)
	equal(t, next, replica)
	equal(t, sn.Master, replica)
	equal(t, sn.Replicas[0], old)
	eventually(t, 10*time.Second, func() error { return rdb.Set(ctx, key, "after", 0).Err() })
	equal(t, replica.Do(t, "GET", key), any("after"))
}

func TestProxyLatency(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	noErr(t, rdb.Ping(ctx).Err())

	p.SetLatency(150 * time.Millisecond)
	start := time.Now()
	noErr(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("PING with 150ms latency each way took %v; want at least 300ms", d)
	}

	p.SetLatency(0)
	start = time.Now()
	noErr(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("PING after the latency ended took %v", d)
	}
}

// TestProxyStallLateDelivery checks the late copy a stall makes: a command
// sent on a stalled connection whose client then gives up and closes is
// still run by the server when the stall ends.
func TestProxyStallLateDelivery(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	key := redistest.Key(t)

	conn, err := net.Dial("tcp", p.Addr())
	noErr(t, err)
	r := bufio.NewReader(conn)
	equal(t, rawPing(t, conn, r), "+PONG\r\n")

	equal(t, p.Stall(time.Second), 1)
	newer, err := net.Dial("tcp", p.Addr()) // not stalled: opened after Stall
	noErr(t, err)
	defer newer.Close()
	equal(t, rawPing(t, newer, bufio.NewReader(newer)), "+PONG\r\n")

	cmd := fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", len(key), key)
	_, err = conn.Write([]byte(cmd))
	noErr(t, err)
	noErr(t, conn.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = r.ReadByte()
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("read while stalled: %v; want a timeout", err)
	}
	noErr(t, conn.Close()) // the client gives up
	equal(t, s.Do(t, "EXISTS", key), any(int64(0)))

	deadline := time.Now().Add(5 * time.Second)
	for s.Do(t, "GET", key) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the stalled INCR was never delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	equal(t, s.Do(t, "GET", key), any("1"))
	equal(t, p.Held(), 1)
	deadline = time.Now().Add(5 * time.Second)
	for p.LateDelivered() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("LateDelivered = %d; want 1", p.LateDelivered())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Do(t, "DEL", key)
}

// TestProxyStallThenReply checks that a stalled client that waits gets its
// reply once the stall ends, and that later requests are not held.
func TestProxyStallThenReply(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 1, ReadTimeout: 5 * time.Second})
	defer rdb.Close()
	noErr(t, rdb.Ping(ctx).Err())

	p.Stall(400 * time.Millisecond)
	start := time.Now()
	noErr(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Fatalf("PING on a stalled connection took %v; want the stall", d)
	}
	start = time.Now()
	noErr(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("PING after the stall took %v", d)
	}
	equal(t, p.LateDelivered(), 0)
}
