package core

import (
	"sync"
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
