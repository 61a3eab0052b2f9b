package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/lua"
)

// maxToken is the largest token the script compares exactly (Lua numbers
// are doubles).
const maxToken = 1 << 53

// Value is a value stored in Redis that is written only with a fencing
// token at least as high as the highest that wrote it before. It is a
// handle: creating one does no I/O, and any number of goroutines may use
// one.
type Value struct {
	h core.Handle
}

// New returns a handle on the fenced value called name, whose Redis key is
// the hash name. It does no I/O and never fails: an empty name is
// reported, wrapping redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string) *Value {
	return &Value{h: core.NewHandle((*core.Client)(c), "fence", name)}
}

// Name returns the value's name, as given to New. It is also its Redis
// key, after the Client's key prefix (redisync.WithKeyPrefix).
func (v *Value) Name() string { return v.h.Given }

// Set writes value with the writer's fencing token (Hold.FencingToken or
// Lock.FencingToken of a lock taken with rlock.WithFencing) when no higher
// token wrote before, and reports whether it wrote. False means a newer
// holder of the lock has written: the caller's hold is stale (its lease
// ran out), and nothing was changed. A write with the token that wrote
// last is taken: a holder may write several times. A token below 1 or
// above 2^53 is an invalid argument. A key under the name that is no
// fenced value (another type, or a hash of other fields) gives an error
// wrapping redisync.ErrWrongType and is left unchanged.
//
// Set is retry-safe: a copy re-sent by go-redis after a lost reply writes
// the same value with the same token again, unless a higher token wrote
// in between (then that copy is refused, and Set may report false for a
// write that took place before the newer one).
//
// With replica acknowledgement on (redisync.WithReplicaSync, the default)
// a write counts only once the primary's replicas have it: a failover
// that lost the write would lose its token too, and let a staler holder
// write after it. A write they did not acknowledge in time returns false
// and an error wrapping redisync.ErrNotReplicated: it took place on the
// primary, and calling Set again with the same token is safe.
func (v *Value) Set(ctx context.Context, token int64, value string) (bool, error) {
	if err := v.h.Check(ctx); err != nil {
		return false, err
	}
	if token < 1 || token > maxToken {
		return false, v.h.Invalid("fencing token %d, must be from 1 to 2^53", token)
	}
	ws := v.h.C.Pipeline().NewSync()
	n, err := lua.FenceSetArgs{Fenced: v.h.Name, Token: token, Data: value}.Run(ctx, v.h.C.Pipeline().Runner(ws))
	if err == nil && n == lua.FenceSetWritten && ws.SyncErr() != nil {
		// Written on the primary only: a failover may lose the write and
		// the token with it, and let a staler holder write after.
		return false, fmt.Errorf("fence %q: set: written on the primary but not acknowledged by its replicas in time (a failover may lose it): %w",
			v.h.Name, ws.SyncErr())
	}
	if err != nil {
		return false, fmt.Errorf("fence %q: set: %w", v.h.Name, errs.ReplyError(err))
	}
	return n == lua.FenceSetWritten, nil
}

// Get returns the value and the token that wrote it; "", 0 when nothing
// was written. A key of another layout gives an error wrapping
// redisync.ErrWrongType. Outside a Cluster the read is made with the
// server's ROLE, on the same connection: a server that is no primary any
// more (a primary a failover demoted, whose copy may be older than what
// was written since on the new one) gives an error, never its value.
func (v *Value) Get(ctx context.Context) (value string, token int64, err error) {
	if err := v.h.Check(ctx); err != nil {
		return "", 0, err
	}
	rdb := v.h.C.Redis()
	var get *redis.SliceCmd
	var role *redis.Cmd
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		get = rdb.HMGet(ctx, v.h.Name, "value", "token")
	} else {
		// With the read, on the same connection, the server's role: a
		// pooled connection to a primary that a failover demoted (its
		// copy lags, or is being replaced by a full sync) answers reads
		// as a replica, with a value older than one written since on the
		// new primary; such a read is refused, never returned.
		pipe := rdb.Pipeline()
		get = pipe.HMGet(ctx, v.h.Name, "value", "token")
		role = pipe.Do(ctx, "ROLE")
		_, _ = pipe.Exec(ctx)
	}
	vals, err := get.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, fmt.Errorf("fence %q: get: %w", v.h.Name, errs.ReplyError(err))
	}
	if role != nil {
		r, rerr := role.Slice()
		if rerr != nil {
			return "", 0, fmt.Errorf("fence %q: get: ROLE: %w", v.h.Name, errs.ReplyError(rerr))
		}
		if len(r) == 0 || r[0] != "master" {
			return "", 0, fmt.Errorf("fence %q: get: the server that answered is not a primary (ROLE %v: a primary demoted by a failover); its copy may be stale: try again", v.h.Name, r)
		}
	}
	s, _ := vals[0].(string)
	t, _ := vals[1].(string)
	if t == "" {
		return "", 0, nil
	}
	if token, err = strconv.ParseInt(t, 10, 64); err != nil {
		return "", 0, fmt.Errorf("fence %q: get: %w", v.h.Name, errs.ReplyError(err))
	}
	return s, token, nil
}
