package semaphore

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// maxPermits bounds every permit count a call takes: the scripts compare
// counts as Lua numbers (doubles), which are exact up to 2^53.
const maxPermits = 1 << 53

// maxIDs bounds the permits one call of the expirable semaphore acquires or
// releases: each one is an id in the script call (16 bytes and a zset
// update), so a call stays a few megabytes at most.
const maxIDs = 1 << 16

// base is what both semaphores share: the client, the name and the
// requests that are the same for both.
type base struct {
	h core.Handle // Kind: "semaphore" or "expirable semaphore"
	// q is the semaphore's queue of waiting Clients, which the counted and
	// the expirable semaphore of a name share (queue.go)
	q *core.Queue
}

// fail wraps an error of operation op.
func (b *base) fail(op string, err error) error {
	return fmt.Errorf("%s %q: %s: %w", b.h.Kind, b.h.Name, op, errs.ReplyError(err))
}

// checkN checks a permit count for an acquisition or a release.
func (b *base) checkN(ctx context.Context, n int64) error {
	if err := b.h.Check(ctx); err != nil {
		return err
	}
	if n <= 0 || n > maxPermits {
		return b.h.Invalid("%d permits, must be between 1 and 2^53", n)
	}
	return nil
}

// checkIDs checks the number of permits of one acquisition of the
// expirable semaphore, each an id in the script call.
func (b *base) checkIDs(ctx context.Context, n int64) error {
	if err := b.h.Check(ctx); err != nil {
		return err
	}
	if n <= 0 || n > maxIDs {
		return b.h.Invalid("%d permits, must be between 1 and %d", n, maxIDs)
	}
	return nil
}

// waitEnd is when the requests of an acquisition that waits at most wait
// (unless forever) are cut: zero, never, for Acquire and for a single
// attempt (TryAcquire(ctx, 0) is one request, bounded by ctx and go-redis).
func waitEnd(forever bool, wait time.Duration) time.Time {
	if forever || wait <= 0 {
		return time.Time{}
	}
	return time.Now().Add(wait)
}

// cutAt returns the context of one acquisition request: ctx, ending at end
// too when end is set, so that a slow or unreachable Redis does not keep a
// TryAcquire past its wait (a stalled read is cut only on a go-redis
// client with ContextTimeoutEnabled).
func cutAt(ctx context.Context, end time.Time) (context.Context, context.CancelFunc) {
	if end.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, end)
}

// wasCut reports whether a request run on rctx (from cutAt on ctx) failed
// because the wait ended, not ctx: its acquisition is undone, and the
// attempt reports "not acquired".
func wasCut(rctx, ctx context.Context) bool { return rctx.Err() != nil && ctx.Err() == nil }

func (b *base) requestKey() string { return keys.Request(b.h.Name, b.h.C.Requests().ID()) }

// trySet runs semaphore_try_set.lua; expirable says whether expired permits
// are given back first.
func (b *base) trySet(ctx context.Context, n int64, expirable bool) (bool, error) {
	if err := b.h.Check(ctx); err != nil {
		return false, err
	}
	if n < 0 || n > maxPermits {
		return false, b.h.Invalid("%d permits, must be between 0 and 2^53", n)
	}
	pub, err := b.h.C.PublishCommand(ctx)
	if err != nil {
		return false, b.fail("set permits", err)
	}
	set := lua.SemaphoreTrySetArgs{Semaphore: b.h.Name, Timeouts: b.timeouts(expirable),
		Channel: keys.SemaphoreChannel(b.h.Name), Request: b.requestKey(), N: n,
		Deadline: b.h.C.Requests().Deadline(ctx), Expirable: expirable, Publish: pub}
	var r int64
	err = acked(b.h.C, func(run lua.Runner) (err error) {
		r, err = set.Run(ctx, run)
		return err
	})
	if err != nil {
		return false, b.fail("set permits", err)
	}
	return r == lua.SemaphoreTrySetSet, nil
}

// add runs semaphore_add.lua.
func (b *base) add(ctx context.Context, n int64, expirable bool) error {
	if err := b.h.Check(ctx); err != nil {
		return err
	}
	if n < -maxPermits || n > maxPermits {
		return b.h.Invalid("%d permits, must be between -2^53 and 2^53", n)
	}
	pub, err := b.h.C.PublishCommand(ctx)
	if err != nil {
		return b.fail("add permits", err)
	}
	add := lua.SemaphoreAddArgs{Semaphore: b.h.Name, Timeouts: b.timeouts(expirable),
		Channel: keys.SemaphoreChannel(b.h.Name), Request: b.requestKey(), N: n,
		Deadline: b.h.C.Requests().Deadline(ctx), Expirable: expirable, Publish: pub}
	err = acked(b.h.C, func(run lua.Runner) error {
		_, err := add.Run(ctx, run)
		return err
	})
	if err != nil {
		return b.fail("add permits", err)
	}
	return nil
}

// timeouts returns the Timeouts key of semaphore_try_set.lua and
// semaphore_add.lua: the expirable semaphore's zset; for the counted one,
// the count again (a key of the same slot the script does not touch).
func (b *base) timeouts(expirable bool) string {
	if expirable {
		return keys.SemaphoreTimeouts(b.h.Name)
	}
	return b.h.Name
}

// del runs semaphore_delete.lua on the given keys.
func (b *base) del(ctx context.Context, keys ...string) (bool, error) {
	if err := b.h.Check(ctx); err != nil {
		return false, err
	}
	del := lua.SemaphoreDeleteArgs{Request: b.requestKey(), Deleted: keys,
		Deadline: b.h.C.Requests().Deadline(ctx)}
	var r int64
	err := acked(b.h.C, func(run lua.Runner) (err error) {
		r, err = del.Run(ctx, run)
		return err
	})
	if err != nil {
		return false, b.fail("delete", err)
	}
	return r == lua.SemaphoreDeleteExisted, nil
}

// Permit ids: the zset member is the 16 raw bytes of the id, as Redisson
// stores it; users see them as 32 hex characters.

// decodeID turns a user's permit id into the zset member.
func decodeID(id string) (string, bool) {
	if len(id) != 32 {
		return "", false
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return "", false
	}
	return string(raw), true
}
