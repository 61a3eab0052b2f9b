package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// Read runs cmds, reads of keys in key's slot, on key's primary in one
// pipeline, and tells whether their answers may be believed. Once a
// primary the client reached within Settings.Forget had a replica, the
// pipeline also reads the role of the server that ran them (INFO
// replication, last): an answer is believed only from a primary that has
// every replica it is counted with (its sighting's want, as for a
// write): the old primary of a split brain, back from a partition before
// the sentinels demote it and with its replica promoted away, answers
// with what the promoted replica may not have (a latch open that is set
// again there), and its answers fail with an error wrapping
// ErrNotReplicated. Without acknowledgement (WithReplicaSync off), on a
// client kind that cannot be pipelined to one node, or when no replica
// was ever seen, the reads are sent as they are. The error returned is
// the pipeline's first (each command keeps its own), or the role's.
func (r *Replicas) Read(ctx context.Context, key string, cmds ...redis.Cmder) error {
	node, addr, err := r.primaryFor(ctx, key)
	if err != nil {
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
	if node == nil || !r.On() {
		rdb := r.rdb
		if node != nil {
			rdb = node
		}
		_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, c := range cmds {
				_ = pipe.Process(ctx, c)
			}
			return nil
		})
		return err
	}
	p := r.primaries.get(addr)
	p.mu.Lock()
	verify := p.hadReplicas(time.Now(), r.acks.sync.Forget)
	p.mu.Unlock()
	pipe := node.Pipeline()
	for _, c := range cmds {
		_ = pipe.Process(ctx, c)
	}
	var role *redis.StringCmd
	if verify {
		role = newRole(ctx)
		_ = pipe.Process(ctx, role)
	}
	_, err = pipe.Exec(ctx)
	if err != nil || !verify {
		return err
	}
	online, ran, ok := roleReplicas(role)
	if !ok {
		err = fmt.Errorf("%w: could not read which primary answered (%v)", errs.ErrNotReplicated, roleErr(role))
	} else {
		p.set(online, ran)
		err = r.acks.stale(p, ran, online) // as a batch's replies
	}
	if err != nil {
		for _, c := range cmds {
			c.SetErr(err)
		}
	}
	return err
}
