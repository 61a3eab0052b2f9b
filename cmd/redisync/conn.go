package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// connectTimeout bounds the first PING to a server named by a URL.
const connectTimeout = 5 * time.Second

// serverURL returns the server the command should use: the -redis flag
// when set, else $REDIS_URL; "" when neither is set.
func serverURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return strings.TrimSpace(env("REDIS_URL"))
}

// parseURL parses a Redis URL with go-redis's ParseURL (redis://, rediss://
// for TLS, unix://; redis-sentinel:// is parseSentinelURL's). A bare
// "host:port" is taken as redis://host:port. A bad URL is a usage error.
func parseURL(raw string) (*redis.Options, error) {
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, badURL(raw, err)
	}
	return o, nil
}

// badURL is the usage error for the URL raw that did not parse: the URL
// with its password hidden, and what is wrong with it.
func badURL(raw string, err error) error {
	return usagef("bad Redis URL %q: %s", redactURL(raw), urlErrText(raw, err))
}

// urlErrText says what is wrong with the URL raw, without the URL itself:
// a *url.Error quotes the whole URL, password included, before its reason
// (`parse "redis://u:pw@h:x": invalid port ":x" after host`). A reason that
// quotes part of the password (one with an unencoded "/" makes url.Parse
// take what precedes it for a port) is replaced by advice.
func urlErrText(raw string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	reason := strings.TrimPrefix(err.Error(), "redis: ")
	if pw := urlPassword(raw); pw != "" {
		for _, q := range quoted(reason) {
			if q = strings.Trim(q, ":/@?#"); q != "" && (strings.Contains(pw, q) || strings.Contains(q, pw)) {
				return "it does not parse; percent-encode any / ? # @ : in the user name and password"
			}
		}
	}
	return reason
}

// quoted returns the Go-quoted strings in s, unquoted.
func quoted(s string) []string {
	var qs []string
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return qs
		}
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			return qs
		}
		if u, err := strconv.Unquote(q); err == nil {
			qs = append(qs, u)
		}
		s = s[i+len(q):]
	}
}

// urlPassword returns the password in the user info of the URL raw, as
// redactURL finds it; "" when there is none.
func urlPassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	head, _, _ := strings.Cut(rest, "?")
	at := strings.LastIndexByte(head, '@')
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(head[:at], ":")
	return pw
}

// redactedPassword replaces a password in messages, as url.URL.Redacted.
const redactedPassword = "xxxxx"

// redactURL hides the passwords of a URL for messages: the one in its
// user info and the values of password and sentinel_password query
// parameters. It does not need the URL to parse, so a URL with a typo
// is shown as typed, but without its password.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	head, query, hasQuery := strings.Cut(rest, "?")
	// The user info ends at the last "@" before the query: a password
	// may contain "/" or "@" when it was not percent-encoded.
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if user, _, hasPassword := strings.Cut(head[:at], ":"); hasPassword {
			head = user + ":" + redactedPassword + head[at:]
		}
	}
	if !hasQuery {
		return scheme + "://" + head
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		k, _, hasValue := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(k); err == nil && hasValue && (key == "password" || key == "sentinel_password") {
			params[i] = k + "=" + redactedPassword
		}
	}
	return scheme + "://" + head + "?" + strings.Join(params, "&")
}

// server is a connection to the server a URL names.
type server struct {
	rdb redis.UniversalClient
	// desc names the server for messages, without passwords.
	desc string
	// newClient returns another client with rdb's options (the demo gives
	// one to each simulated process).
	newClient func() redis.UniversalClient
}

// dial connects to the server at raw and checks that it answers. A
// redis-sentinel:// URL gives a failover client that finds the master
// through the sentinels. When the server of any other URL is a Redis
// Cluster node, dial returns a cluster client seeded with that node, so
// keys are found on whichever node owns them.
func dial(ctx context.Context, raw string) (*server, error) {
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if isSentinelURL(raw) {
		fo, err := parseSentinelURL(raw)
		if err != nil {
			return nil, badURL(raw, err)
		}
		desc := redactURL(raw)
		// go-redis fills in defaults in the options it is given: each
		// client gets a copy.
		if found, ok := sentinelsRefuse(pctx, fo); ok {
			return nil, fmt.Errorf("cannot reach Redis at %s: no sentinel accepts connections; %s", desc, found)
		}
		newClient := func() redis.UniversalClient { o := *fo; return redis.NewFailoverClient(&o) }
		rdb := newClient()
		if err := rdb.Ping(pctx).Err(); err != nil {
			_ = rdb.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, sentinelError(ctx, desc, fo, err)
		}
		return &server{rdb, desc, newClient}, nil
	}

	o, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	desc := redactURL(raw)
	if !strings.Contains(raw, "://") {
		desc = redactURL("redis://" + raw)
	}
	newSingle := func() *redis.Client { oc := *o; return redis.NewClient(&oc) }
	rdb := newSingle()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, connectError(desc, err, probeUnlessRefused(ctx, err, o.Network, o.Addr, o.TLSConfig))
	}
	if !isClusterNode(pctx, rdb) {
		return &server{rdb, desc, func() redis.UniversalClient { return newSingle() }}, nil
	}
	_ = rdb.Close()
	co := redis.ClusterOptions{
		Addrs:        []string{o.Addr},
		Username:     o.Username,
		Password:     o.Password,
		TLSConfig:    o.TLSConfig,
		Protocol:     o.Protocol,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		MaxRetries:   o.MaxRetries,
	}
	newClient := func() redis.UniversalClient { oc := co; return redis.NewClusterClient(&oc) }
	desc += " (cluster)"
	cc := newClient()
	if err := cc.Ping(pctx).Err(); err != nil {
		_ = cc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, connectError(desc, err, "")
	}
	return &server{cc, desc, newClient}, nil
}

// connectError describes a failed first command on the server desc. A
// server that answered with an error (a wrong password, a database index
// it does not have, a server still loading) is not an unreachable one, and
// an operator fixes them differently, so the two are told apart. found is
// what a probe of the server found (probeServer), "" if nothing.
func connectError(desc string, err error, found string) error {
	if refused(err) {
		return fmt.Errorf("connected to Redis at %s, but it refused: %w", desc, err)
	}
	text := "cannot reach Redis at %s: %w"
	if errors.Is(err, context.DeadlineExceeded) {
		text = "cannot reach Redis at %s: no answer within " + connectTimeout.String() + " (%w)"
	}
	if found != "" {
		return fmt.Errorf(text+"; %s", desc, err, found)
	}
	return fmt.Errorf(text, desc, err)
}

// refused reports whether err is an error answer of the server.
func refused(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// probeUnlessRefused probes the server (probeServer) after the failed
// first command err when err says little: a timeout, or a connection
// closed by the server. An error answer, a refused connection or a
// certificate error already say what happened.
func probeUnlessRefused(ctx context.Context, err error, network, addr string, tlsConf *tls.Config) string {
	if refused(err) || ctx.Err() != nil || !(isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return ""
	}
	return probeServer(ctx, network, addr, tlsConf)
}

// isClusterNode reports whether rdb's server runs in cluster mode. A server
// that does not answer INFO (some managed services) is taken as a single
// node.
func isClusterNode(ctx context.Context, rdb *redis.Client) bool {
	info, err := rdb.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// numSub returns how many connections are subscribed to each channel. On a
// Redis Cluster a subscription lives on one node only (the one the
// subscriber connected to), so the counts of every node, masters and
// replicas, are added up, classic (NUMSUB) and sharded (SHARDNUMSUB) ones.
func numSub(ctx context.Context, rdb redis.UniversalClient, channels ...string) (map[string]int64, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		m, err := rdb.PubSubNumSub(ctx, channels...).Result()
		if err != nil {
			return nil, fmt.Errorf("PUBSUB NUMSUB: %w", err)
		}
		return m, nil
	}
	var mu sync.Mutex
	sum := make(map[string]int64, len(channels))
	err := cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		m, err := node.PubSubNumSub(ctx, channels...).Result()
		if err != nil {
			return err
		}
		// Sharded subscribers (SSUBSCRIBE, redisync's and Redisson's
		// default on a Redis 7 Cluster) are counted apart; a Redis older
		// than 7 answers SHARDNUMSUB with an error and has none.
		sm, err := node.PubSubShardNumSub(ctx, channels...).Result()
		var re redis.Error
		if err != nil && !errors.As(err, &re) {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for ch, n := range m {
			sum[ch] += n
		}
		for ch, n := range sm {
			sum[ch] += n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("PUBSUB NUMSUB: %w", err)
	}
	return sum, nil
}
