package rlock

import (
	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
)

// SpinLock is Redisson's RSpinLock: the lock's layout and owner rules
// without pub/sub. Nothing is subscribed while waiting and nothing is
// published on release; a waiter re-tries with an exponential backoff and
// jitter (WithBackoff). Use it for very many locks (no subscription per
// lock) or for Redis-compatible servers without pub/sub. A spin lock and a
// Lock of the same name are the same lock. It has Lock's methods, with the
// same meanings, and is a redisync.Locker.
type SpinLock struct{ handle }

// NewSpin returns a handle on the spin lock called name. It does no I/O and
// never fails: an empty name or an invalid option (WithBackoff with min ≤ 0
// or min > max) is reported, wrapping redisync.ErrInvalidArgument, by the
// first operation.
func NewSpin(c *redisync.Client, name string, opts ...Option) *SpinLock {
	h := newHandle(c, "spin lock", name, opts)
	// No local line, so no handoff: every waiter spins in Redis.
	ls := newLockScripts(h.e, "").queued() // its scripts name the queue; its waiters spin
	ls.minHold = h.opts.minHold
	h.side = &core.Side{Kind: "spin lock", Fresh: true, Scripts: &spinScripts{
		lockScripts: *ls,
		spin:        &core.Spin{Min: h.opts.backoffMin, Max: h.opts.backoffMax},
	}}
	return &SpinLock{h}
}

// spinScripts are the lock's scripts (publishing nothing) with a spin
// wait: no subscription, a growing pause between attempts.
type spinScripts struct {
	lockScripts
	spin *core.Spin
}

// Waiting spins with the handle's backoff (WithBackoff).
func (s *spinScripts) Waiting(*core.Request) core.Waiting { return core.Waiting{Spin: s.spin} }

var _ redisync.Locker = (*SpinLock)(nil)
