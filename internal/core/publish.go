package core

import (
	"context"
	"fmt"
	"sync"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redis/go-redis/v9"
)

// ShardedMode is redisync.ShardedMode: whether a Cluster client uses
// sharded pub/sub.
type ShardedMode int

// The modes, as redisync.ShardedAuto, ShardedOn and ShardedOff.
const (
	ShardedAuto ShardedMode = iota
	ShardedOn
	ShardedOff
)

// The publish commands scripts take as an argument (Redisson passes its
// scripts the command the same way).
const (
	Publish  = "publish"
	SPublish = "spublish"
)

// publishMode caches the decision between classic and sharded pub/sub.
type publishMode struct {
	mu  sync.Mutex
	cmd string // "" until decided
}

// PublishCommand returns the command the client's scripts publish with:
// "spublish" on a Cluster in sharded mode, "publish" otherwise. On a
// Cluster with ShardedAuto the first call probes the cluster with PUBSUB
// SHARDNUMSUB 0 (Redisson's probe): an answer means sharded pub/sub, an
// error reply (a Redis older than 7) classic pub/sub; the decision is kept
// for the client's life. A probe that fails otherwise (network, ctx) returns
// the error, and the next call probes again. It never probes on a single
// node or through Sentinel, or with ShardedOn or ShardedOff.
func (c *Client) PublishCommand(ctx context.Context) (string, error) {
	c.pub.mu.Lock()
	defer c.pub.mu.Unlock()
	if c.pub.cmd != "" {
		return c.pub.cmd, nil
	}
	_, cluster := c.rdb.(*redis.ClusterClient)
	switch {
	case !cluster || c.opts.Sharded == ShardedOff:
		c.pub.cmd = Publish
	case c.opts.Sharded == ShardedOn:
		c.pub.cmd = SPublish
	default:
		err := c.rdb.Do(ctx, "PUBSUB", "SHARDNUMSUB", "0").Err()
		switch {
		case err == nil:
			c.pub.cmd = SPublish
		case errs.IsReply(err):
			c.log.Info("redisync: the cluster does not support sharded pub/sub, using classic pub/sub", "err", err)
			c.pub.cmd = Publish
		default:
			return "", fmt.Errorf("redisync: probe for sharded pub/sub (PUBSUB SHARDNUMSUB): %w", err)
		}
	}
	return c.pub.cmd, nil
}

// Sharded reports whether the client's waiters subscribe with SSUBSCRIBE
// (PublishCommand is "spublish"); errors are PublishCommand's.
func (c *Client) Sharded(ctx context.Context) (bool, error) {
	cmd, err := c.PublishCommand(ctx)
	return cmd == SPublish, err
}
