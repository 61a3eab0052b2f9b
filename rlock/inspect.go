package rlock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/layout"
)

// Info is a snapshot of a lock, fair lock or spin lock as Redis holds it,
// read in one round trip (one pipeline to the node of the lock's cluster
// slot).
type Info struct {
	Holders      []Holder      // every owner holding the lock (one, or none when it is free)
	TTL          time.Duration // remaining lease; 0 when free (-1ns for a lock without an expiry, which redisync never sets)
	FencingToken int64         // the fencing counter's value; 0 when never fenced
	// Queue lists the owners waiting in a fair lock's queue, the next in
	// turn first (the list redisson_lock_queue:{name}), dead waiters not
	// yet dropped included: empty, not nil, when nobody waits. It is nil
	// for a Lock and a SpinLock, which have no queue (fmt's %v prints a
	// nil slice as [] too: compare with nil to tell).
	Queue []string
}

// Holder is one owner holding a lock.
type Holder struct {
	Owner string // "<client id>:<token>" as stored
	Count int64  // hold count
}

// Inspect reads the lock's holders, remaining lease and fencing counter
// (for a FairLock also its queue) in one round trip. A key under the
// lock's name that is not laid out as a lock (another Redis type, or a
// hash whose fields are not owners "<client id>:<n>" holding hold counts,
// as an application's hash) gives an error wrapping
// redisync.ErrWrongType; Inspect only reads.
func (h *handle) Inspect(ctx context.Context) (Info, error) {
	h = h.state()
	if err := h.e.Check(ctx); err != nil {
		return Info{}, err
	}
	s, err := h.read(ctx, h.fair())
	if err != nil {
		return Info{}, err
	}
	info := Info{TTL: s.ttl, FencingToken: s.fence, Queue: s.queue}
	for owner, v := range s.hash {
		n, _ := strconv.ParseInt(v, 10, 64) // layout.Check: a positive integer
		info.Holders = append(info.Holders, Holder{Owner: owner, Count: n})
	}
	sort.Slice(info.Holders, func(i, j int) bool { return info.Holders[i].Owner < info.Holders[j].Owner })
	return info, nil
}

// fair reports whether h is a FairLock's handle.
func (h *handle) fair() bool { _, ok := h.side.Scripts.(*fairScripts); return ok }

// lockState is what read found of a lock in Redis.
type lockState struct {
	hash  map[string]string // the lock hash's fields (owner → hold count); empty when free
	ttl   time.Duration     // as Info.TTL
	fence int64             // the fencing counter, 0 when absent
	queue []string          // a fair lock's queue (with queue)
}

// read reads the lock hash, its PTTL and the fencing counter (with queue,
// the fair lock's queue too) in one pipeline, and checks that the hash is
// a lock's (layout.Check). Every key is in the lock's slot. A pipeline,
// not MULTI/EXEC, so that SECURITY.md's ACL rule needs no MULTI: a
// release between the reads shows as a hash whose PTTL says gone, and the
// TTL is then 0.
func (h *handle) read(ctx context.Context, queue bool) (lockState, error) {
	var (
		hash  *redis.MapStringStringCmd
		pttl  *redis.DurationCmd
		fence *redis.StringCmd
		q     *redis.StringSliceCmd
	)
	_, err := h.e.C.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
		hash = p.HGetAll(ctx, h.e.Name)
		pttl = p.PTTL(ctx, h.e.Name)
		fence = p.Get(ctx, keys.FenceCounter(h.e.Name))
		if queue {
			q = p.LRange(ctx, keys.FairQueue(h.e.Name), 0, -1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return lockState{}, h.readErr(err)
	}
	s := lockState{hash: hash.Val()}
	if err := layout.Check(h.e.Name, s.hash, false); err != nil {
		return lockState{}, fmt.Errorf("%s %q: %w", h.e.Kind, h.e.Name, err)
	}
	if v, err := fence.Result(); err == nil {
		if s.fence, err = strconv.ParseInt(v, 10, 64); err != nil {
			return lockState{}, h.readErr(err)
		}
	}
	switch d := pttl.Val(); {
	case len(s.hash) == 0, d == -2 || d == -2*time.Millisecond:
	case d < 0:
		s.ttl = -1
	default:
		s.ttl = d
	}
	if q != nil {
		s.queue = q.Val()
	}
	return s, nil
}

func (h *handle) readErr(err error) error {
	return fmt.Errorf("%s %q: %w", h.e.Kind, h.e.Name, errs.ReplyError(err))
}
