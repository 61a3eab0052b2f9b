package rwlock

import (
	"time"

	"github.com/redisync/redisync/internal/core"
)

// Option configures an RWLock.
type Option func(*options)

type options struct {
	lease time.Duration // 0: watchdog
	err   error
}

// WithLease gives every acquisition, read or write, a fixed lease of d,
// and no watchdog renews it. An owner's read holds last until d after its
// latest read acquisition or partial read release (each read hold has its
// own timeout key; a partial release gives the remaining ones a full lease
// again). A write hold lasts until d after it was taken, re-entered or partly
// released. Done closes, with ErrLockLost, when the lease runs out. d must be
// at least 1ms and at most 2^43 ms (about 278 years; outside that, the first
// operation returns an error wrapping redisync.ErrInvalidArgument); Redis
// counts leases in whole milliseconds, and d is rounded up to one. The default is no
// fixed lease: every hold lasts until its release, renewed by the Client's
// watchdog (lease = redisync.WithWatchdogTimeout, renewed every third of
// it).
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if err := core.CheckLease("rwlock", d); err != nil {
			if o.err == nil {
				o.err = err
			}
			return
		}
		o.lease = d
	}
}
