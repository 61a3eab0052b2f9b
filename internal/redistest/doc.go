// Package redistest runs redisync's tests against real Redis servers: it
// starts redis-server processes on free loopback ports, Redis Clusters,
// Sentinels, and a TCP proxy for fault injection. It never mocks Redis and
// never skips a test because Redis is missing: a test that cannot get a
// server fails, saying how to install one.
//
// # Usage
//
// Every test package that uses the harness calls Main from TestMain, which
// stops the shared server and checks for leaked goroutines after the tests:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		rdb := redistest.Shared(t).Client(t)
//		key := redistest.Key(t, "lock")
//		// ...
//	}
//
// Shared returns one server per test binary; tests on it must name keys
// with Key and must not stop, pause, restart or flush it. Tests that do
// any of that, or need special configuration, use their own server from
// Start. Everything a test starts (servers, clients, proxies) is stopped
// or closed by t.Cleanup.
//
// Tests assert with testify (require, assert). A test waits for a condition,
// never for a guessed time: Eventually polls a condition that says what is
// missing, testify's require.Eventually and require.Never one that does not.
// Redisync clients for tests come from internal/clienttest (Shared, New,
// WaitWaiters, NoSubscriptions), which is apart from this package because
// it imports the root package, and internal/core's own tests use this one.
//
// # Where redis-server comes from
//
// Start looks, in order, for:
//
//  1. a redis-server binary on PATH, or in /usr/bin, /usr/sbin,
//     /usr/local/bin, /usr/local/sbin or /opt/homebrew/bin. Each server is
//     started as
//     redis-server --port P --bind 127.0.0.1 --protected-mode no --dir D
//     --daemonize no --save "" --appendonly no [WithArgs...]
//     with its own temporary directory D and a port P probed free just
//     before (with retries if another process takes it first). On Linux
//     the server is killed by the kernel if the test binary dies.
//  2. a Docker engine ("docker info" succeeds within 5 seconds): the
//     harness runs "go run ./cmd/rediscontainer" in the testtools module,
//     which starts a redis:7 container with testcontainers-go. That module
//     is separate so that the library module does not depend on
//     testcontainers-go. Stop, Restart, Pause and Resume fail the test on
//     such a server, and clusters and sentinels need a local binary.
//  3. otherwise the test fails.
//
// Redis 7.0 or later is required (clusters use cluster-port and CLUSTER
// ADDSLOTSRANGE). To get redis-server, on Debian or Ubuntu run
//
//	apt-get install -y redis-server redis-sentinel
//
// on macOS "brew install redis". "make test" at the repository root
// installs the Debian packages when redis-server is missing, then runs
// every module's tests.
//
// # Faults
//
// Server.Stop, Restart, Pause (SIGSTOP) and Resume (SIGCONT) act on the
// process. Sentinel.KillMaster kills the master and has the sentinel
// promote its replica at once, then brings the former master back as a
// replica; Sentinel.RestartReplica restarts a replica, empty or not.
// Cluster.Failover, KillMaster (promotion after the node timeout),
// KillMasterNow (promotion at once) and MigrateSlot change who serves a
// slot. Proxy sits between a client and a server and can lose one reply
// after the server executed the command (DropNextReply), cut every
// connection (CutAll), partition the network (Block, Unblock), add latency
// (SetLatency), or stall the requests of open connections and deliver them
// late, even after their client gave up (Stall).
package redistest
