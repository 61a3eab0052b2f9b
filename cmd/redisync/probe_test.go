package main

import (
	"net"
	"strings"
	"testing"
)

// closingServer listens on a local port and closes every connection as
// soon as it has read something, as a TLS-only Redis port does with a
// plaintext client. It returns the address.
func closingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = c.Read(make([]byte, 64))
				_ = c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// closedPort returns a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestConnectErrorsSayWhat: TLS to a plaintext server and an unreachable
// sentinel said only "context deadline exceeded". The message now says
// what the command found out, with the address and what to do.
func TestConnectErrorsSayWhat(t *testing.T) {
	t.Parallel()
	plain := redisAddr(t)
	tlsOnly := closingServer(t)
	s1, s2 := closedPort(t), closedPort(t)
	for _, tc := range []struct {
		desc, url string
		want      []string
		// process: run the command as a process, because go-redis goes on
		// dialling (a TLS handshake that hangs, the sentinels) in
		// goroutines of its own for seconds after Close, which the leak
		// check at the end of the tests would report.
		process bool
	}{
		{"TLS to a plaintext server", "rediss://" + plain, []string{
			"cannot reach Redis at rediss://" + plain + ": no answer within 5s (context deadline exceeded); ",
			plain + " accepts connections but did not complete a TLS handshake within 2s: it does not seem to speak TLS; for a server without TLS use redis:// instead of rediss://",
		}, true},
		{"plaintext to a TLS server", "redis://" + tlsOnly, []string{
			"cannot reach Redis at redis://" + tlsOnly + ": ",
			tlsOnly + " closed the connection on a plaintext PING: it may require TLS; use rediss:// instead of redis://",
		}, false},
		{"unreachable sentinels", "redis-sentinel://" + s1 + "," + s2 + "/mymaster", []string{
			"cannot reach Redis at redis-sentinel://" + s1 + "," + s2 + "/mymaster: ",
			"sentinel " + s1 + " does not accept connections: connect: connection refused; sentinel " + s2 + " does not accept connections: connect: connection refused",
		}, true},
		{"a server named as a sentinel", "redis-sentinel://" + plain + "/mymaster", []string{
			"the servers at redis-sentinel://" + plain + "/mymaster are not sentinels (they do not know the SENTINEL command): name the sentinels (port 26379 by default), or use redis:// for a server itself",
		}, true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			args := []string{"inspect", "-redis", tc.url, "x"}
			var res result
			if tc.process {
				res = runProcess(t, args...)
			} else {
				res = runCmd(t, nil, args...)
			}
			if res.code != exitError {
				t.Errorf("exit %d, want %d", res.code, exitError)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr %q does not contain %q", res.stderr, w)
				}
			}
		})
	}
}

// redisAddr is the shared test server's host:port.
func redisAddr(t *testing.T) string { return strings.TrimPrefix(testURL(t), "redis://") }
