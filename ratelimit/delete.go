package ratelimit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// scanCount is the COUNT hint of the SCAN that Delete runs: keys examined
// per round trip.
const scanCount = 1000

// Delete deletes the limiter: its configuration, the Overall budget and
// every client's PerClient budget, and reports whether anything existed.
// The budgets of clients that used the limiter through redisync are found
// in the registry {name}:clients; those of Java clients, which Redisson
// does not register, by their key names ({name}:value:<id>, a string, and
// {name}:permits:<id>, a sorted set): Delete then SCANs the whole keyspace
// of the node that holds the limiter's slot (on a Cluster, that slot's
// master; on a Ring, every shard), in round trips of 1000 keys examined,
// so its cost grows with the number of keys on that node, not with the
// limiter's. When one of the limiter's keys holds another type than its
// layout's, nothing is deleted and the error wraps redisync.ErrWrongType;
// a key that matches a budget's name but not its type is not the
// limiter's and stays. An error after the configuration was deleted can
// leave Java clients' budgets behind: calling Delete again removes them.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Limiter) Delete(ctx context.Context) (bool, error) {
	if err := l.h.Check(ctx); err != nil {
		return false, err
	}
	k := l.allKeys()
	r, err := lua.RateDeleteArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
		ClientValuePrefix: k.clientValuePrefix, ClientPermitsPrefix: k.clientPermitsPrefix, Clients: k.clients,
		Request: k.request, Deadline: l.h.C.Requests().Deadline(ctx), ClientID: l.h.C.ID()}.Run(ctx, l.h.C.Direct())
	if err != nil {
		return false, l.fail("delete", err)
	}
	n, err := l.deleteUnregistered(ctx)
	if err != nil {
		return false, l.fail("delete", err)
	}
	return r == lua.RateDeleteExisted || n > 0, nil
}

// deleteUnregistered deletes the PerClient budgets left once the delete
// script ran, those of clients missing from the registry (Java clients):
// the keys that keys.RateClientOf recognises and that hold their layout's
// type. It returns how many it deleted.
func (l *Limiter) deleteUnregistered(ctx context.Context) (int64, error) {
	found, err := l.scanBudgets(ctx)
	if err != nil || len(found) == 0 {
		return 0, err
	}
	rdb := l.h.C.Redis()
	types := make([]*redis.StatusCmd, len(found))
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range found {
			types[i] = p.Type(ctx, key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var del []string
	for i, key := range found {
		want := "zset"
		if _, value, _ := keys.RateClientOf(l.h.Name, key); value {
			want = "string"
		}
		if types[i].Val() == want {
			del = append(del, key)
		}
	}
	if len(del) == 0 {
		return 0, nil
	}
	// Every key shares the limiter's slot: one DEL, even on a Cluster.
	return rdb.Del(ctx, del...).Result()
}

// scanBudgets returns the keys of the node holding the limiter's slot that
// keys.RateClientOf recognises as PerClient budgets.
func (l *Limiter) scanBudgets(ctx context.Context) ([]string, error) {
	var (
		mu    sync.Mutex // a Ring scans its shards at once
		found []string
	)
	scan := func(ctx context.Context, node redis.Cmdable) error {
		it := node.Scan(ctx, 0, keys.RateScanPattern(l.h.Name), scanCount).Iterator()
		for it.Next(ctx) {
			if _, _, ok := keys.RateClientOf(l.h.Name, it.Val()); ok {
				mu.Lock()
				found = append(found, it.Val())
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	switch rdb := l.h.C.Redis().(type) {
	case *redis.ClusterClient:
		var node *redis.Client
		if node, err = rdb.MasterForKey(ctx, keys.RateValue(l.h.Name)); err == nil {
			err = scan(ctx, node)
		}
	case *redis.Ring:
		// A Ring's hashing of a key to a shard is not exported: every shard.
		err = rdb.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return scan(ctx, shard)
		})
	default:
		err = scan(ctx, rdb)
	}
	return found, err
}
