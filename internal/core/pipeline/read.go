package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// readMaxLag is how long ago (INFO replication's lag, in whole seconds) a
// replica must have acknowledged its primary last to count for a read.
// The old primary of a split brain lists the replica that was promoted
// away as online until its repl-timeout drops it (the promoted replica's
// goodbye was lost in the partition): its writes are not acknowledged
// (WAIT waits for the offset of the write), but a read has no offset, and
// was believed. A replica is promoted only after its primary has failed
// to answer for the failure detection's time (Sentinel's down-after, the
// Cluster's node timeout: at least a few seconds, 30 s and 15 s by
// default), so its last acknowledgement is older than that by then; a
// replica that follows its primary acknowledges every second.
const readMaxLag = 2

// Read runs cmds, reads of keys in key's slot, on key's primary in one
// pipeline, and tells whether their answers may be believed. Once a
// primary the client reached within Settings.Forget had a replica, the
// pipeline also reads the role of the server that ran them (INFO
// replication, last): an answer is believed only from a primary that has
// every replica it is counted with (its sighting's want, as for a
// write), each heard from within the last readMaxLag seconds: the old primary of a split brain, back from a partition before
// the sentinels demote it and with its replica promoted away, answers
// with what the promoted replica may not have (a latch open that is set
// again there), and its answers fail with an error wrapping
// ErrNotReplicated, a missing key's (redis.Nil) as much as a value's.
// A primary not read yet is learnt by the same pipeline (its role, read
// last), so that a client that only reads judges the next answers.
// Without acknowledgement (WithReplicaSync off), on a client kind that
// cannot be pipelined to one node, or when no replica was ever seen, the
// answers are believed as they are. The error returned is the first of
// cmds' (each command keeps its own), or the role's.
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
	learn := p.n == unknown // a client that only reads learns the primary too
	p.mu.Unlock()
	pipe := node.Pipeline()
	for _, c := range cmds {
		_ = pipe.Process(ctx, c)
	}
	var role *redis.StringCmd
	if verify || learn {
		role = newRole(ctx)
		_ = pipe.Process(ctx, role)
	}
	_, _ = pipe.Exec(ctx)
	var execErr error // the first of cmds' errors; role's is judged below
	for _, c := range cmds {
		if execErr = c.Err(); execErr != nil {
			break
		}
	}
	if !verify {
		if learn {
			r.acks.learn(p, role) // nothing to judge by yet
		}
		return execErr
	}
	if execErr != nil && !errors.Is(execErr, redis.Nil) {
		return execErr
	}
	// A read of a key that does not exist (redis.Nil: a latch open, a
	// lock free) is an answer like any other, and is judged too: the old
	// primary of a split brain answers nil for what it never had.
	online, fresh, ran, ok := roleReplicasLag(role, readMaxLag)
	if !ok {
		err = fmt.Errorf("%w: could not read which primary answered (%v)", errs.ErrNotReplicated, roleErr(role))
	} else {
		p.set(online, ran)
		err = r.acks.stale(p, ran, fresh) // as a batch's replies, counting the replicas heard from lately
	}
	if err == nil {
		return execErr // redis.Nil, or nil
	}
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}
