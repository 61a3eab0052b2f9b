package redisync

import (
	"strconv"

	"github.com/redisync/redisync/internal/core"
)

// ShardedMode says whether waiters and releases use sharded pub/sub
// (SSUBSCRIBE and SPUBLISH, Redis >= 7) on a Redis Cluster, as Redisson's
// shardedSubscriptionMode does. Single nodes and Sentinel setups always use
// classic pub/sub, whatever the mode.
//
// A Go client and a Java client using Redisson must use the same mode on a
// Cluster: a PUBLISH reaches only SUBSCRIBE clients and an SPUBLISH only
// SSUBSCRIBE clients, so with different modes neither wakes the other's
// waiters (they still re-check on their fallback timers).
type ShardedMode int

const (
	// ShardedAuto uses sharded pub/sub on a Cluster that supports it: the
	// first operation that needs to know sends PUBSUB SHARDNUMSUB 0 once, as
	// Redisson does; if Redis answers (Redis >= 7), waiters subscribe with
	// SSUBSCRIBE on the master of their channel's slot and releases publish
	// with SPUBLISH; if Redis answers with an error (an older Redis), classic
	// pub/sub is used. A probe that fails for another reason (a network
	// error) is retried by the next operation. This is Redisson's default.
	ShardedAuto ShardedMode = iota
	// ShardedOn always uses sharded pub/sub on a Cluster, without a probe;
	// on a Cluster older than Redis 7 every release then fails.
	ShardedOn
	// ShardedOff never uses sharded pub/sub: waiters SUBSCRIBE (one
	// connection per Client) and releases PUBLISH, which the cluster bus
	// carries to every node. Redisson's shardedSubscriptionMode OFF.
	ShardedOff
)

// String returns "auto", "on" or "off".
func (m ShardedMode) String() string {
	switch m {
	case ShardedAuto:
		return "auto"
	case ShardedOn:
		return "on"
	case ShardedOff:
		return "off"
	}
	return "ShardedMode(" + strconv.Itoa(int(m)) + ")"
}

// WithShardedPubSub sets whether waiters and releases use sharded pub/sub on
// a Redis Cluster (see ShardedMode). It has no effect on a single node or
// through Sentinel, which always use classic pub/sub. A value other than
// ShardedAuto, ShardedOn and ShardedOff is an invalid argument. The default
// is ShardedAuto.
func WithShardedPubSub(m ShardedMode) Option {
	return func(o *options) {
		if m < ShardedAuto || m > ShardedOff {
			o.invalid("sharded pub/sub mode %v, must be ShardedAuto, ShardedOn or ShardedOff", m)
			return
		}
		o.sharded = m
	}
}

// core converts the mode for the core client.
func (m ShardedMode) core() core.ShardedMode {
	switch m {
	case ShardedOn:
		return core.ShardedOn
	case ShardedOff:
		return core.ShardedOff
	}
	return core.ShardedAuto
}
