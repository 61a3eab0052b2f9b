package core

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
)

// Eviction: every key redisync writes (lock hashes, permits, request
// records) has a TTL, so every maxmemory-policy but noeviction may evict
// it, the volatile-* policies included: a lock evicted while held is free
// for another owner while its holder goes on (until its next renewal), a
// permit evicted is given back. The client reads the policy of each
// primary it connects to, once, and warns when it is not noeviction: a
// log record at Warn naming the policy, Stats.EvictingPrimaries and the
// Eviction hook. A hold its renewal finds gone from such a primary ends
// with a cause that names eviction (goneErr).
//
// When: go-redis tells the client of each connection it dials (a dial
// hook, as pubsub's follower uses), so the policy is read at the first
// connection to each primary, after a Sentinel failover at the first
// connection to the new one, and on a Cluster at the first connection to
// each node go-redis creates after New (every node, when the Cluster
// client was not used before New). The primary is named by the address
// the client was given (a Cluster node's), or, through Sentinel, by the
// address go-redis dialled. Nothing is re-read when a server restarts at
// the same address.
//
// How: on a connection of its own (the user's client's options, pool of
// one, closed after), so the user's go-redis hooks see nothing: INFO
// memory (maxmemory_policy, which the least-privilege ACL user may read),
// and CONFIG GET maxmemory-policy when INFO lacks it. A failed read fails
// nothing: it is logged at Debug and tried again at the next connection
// dialled to that primary.

// evictionReadTimeout bounds one reading of a primary's policy.
const evictionReadTimeout = 5 * time.Second

// noEviction is the only maxmemory-policy that never evicts a key.
const noEviction = "noeviction"

// EvictionPolicy describes a primary whose maxmemory-policy can evict
// the client's keys (the Eviction hook).
type EvictionPolicy struct {
	Primary string // the primary's address
	Policy  string // its maxmemory-policy, as Redis names it
}

// evictions is what a client knows of its primaries' policies, and what
// reading them needs of the client: its go-redis client, its background
// work, its logger and its Eviction hook (nil: none).
type evictions struct {
	rdb     redis.UniversalClient
	bg      *bg.Group
	log     *slog.Logger
	onEvict func(p EvictionPolicy)
	watched atomic.Bool // false once the client closed: the dial hooks outlive it
	mu      sync.Mutex
	// policies by primary address: "" while a read is under way
	policies map[string]string
	latest   string // the primary a client of one primary dialled last
	evicting atomic.Uint64
}

// watch hooks the policy reads into rdb's dials (see above), run in the
// background work g, logged to log, reported to onEvict (the client's
// Eviction hook; nil: none) until stop. It does no I/O.
func (e *evictions) watch(rdb redis.UniversalClient, g *bg.Group, log *slog.Logger, onEvict func(p EvictionPolicy)) {
	e.rdb, e.bg, e.log, e.onEvict = rdb, g, log, onEvict
	e.watched.Store(true)
	switch r := rdb.(type) {
	case *redis.Client:
		r.AddHook(evictionHook{e: e, opt: r.Options()})
	case *redis.ClusterClient:
		r.OnNewNode(func(node *redis.Client) {
			node.AddHook(evictionHook{e: e, opt: node.Options(), node: true})
		})
	}
}

// evictionHook is the dial hook of one go-redis client: a plain or
// Sentinel client, or a Cluster node (node).
type evictionHook struct {
	e    *evictions
	opt  *redis.Options
	node bool
}

// DialHook starts a reading of the policy of the primary dialled, unless
// it is known or being read.
func (h evictionHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err != nil || cn == nil {
			return cn, err
		}
		primary := addr
		if h.opt.Addr == failoverAddr && cn.RemoteAddr() != nil {
			primary = cn.RemoteAddr().String()
		}
		h.e.dialled(primary, h.opt, h.node)
		return cn, nil
	}
}

// ProcessHook leaves commands alone.
func (h evictionHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines alone.
func (h evictionHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// failoverAddr is the address go-redis gives a Sentinel failover client
// in its Options (its dialer asks Sentinel for the primary's).
const failoverAddr = "FailoverClient"

// dialled records a connection to primary and starts the reading of its
// policy in the background when it is not known.
func (e *evictions) dialled(primary string, opt *redis.Options, node bool) {
	if !e.watched.Load() {
		return
	}
	e.mu.Lock()
	if !node {
		e.latest = primary
	}
	if _, ok := e.policies[primary]; ok {
		e.mu.Unlock()
		return
	}
	if e.policies == nil {
		e.policies = make(map[string]string)
	}
	e.policies[primary] = ""
	e.mu.Unlock()
	if !e.bg.Background(evictionReadTimeout, func(ctx context.Context) { e.read(ctx, primary, opt) }) {
		e.forget(primary)
	}
}

// forget drops a primary whose policy could not be read, so that the next
// connection dialled to it reads it again.
func (e *evictions) forget(primary string) {
	e.mu.Lock()
	if e.policies[primary] == "" {
		delete(e.policies, primary)
	}
	e.mu.Unlock()
}

// read reads the policy of primary on a connection of its own and
// records it.
func (e *evictions) read(ctx context.Context, primary string, opt *redis.Options) {
	rdb := redis.NewClient(policyReader(opt))
	defer func() { _ = rdb.Close() }()
	policy, err := readPolicy(ctx, rdb)
	if err != nil {
		e.forget(primary)
		e.log.Debug("redisync: could not read the primary's maxmemory-policy", "primary", primary, "err", err)
		return
	}
	e.mu.Lock()
	e.policies[primary] = policy
	e.mu.Unlock()
	e.log.Debug("redisync: the primary's maxmemory-policy", "primary", primary, "policy", policy)
	if policy == noEviction {
		return
	}
	e.log.Warn("redisync: the primary's maxmemory-policy can evict redisync's keys, which all have a TTL: "+
		"a lock or permit evicted is free for another owner while its holder goes on until its next renewal; "+
		"only noeviction is safe",
		"primary", primary, "policy", policy)
	if e.onEvict != nil {
		e.onEvict(EvictionPolicy{Primary: primary, Policy: policy})
	}
	// counted last: whoever sees it in Stats finds the record and the
	// Observer's call already made
	e.evicting.Add(1)
}

// policyReader returns the options of the connection that reads a
// primary's policy: the user's client's address, dialer, credentials,
// database, TLS and timeouts, one connection, no retries, and none of the
// go-redis features that keep state per client (push notifications,
// client-side caching, maintenance notifications).
func policyReader(opt *redis.Options) *redis.Options {
	return &redis.Options{
		Network: opt.Network, Addr: opt.Addr, Dialer: opt.Dialer, OnConnect: opt.OnConnect,
		Protocol: opt.Protocol, ClientName: opt.ClientName,
		Username: opt.Username, Password: opt.Password,
		CredentialsProvider: opt.CredentialsProvider, CredentialsProviderContext: opt.CredentialsProviderContext,
		StreamingCredentialsProvider: opt.StreamingCredentialsProvider,
		DB:                           opt.DB, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout,
		DisableIdentity: opt.DisableIdentity || opt.DisableIndentity, //nolint:staticcheck // the deprecated spelling still counts
		IdentitySuffix:  opt.IdentitySuffix,
		PoolSize:        1, MaxRetries: -1,
	}
}

// readPolicy returns the server's maxmemory-policy: INFO memory's
// maxmemory_policy, else CONFIG GET's.
func readPolicy(ctx context.Context, rdb *redis.Client) (string, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok && v != "" {
				return v, nil
			}
		}
	} else if !errs.IsReply(err) {
		return "", err
	}
	cfg, cerr := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if cerr != nil {
		return "", fmt.Errorf("INFO memory: %v; CONFIG GET maxmemory-policy: %w", err, cerr)
	}
	if v := cfg["maxmemory-policy"]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("no maxmemory-policy in INFO memory (%v) or CONFIG GET", err)
}

// stop ends the watch when the client closes: the dial hooks read
// nothing more.
func (e *evictions) stop() { e.watched.Store(false) }

// policyOf returns the known policy of the primary holding key ("" when
// unknown).
func (e *evictions) policyOf(key string) (primary, policy string) {
	if cc, ok := e.rdb.(*redis.ClusterClient); ok {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return "", ""
		}
		primary = node.Options().Addr
	} else {
		e.mu.Lock()
		primary = e.latest
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return primary, e.policies[primary]
}

// goneErr returns the cause of the end of a hold of key when its renewal
// found it gone from Redis: it names eviction when the primary holding it
// has a policy that can evict it.
func (e *evictions) goneErr(key string) error {
	primary, policy := e.policyOf(key)
	if policy == "" || policy == noEviction {
		return fmt.Errorf("%w: renewal found the hold gone from Redis", errs.ErrLockLost)
	}
	return fmt.Errorf("%w: renewal found the hold gone from Redis: evicted, most likely: the primary %s has maxmemory-policy %s, "+
		"which evicts keys with a TTL under memory pressure (only noeviction is safe)", errs.ErrLockLost, primary, policy)
}
