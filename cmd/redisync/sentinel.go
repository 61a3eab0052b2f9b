package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The URL schemes of a master reached through Redis Sentinel, without and
// with TLS.
const (
	sentinelScheme    = "redis-sentinel"
	sentinelTLSScheme = "rediss-sentinel"
)

// defaultSentinelPort is the port of a sentinel address given without one.
const defaultSentinelPort = "26379"

// isSentinelURL reports whether raw names a master through Sentinel.
func isSentinelURL(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	return ok && (scheme == sentinelScheme || scheme == sentinelTLSScheme)
}

// parseSentinelURL parses the URL of a master that Redis Sentinel
// monitors:
//
//	redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/master[/db][?option=value&...]
//
// The hosts are sentinels (port 26379 when left out), master is the name
// they monitor it under, and db is the database number (default 0). user
// and password are the master's (and its replicas'); the options
// sentinel_username and sentinel_password authenticate to the sentinels.
// rediss-sentinel:// uses TLS to the sentinels and the master. The other
// options are go-redis's (redis.ParseFailoverURL), dial_timeout for
// example; master_name, addr, db, username and password are refused since
// the URL's parts give them. User name, password and master name may be
// percent-encoded.
func parseSentinelURL(raw string) (*redis.FailoverOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	head, query, _ := strings.Cut(rest, "?")
	if strings.Contains(head, "#") {
		return nil, errors.New(`unexpected "#"; percent-encode it as %23`)
	}
	// The user info ends at the last "@", as in redactURL, so that an
	// unencoded "/" in a password is not taken for the path.
	var userinfo string
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		userinfo, head = head[:at], head[at+1:]
	}
	hosts, path, _ := strings.Cut(head, "/")
	addrs, err := sentinelAddrs(hosts)
	if err != nil {
		return nil, err
	}
	master, db, err := sentinelPath(scheme, path)
	if err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("bad options: %w", err)
	}
	for _, k := range []string{"master_name", "addr", "db", "username", "password"} {
		if q.Has(k) {
			return nil, fmt.Errorf("option %s: the URL gives it (user:password@sentinels/master/db)", k)
		}
	}
	sentinelUser, sentinelPassword := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	// go-redis parses the other options; it takes the first sentinel from
	// the host and the others from addr options.
	q.Set("master_name", master)
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	goScheme := "redis"
	if scheme == sentinelTLSScheme {
		goScheme = "rediss"
	}
	u := url.URL{Scheme: goScheme, Host: addrs[0], RawQuery: q.Encode()}
	o, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	o.DB = db
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPassword
	if err := setMasterUser(o, userinfo); err != nil {
		return nil, err
	}
	return o, nil
}

// sentinelAddrs checks a sentinel URL's comma-separated sentinel
// addresses and returns them as host:port (see sentinelAddr).
func sentinelAddrs(hosts string) ([]string, error) {
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		addr, err := sentinelAddr(h)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// sentinelPath parses a sentinel URL's path, master[/db] without its
// leading "/": the master's name, percent-decoded and not empty, and the
// database number (0 when left out). scheme is the URL's, for a message.
func sentinelPath(scheme, path string) (master string, db int, err error) {
	segs := strings.Split(strings.TrimSuffix(path, "/"), "/")
	if len(segs) > 2 {
		return "", 0, fmt.Errorf("unexpected path %q: want /master or /master/db", "/"+path)
	}
	master, err = url.PathUnescape(segs[0])
	if err != nil {
		return "", 0, fmt.Errorf("bad master name: %w", err)
	}
	if master == "" {
		return "", 0, fmt.Errorf("no master name: want %s://host:port/master", scheme)
	}
	if len(segs) == 2 {
		if db, err = strconv.Atoi(segs[1]); err != nil || db < 0 {
			return "", 0, fmt.Errorf("invalid database number %q", segs[1])
		}
	}
	return master, db, nil
}

// setMasterUser sets o's user name and password, the master's, from a
// sentinel URL's percent-encoded user info, user[:password]; "" sets
// neither.
func setMasterUser(o *redis.FailoverOptions, userinfo string) error {
	if userinfo == "" {
		return nil
	}
	var err error
	user, password, _ := strings.Cut(userinfo, ":")
	if o.Username, err = url.PathUnescape(user); err != nil {
		return errors.New("bad user name: invalid percent-encoding")
	}
	if o.Password, err = url.PathUnescape(password); err != nil {
		return errors.New("bad password: invalid percent-encoding")
	}
	return nil
}

// sentinelAddr checks one sentinel address of a sentinel URL, host[:port],
// and returns it as host:port.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty sentinel address: want host:port[,host:port...]")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		var ae *net.AddrError
		if !errors.As(err, &ae) || ae.Err != "missing port in address" {
			return "", fmt.Errorf("bad sentinel address %q: %s", h, strings.TrimPrefix(err.Error(), "address "+h+": "))
		}
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultSentinelPort
	}
	if host == "" {
		return "", fmt.Errorf("bad sentinel address %q: no host", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad sentinel address %q: invalid port %q", h, port)
	}
	return net.JoinHostPort(host, port), nil
}

// sentinelError describes a failed first command through the sentinels of
// desc, for the master fo names. Unless the master answered with an error,
// the sentinels and the master are probed (probeSentinels), so the message
// says which of them cannot be reached and why, not only "context deadline
// exceeded".
func sentinelError(ctx context.Context, desc string, fo *redis.FailoverOptions, err error) error {
	if errors.Is(err, redis.Nil) {
		// The sentinels that answered have no master by that name (go-redis
		// says "all sentinels ... are unreachable: redis: nil").
		return fmt.Errorf("no sentinel at %s knows a master named %q", desc, fo.MasterName)
	}
	if refused(err) && strings.Contains(strings.ToLower(err.Error()), "unknown command 'sentinel'") {
		return fmt.Errorf("the servers at %s are not sentinels (they do not know the SENTINEL command): name the sentinels (port %s by default), or use redis:// for a server itself: %w", desc, defaultSentinelPort, err)
	}
	found := ""
	if !refused(err) && ctx.Err() == nil {
		found = probeSentinels(ctx, fo)
	}
	return connectError(desc, err, found)
}
