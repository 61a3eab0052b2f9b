package redistest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// The harness is tested with the standard library only, so that it does
// not depend on testify's own dependencies being in go.sum.

func TestStart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", s.Port()), s.Addr())

	ctx := context.Background()
	rdb := s.Client(t)
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, any("v"), s.Do(t, "GET", "k"))
	require.Equal(t, nil, s.Do(t, "GET", "missing")) // a nil reply is nil, not an error
	require.Equal(t, any([]any{"save", ""}), s.Do(t, "CONFIG", "GET", "save"))
	require.Equal(t, any([]any{"appendonly", "no"}), s.Do(t, "CONFIG", "GET", "appendonly"))
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.WithArgs("--maxmemory", "12mb", "--maxmemory-policy", "allkeys-lru"))
	require.Equal(t, any([]any{"maxmemory", "12582912"}), s.Do(t, "CONFIG", "GET", "maxmemory"))
	require.Equal(t, any([]any{"maxmemory-policy", "allkeys-lru"}), s.Do(t, "CONFIG", "GET", "maxmemory-policy"))
}

func TestShared(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	require.Same(t, s, redistest.Shared(t), "Shared returned another server")

	key := redistest.Key(t)
	ctx := context.Background()
	require.NoError(t, s.Client(t).Set(ctx, key, "x", time.Minute).Err())
	require.Equal(t, any("x"), s.Do(t, "GET", key))
}

func TestKey(t *testing.T) {
	t.Parallel()
	k1, k2 := redistest.Key(t), redistest.Key(t)
	assert.NotEqual(t, k1, k2, "two calls returned the same key")
	assert.Regexp(t, `^t:TestKey:[0-9a-f]{8}$`, k1)
	assert.Regexp(t, `^t:TestKey:[0-9a-f]{8}:lock:owner$`, redistest.Key(t, "lock", "owner"))
	assert.Regexp(t, `^t:TestKey:[0-9a-f]{8}:_tag_$`, redistest.Key(t, "{tag}")) // no hash tags from parts

	t.Run("sub {x}/y z", func(t *testing.T) {
		assert.Regexp(t, `^t:TestKey_sub__x__y_z:[0-9a-f]{8}$`, redistest.Key(t))
	})

	seen := map[string]bool{}
	for range 1000 {
		k := redistest.Key(t)
		require.False(t, seen[k], "duplicate key %s", k)
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
	require.NoError(t, rdb.Set(ctx, key, "v", 0).Err())

	s.Stop(t)
	s.Stop(t) // stopping twice is harmless
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		require.FailNow(t, "the port still accepts connections after Stop")
	}
	require.Error(t, rdb.Ping(ctx).Err(), "PING succeeded on a stopped server")

	s.Restart(t)
	require.Equal(t, port, s.Port())
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), s.Addr())
	redistest.Eventually(t, 5*time.Second, "PING after Restart", func() error { return rdb.Ping(ctx).Err() })
	require.Nil(t, s.Do(t, "GET", key)) // nothing is persisted across a restart

	s.Restart(t) // restarting a running server works too
	require.Equal(t, any("PONG"), s.Do(t, "PING"))
	require.Equal(t, port, s.Port())
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := context.Background()
	rdb := s.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.MaxRetries = -1
	})
	require.NoError(t, rdb.Ping(ctx).Err())

	s.Pause(t)
	start := time.Now()
	err := rdb.Ping(ctx).Err()
	var netErr net.Error
	require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "PING on a paused server: %v; want a timeout", err)
	assert.LessOrEqual(t, time.Since(start), 5*time.Second, "PING took too long to time out with a 200ms ReadTimeout")

	s.Resume(t)
	require.NoError(t, rdb.Ping(ctx).Err())
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	require.NotEqual(t, s.Addr(), p.Addr(), "proxy and server share an address")

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	key := redistest.Key(t)
	big := strings.Repeat("x", 100_000) // several chunks each way
	require.NoError(t, rdb.Set(ctx, key, big, time.Minute).Err())
	got, err := rdb.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, big, got)
	require.Equal(t, any(int64(100_000)), s.Do(t, "STRLEN", key))
	require.Equal(t, 0, p.Dropped())
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
	require.NoError(t, rdb.Ping(ctx).Err()) // connection set up before arming

	p.DropNextReply()
	n, err := rdb.Incr(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, int64(2), n) // once before the lost reply, once on retry
	require.Equal(t, any("2"), s.Do(t, "GET", key))
	require.Equal(t, 1, p.Dropped())

	n, err = rdb.Incr(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), n) // disarmed after firing once
	require.Equal(t, 1, p.Dropped())
	s.Do(t, "DEL", key)
}

func TestProxyCutAll(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())

	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	require.Equal(t, "+PONG\r\n", rawPing(t, conn, r))

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	require.NoError(t, rdb.Ping(ctx).Err())

	p.CutAll()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = r.ReadByte()
	var netErr net.Error
	require.Error(t, err, "read on a cut connection; want EOF or reset")
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "read on a cut connection: %v; want EOF or reset", err)

	conn2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err) // new connections are still accepted
	defer conn2.Close()
	require.Equal(t, "+PONG\r\n", rawPing(t, conn2, bufio.NewReader(conn2)))
	require.NoError(t, rdb.Ping(ctx).Err()) // go-redis replaces its cut connection
}

func TestProxyBlock(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())

	c1, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c1.Close()
	r1 := bufio.NewReader(c1)
	require.Equal(t, "+PONG\r\n", rawPing(t, c1, r1))

	p.Block()
	p.Block()
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err) // new connections are accepted while blocked
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	conns := []struct {
		c net.Conn
		r *bufio.Reader
	}{{c1, r1}, {c2, r2}}
	for _, cr := range conns {
		_, err := cr.c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		require.NoError(t, err)
		require.NoError(t, cr.c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		_, err = cr.r.ReadByte()
		var netErr net.Error
		require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "read while blocked: %v; want a timeout", err)
	}

	p.Unblock()
	p.Unblock()
	for _, cr := range conns {
		require.NoError(t, cr.c.SetReadDeadline(time.Now().Add(5*time.Second)))
		line, err := cr.r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", line) // held bytes are delivered after Unblock
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	require.Equal(t, 3, len(c.Servers))
	require.Equal(t, 3, len(c.Addrs()))

	ctx := context.Background()
	cc := c.Client(t)
	for i := range 100 {
		key := redistest.Key(t, fmt.Sprint(i))
		require.NoError(t, cc.Set(ctx, key, i, 0).Err())
		got, err := cc.Get(ctx, key).Result()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), got)
	}
	for _, s := range c.Servers {
		assert.NotZero(t, s.Do(t, "DBSIZE").(int64), "node %s holds no keys; want the keys spread over every master", s.Addr())
	}

	// StartCluster returned only once the bus links carry PUBLISH: a message
	// published on one node reaches a subscriber on another at once.
	sub := redis.NewClient(&redis.Options{Addr: c.Servers[0].Addr()})
	defer sub.Close()
	channel := redistest.Key(t, "channel")
	ps := sub.Subscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	for _, s := range c.Servers[1:] {
		s.Do(t, "PUBLISH", channel, s.Addr())
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, s.Addr(), msg.(*redis.Message).Payload)
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, sn.SentinelAddr)

	ctx := context.Background()
	rdb := sn.Client(t)
	key := redistest.Key(t)
	require.NoError(t, rdb.Set(ctx, key, "via-sentinel", 0).Err())
	got, err := rdb.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, "via-sentinel", got)
	require.Equal(t, any("via-sentinel"), sn.Master.Do(t, "GET", key))
}

// rawPing sends PING on conn and returns the reply line.
func rawPing(t *testing.T, conn net.Conn, r *bufio.Reader) string {
	t.Helper()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	return line
}

// A cluster with replicas: a slot migrates with its keys, a replica takes
// over with CLUSTER FAILOVER, and after its master is killed a replica is
// elected in its place; the cluster serves every key throughout.
func TestClusterReplicasFailoverMigrate(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, redistest.ClusterReplicas(1), redistest.ClusterNodeTimeout(2*time.Second))
	require.Equal(t, 3, len(c.Replicas))
	require.Equal(t, 6, len(c.Nodes()))
	require.Equal(t, c.Servers[0], c.MasterOf(t, 0))
	require.Equal(t, c.Replicas[0], c.ReplicaOf(t, c.Servers[0]))

	ctx := context.Background()
	cc := c.Client(t)
	key := "{" + redistest.Key(t) + "}"
	require.NoError(t, cc.Set(ctx, key, "v", 0).Err())
	slot := int(c.Servers[0].Do(t, "CLUSTER", "KEYSLOT", key).(int64))
	from := c.MasterOf(t, slot)
	to := c.Servers[0]
	if from == to {
		to = c.Servers[1]
	}
	c.MigrateSlot(t, slot, to)
	require.Equal(t, to, c.MasterOf(t, slot))
	require.Equal(t, any("v"), to.Do(t, "GET", key))
	got, err := cc.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, "v", got)

	r := c.ReplicaOf(t, c.Servers[0])
	c.Failover(t, r)
	require.Equal(t, r, c.MasterOf(t, 0))
	require.Equal(t, c.Servers[0], c.ReplicaOf(t, r))

	next := c.KillMaster(t, r)
	require.Equal(t, c.Servers[0], next)
	require.Equal(t, c.Servers[0], c.MasterOf(t, 0))
	require.NoError(t, cc.Set(ctx, key, "w", 0).Err())
}

// Through a sentinel with a replica, SENTINEL FAILOVER promotes the
// replica; the failover client follows it.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1))
	require.Equal(t, 1, len(sn.Replicas))
	old, replica := sn.Master, sn.Replicas[0]
	ctx := context.Background()
	rdb := sn.Client(t)
	key := redistest.Key(t)
	require.NoError(t, rdb.Set(ctx, key, "before", 0).Err())
	next := sn.Failover(t)
	require.Equal(t, replica, next)
	require.Equal(t, replica, sn.Master)
	require.Equal(t, old, sn.Replicas[0])
	redistest.Eventually(t, 10*time.Second, "SET through the sentinel after the failover", func() error { return rdb.Set(ctx, key, "after", 0).Err() })
	require.Equal(t, any("after"), replica.Do(t, "GET", key))
}

// TestSentinelKillMaster kills the master of a persistent pair: the
// replica, read while the master is down, has the acknowledged write and
// is promoted; the former master comes back as its replica. A replica
// restarted empty copies the master's data again.
func TestSentinelKillMaster(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t, redistest.SentinelReplicas(1), redistest.SentinelServerArgs("--appendonly", "yes"))
	old, replica := sn.Master, sn.Replicas[0]
	ctx := context.Background()
	key := redistest.Key(t)
	old.Do(t, "SET", key, "before")
	require.Equal(t, any(int64(1)), old.Do(t, "WAIT", 1, 5000))
	var whileDown any
	next := sn.KillMaster(t, func() { whileDown = replica.Do(t, "GET", key) })
	require.Equal(t, any("before"), whileDown)
	require.Equal(t, replica, next)
	require.Equal(t, replica, sn.Master)
	require.Equal(t, old, sn.Replicas[0])
	assert.Contains(t, old.Do(t, "INFO", "replication"), "role:slave")
	rdb := sn.Client(t)
	redistest.Eventually(t, 10*time.Second, "SET through the sentinel after the failover", func() error { return rdb.Set(ctx, key, "after", 0).Err() })

	sn.RestartReplica(t, 0, true)
	redistest.Eventually(t, 10*time.Second, "the emptied replica has the data again", func() error {
		if v := old.Do(t, "GET", key); v != "after" {
			return fmt.Errorf("replica has %v", v)
		}
		return nil
	})
}

func TestProxyLatency(t *testing.T) {
	t.Parallel()
	s := redistest.Shared(t)
	p := redistest.NewProxy(t, s.Addr())
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	require.NoError(t, rdb.Ping(ctx).Err())

	p.SetLatency(150 * time.Millisecond)
	start := time.Now()
	require.NoError(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("PING with 150ms latency each way took %v; want at least 300ms", d)
	}

	p.SetLatency(0)
	start = time.Now()
	require.NoError(t, rdb.Ping(ctx).Err())
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
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	assert.Equal(t, rawPing(t, conn, r), "+PONG\r\n")

	assert.Equal(t, p.Stall(time.Second), 1)
	newer, err := net.Dial("tcp", p.Addr()) // not stalled: opened after Stall
	require.NoError(t, err)
	defer newer.Close()
	assert.Equal(t, rawPing(t, newer, bufio.NewReader(newer)), "+PONG\r\n")

	cmd := fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", len(key), key)
	_, err = conn.Write([]byte(cmd))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = r.ReadByte()
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("read while stalled: %v; want a timeout", err)
	}
	require.NoError(t, conn.Close()) // the client gives up
	assert.Equal(t, s.Do(t, "EXISTS", key), any(int64(0)))

	deadline := time.Now().Add(5 * time.Second)
	for s.Do(t, "GET", key) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the stalled INCR was never delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, s.Do(t, "GET", key), any("1"))
	assert.Equal(t, p.Held(), 1)
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
	require.NoError(t, rdb.Ping(ctx).Err())

	p.Stall(400 * time.Millisecond)
	start := time.Now()
	require.NoError(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Fatalf("PING on a stalled connection took %v; want the stall", d)
	}
	start = time.Now()
	require.NoError(t, rdb.Ping(ctx).Err())
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("PING after the stall took %v", d)
	}
	assert.Equal(t, p.LateDelivered(), 0)
}
