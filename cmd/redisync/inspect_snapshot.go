package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// snapshot is the raw state of the keys a primitive called name may use.
type snapshot struct {
	typ       string             // TYPE name
	zsetType  string             // TYPE {name}:timeout
	queueType string             // TYPE redisson_lock_queue:{name}
	fairType  string             // TYPE redisson_lock_timeout:{name}
	hash      map[string]string  // HGETALL name, for a hash
	value     string             // GET name, for a string
	pttl      int64              // PTTL name
	permits   []redis.Z          // ZRANGE {name}:timeout WITHSCORES, for a zset
	queue     []string           // LRANGE redisson_lock_queue:{name}, for a list
	deadlines map[string]float64 // redisson_lock_timeout:{name}'s scores, for a zset
	fence     *int64             // GET redisson_lock_token:{name}
	now       time.Time          // the server's clock
	subs      map[string]int64   // subscribers of every kind's channel and of each queued owner's
}

// keyTypes are the Redis types (TYPE) of the keys a primitive called name
// may use: the name, the permit zset, a fair lock's queue and timeouts.
type keyTypes [4]string

// keyNames lists the keys whose types keyTypes holds, in its order.
func keyNames(name string) [4]string {
	return [4]string{name, keys.SemaphoreTimeouts(name), keys.FairQueue(name), keys.FairTimeouts(name)}
}

// isFair reports whether a fair lock's queue or timeouts zset exists.
func (s *snapshot) isFair() bool { return s.queueType == "list" || s.fairType == "zset" }

// maxSnapshotTries bounds how often readSnapshot starts over when a key
// changes type between its two reads.
const maxSnapshotTries = 5

// readSnapshot reads everything inspect shows about name. The keys are read
// in one MULTI/EXEC (they share name's cluster slot), so holders, TTLs,
// permits and queue are one consistent picture; read-hold leases and
// waiter counts are read right after.
func readSnapshot(ctx context.Context, rdb redis.UniversalClient, name string) (*snapshot, error) {
	var s *snapshot
	for try := 0; ; try++ {
		types, err := readTypes(ctx, rdb, name)
		if err != nil {
			return nil, err
		}
		s, err = readKeys(ctx, rdb, name, types)
		if err != nil {
			return nil, err
		}
		if s != nil {
			break
		}
		if try == maxSnapshotTries {
			return nil, fmt.Errorf("%q keeps changing type; try again", name)
		}
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("TIME: %w", err)
	}
	s.now = now
	channels := make([]string, 0, len(allKinds)+len(s.queue))
	for _, k := range allKinds {
		if k.ownChannel() {
			channels = append(channels, k.channel(name))
		}
	}
	for _, owner := range s.queue {
		channels = append(channels, keys.FairChannel(name, owner))
	}
	if s.subs, err = numSub(ctx, rdb, channels...); err != nil {
		return nil, err
	}
	return s, nil
}

// readTypes reads the types of name's keys in one transaction.
func readTypes(ctx context.Context, rdb redis.UniversalClient, name string) (keyTypes, error) {
	var cmds [4]*redis.StatusCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keyNames(name) {
			cmds[i] = p.Type(ctx, key)
		}
		return nil
	})
	var types keyTypes
	if err != nil {
		return types, err
	}
	for i, c := range cmds {
		types[i] = c.Val()
	}
	return types, nil
}

// readKeys reads name's keys given the types just seen, in one
// transaction that checks the types again; it returns nil, nil when they
// changed meanwhile.
func readKeys(ctx context.Context, rdb redis.UniversalClient, name string, types keyTypes) (*snapshot, error) {
	kn := keyNames(name)
	var (
		typeCmds [4]*redis.StatusCmd
		hashCmd  *redis.MapStringStringCmd
		getCmd   *redis.StringCmd
		pttlCmd  *redis.Cmd
		zCmd     *redis.ZSliceCmd
		queueCmd *redis.StringSliceCmd
		fairCmd  *redis.ZSliceCmd
		fenceCmd *redis.StringCmd
	)
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range kn {
			typeCmds[i] = p.Type(ctx, key)
		}
		pttlCmd = p.Do(ctx, "pttl", name)
		fenceCmd = p.Get(ctx, keys.FenceCounter(name))
		switch types[0] {
		case "hash":
			hashCmd = p.HGetAll(ctx, name)
		case "string":
			getCmd = p.Get(ctx, name)
		}
		zCmd = ifType(types[1], "zset", func() *redis.ZSliceCmd { return p.ZRangeWithScores(ctx, kn[1], 0, -1) })
		queueCmd = ifType(types[2], "list", func() *redis.StringSliceCmd { return p.LRange(ctx, kn[2], 0, -1) })
		fairCmd = ifType(types[3], "zset", func() *redis.ZSliceCmd { return p.ZRangeWithScores(ctx, kn[3], 0, -1) })
		return nil
	})
	if retry, err := txFailure(cmds, err); retry || err != nil {
		return nil, err
	}
	for i, c := range typeCmds {
		if c.Val() != types[i] {
			return nil, nil
		}
	}
	s := &snapshot{typ: types[0], zsetType: types[1], queueType: types[2], fairType: types[3]}
	s.pttl, _ = pttlCmd.Int64()
	if v, err := fenceCmd.Int64(); err == nil {
		s.fence = &v
	}
	if hashCmd != nil {
		s.hash = hashCmd.Val()
	}
	if getCmd != nil {
		s.value = getCmd.Val()
	}
	if zCmd != nil {
		s.permits = zCmd.Val()
	}
	if queueCmd != nil {
		s.queue = queueCmd.Val()
	}
	if fairCmd != nil {
		s.deadlines = make(map[string]float64, len(fairCmd.Val()))
		for _, z := range fairCmd.Val() {
			owner, _ := z.Member.(string)
			s.deadlines[owner] = z.Score
		}
	}
	return s, nil
}

// ifType queues a read with add when the key's type is want, and returns
// its command; nil otherwise.
func ifType[C any](typ, want string, add func() *C) *C {
	if typ != want {
		return nil
	}
	return add()
}

// txFailure looks at each command of a failed transaction (Exec reports
// the first failed one): a missing key read with GET is fine, a key that
// changed type means starting over (retry), anything else is an error.
func txFailure(cmds []redis.Cmder, err error) (retry bool, _ error) {
	if err == nil {
		return false, nil
	}
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil, errors.Is(err, redis.Nil):
		case isWrongType(err):
			return true, nil
		default:
			return false, err
		}
	}
	if len(cmds) == 0 {
		return false, err
	}
	return false, nil
}

// isWrongType reports whether err is Redis's WRONGTYPE error: the key
// holds another type than the command reads.
func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}
