package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeTimeout bounds each step of a probe.
const probeTimeout = 2 * time.Second

// probeServer finds out why the server at addr did not answer the first
// command, when go-redis's error alone does not say (a handshake that
// hangs gives only "context deadline exceeded"): it connects itself and
// tells whether TCP connects, whether a TLS handshake completes (tlsConf
// set) or whether the server answers a plaintext PING (tlsConf nil). It
// returns what it found, for the message; "" when the probe succeeded and
// has nothing to add.
func probeServer(ctx context.Context, network, addr string, tlsConf *tls.Config) string {
	if network == "" {
		network = "tcp"
	}
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return fmt.Sprintf("%s does not accept connections: %s", addr, dialErrText(err))
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if tlsConf != nil {
		conf := tlsConf.Clone()
		if conf.ServerName == "" && !conf.InsecureSkipVerify {
			conf.ServerName, _, _ = net.SplitHostPort(addr)
		}
		err := tls.Client(conn, conf).HandshakeContext(ctx)
		var rh tls.RecordHeaderError
		switch {
		case err == nil:
			return ""
		case isTimeout(err):
			return fmt.Sprintf("%s accepts connections but did not complete a TLS handshake within %v: it does not seem to speak TLS; for a server without TLS use redis:// instead of rediss://", addr, probeTimeout)
		case errors.As(err, &rh), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			return fmt.Sprintf("%s answered the TLS handshake with something else than TLS (%v): for a server without TLS use redis:// instead of rediss://", addr, err)
		}
		return fmt.Sprintf("%s accepts connections but the TLS handshake failed: %v", addr, err)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return fmt.Sprintf("%s accepts connections but a PING could not be sent: %s", addr, dialErrText(err))
	}
	b := make([]byte, 1)
	_, err = conn.Read(b)
	switch {
	case err == nil && b[0] == 0x15: // a TLS alert record
		return fmt.Sprintf("%s answered a plaintext PING with a TLS alert: it requires TLS; use rediss:// instead of redis://", addr)
	case err == nil:
		return ""
	case isTimeout(err):
		return fmt.Sprintf("%s accepts connections but did not answer a PING within %v: it may be a TLS port (use rediss://), not a Redis server, or overloaded", addr, probeTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("%s closed the connection on a plaintext PING: it may require TLS; use rediss:// instead of redis://", addr)
	}
	return fmt.Sprintf("%s accepts connections but reading its answer to a PING failed: %s", addr, dialErrText(err))
}

// probeSentinels finds out why no master was found through the sentinels
// at addrs: which sentinels cannot be reached, and, through the first that
// answers, where it says the master is and whether that answers. It
// returns what it found, for the message; "" when it found nothing wrong.
func probeSentinels(ctx context.Context, fo *redis.FailoverOptions) string {
	var found []string
	for _, addr := range fo.SentinelAddrs {
		if hint := probeServer(ctx, "tcp", addr, fo.TLSConfig); hint != "" {
			found = append(found, "sentinel "+hint)
			continue
		}
		sc := redis.NewSentinelClient(&redis.Options{
			Addr: addr, Username: fo.SentinelUsername, Password: fo.SentinelPassword, TLSConfig: fo.TLSConfig,
			DialTimeout: probeTimeout, ReadTimeout: probeTimeout, WriteTimeout: probeTimeout, MaxRetries: -1,
		})
		master, err := sc.GetMasterAddrByName(ctx, fo.MasterName).Result()
		_ = sc.Close()
		switch {
		case errors.Is(err, redis.Nil):
			found = append(found, fmt.Sprintf("sentinel %s knows no master named %q", addr, fo.MasterName))
			continue
		case err != nil:
			found = append(found, fmt.Sprintf("sentinel %s accepts connections but did not answer as a sentinel: %v", addr, err))
			continue
		}
		masterAddr := net.JoinHostPort(master[0], master[1])
		if hint := probeServer(ctx, "tcp", masterAddr, fo.TLSConfig); hint != "" {
			return strings.Join(append(found, fmt.Sprintf("sentinel %s says master %q is at %s, but %s", addr, fo.MasterName, masterAddr, hint)), "; ")
		}
		return strings.Join(append(found, fmt.Sprintf("sentinel %s says master %q is at %s, which answers", addr, fo.MasterName, masterAddr)), "; ")
	}
	return strings.Join(found, "; ")
}

// sentinelsRefuse dials every sentinel of fo at once and reports whether
// each refused the connection (nothing listens on its port), with what the
// message should say. go-redis would go on dialing them until the first
// command's deadline (connectTimeout) before saying so. It returns false
// as soon as one connects or fails otherwise (a timeout: that one may yet
// answer, and go-redis gets its chance).
func sentinelsRefuse(ctx context.Context, fo *redis.FailoverOptions) (string, bool) {
	type dialed struct {
		i   int // the sentinel's place in the URL
		err error
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	ch := make(chan dialed, len(fo.SentinelAddrs))
	for i, addr := range fo.SentinelAddrs {
		go func() {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = conn.Close()
			}
			ch <- dialed{i, err}
		}()
	}
	found := make([]string, len(fo.SentinelAddrs)) // in the URL's order
	for range fo.SentinelAddrs {
		r := <-ch
		if !errors.Is(r.err, syscall.ECONNREFUSED) {
			return "", false // cancel ends the other dials; ch is buffered
		}
		found[r.i] = fmt.Sprintf("sentinel %s does not accept connections: %s", fo.SentinelAddrs[r.i], dialErrText(r.err))
	}
	return strings.Join(found, "; "), true
}

// dialErrText is a network error without the "dial tcp 1.2.3.4:5->"
// prefix that the message names already.
func dialErrText(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		if isTimeout(err) {
			return fmt.Sprintf("no answer within %v (%v)", probeTimeout, oe.Err)
		}
		return oe.Err.Error()
	}
	return err.Error()
}

// isTimeout reports whether err is a network timeout or a deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}
