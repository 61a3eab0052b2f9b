package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
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
// for TLS, unix://). A bare "host:port" is taken as redis://host:port. A bad
// URL is a usage error.
func parseURL(raw string) (*redis.Options, error) {
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, usagef("bad Redis URL %q: %s", redactURL(raw), strings.TrimPrefix(err.Error(), "redis: "))
	}
	return o, nil
}

// redactURL hides the password of a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// dial connects to the server at raw and checks that it answers. When the
// server is a Redis Cluster node it returns a cluster client seeded with
// that node, so keys are found on whichever node owns them. The returned
// description names the server for messages, without its password.
func dial(ctx context.Context, raw string) (redis.UniversalClient, string, error) {
	o, err := parseURL(raw)
	if err != nil {
		return nil, "", err
	}
	desc := redactURL(raw)
	if !strings.Contains(raw, "://") {
		desc = redactURL("redis://" + raw)
	}
	rdb := redis.NewClient(o)
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("cannot reach Redis at %s: %w", desc, err)
	}
	if !isClusterNode(pctx, rdb) {
		return rdb, desc, nil
	}
	_ = rdb.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        []string{o.Addr},
		Username:     o.Username,
		Password:     o.Password,
		TLSConfig:    o.TLSConfig,
		Protocol:     o.Protocol,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		MaxRetries:   o.MaxRetries,
	})
	if err := cc.Ping(pctx).Err(); err != nil {
		_ = cc.Close()
		return nil, "", fmt.Errorf("cannot reach Redis Cluster at %s: %w", desc, err)
	}
	return cc, desc + " (cluster)", nil
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
