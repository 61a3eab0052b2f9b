package rwlock

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/layout"
)

// Info is a snapshot of a read-write lock as Redis holds it, read in one
// round trip (one pipeline to the node of the lock's cluster slot).
type Info struct {
	// Mode is "read" or "write" while the lock is held, "" when it is
	// free. In write mode the writer may also hold read holds (a
	// downgrade in progress).
	Mode string
	// Writer is the owner holding the write side and its hold count;
	// nil unless Mode is "write".
	Writer *Holder
	// Readers are the owners holding read holds, with their read hold
	// counts, sorted by owner. A count may include holds whose own lease
	// ran out and that the next script on the lock will drop.
	Readers []Holder
	// TTL is the lock's remaining lease (its longest hold's); 0 when
	// free.
	TTL time.Duration
}

// Holder is one owner of a side of a read-write lock.
type Holder struct {
	Owner string // "<client id>:<token>" as stored (without the writer's ":write")
	Count int64  // hold count on that side
}

// Inspect reads the lock's mode, writer, readers and remaining lease in one
// round trip. A key under the lock's name that is not laid out as a
// read-write lock (another Redis type, or a hash without a mode field or
// with fields that are not owners, as an application's hash) gives an
// error wrapping redisync.ErrWrongType; Inspect only reads.
func (rw *RWLock) Inspect(ctx context.Context) (Info, error) {
	rw = rw.state()
	if err := rw.e.Check(ctx); err != nil {
		return Info{}, err
	}
	var (
		hash *redis.MapStringStringCmd
		pttl *redis.DurationCmd
	)
	_, err := rw.e.C.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
		hash = p.HGetAll(ctx, rw.e.Name)
		pttl = p.PTTL(ctx, rw.e.Name)
		return nil
	})
	if err != nil {
		return Info{}, fmt.Errorf("rwlock %q: %w", rw.e.Name, errs.ReplyError(err))
	}
	h := hash.Val()
	if err := layout.Check(rw.e.Name, h, true); err != nil {
		return Info{}, fmt.Errorf("rwlock %q: %w", rw.e.Name, err)
	}
	info := Info{Mode: h["mode"]}
	for f, v := range h {
		if f == "mode" {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64) // layout.Check: a positive integer
		if owner, ok := strings.CutSuffix(f, keys.RWWriteField("")); ok {
			info.Writer = &Holder{Owner: owner, Count: n}
		} else {
			info.Readers = append(info.Readers, Holder{Owner: f, Count: n})
		}
	}
	sort.Slice(info.Readers, func(i, j int) bool { return info.Readers[i].Owner < info.Readers[j].Owner })
	switch d := pttl.Val(); {
	case len(h) == 0, d == -2 || d == -2*time.Millisecond:
	case d < 0:
		info.TTL = -1
	default:
		info.TTL = d
	}
	return info, nil
}
