package rlock

import (
	"fmt"
	"time"

	"github.com/redisync/redisync"
)

// Option configures a Lock.
type Option func(*options)

type options struct {
	lease   time.Duration // 0: watchdog
	fencing bool
	err     error
}

// WithLease gives every acquisition a fixed lease of d: the lock expires d
// after it was taken (or re-entered, or partly released) unless released
// first, and no watchdog renews it. Done closes, with ErrLockLost, when the
// lease runs out. d must be positive. The default is no fixed lease: the
// hold lasts until Unlock, renewed by the Client's watchdog (lease =
// WithWatchdogTimeout, renewed every third of it).
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			if o.err == nil {
				o.err = fmt.Errorf("%w: rlock lease %v, must be positive", redisync.ErrInvalidArgument, d)
			}
			return
		}
		o.lease = d
	}
}

// WithFencing makes the lock a fenced lock (Redisson RFencedLock): every
// successful acquisition, reentrant ones included, increments the counter
// redisson_lock_token:{name}, and Token returns the value it got. Tokens only
// grow; unlock never resets them. Pass the token to the resource the lock
// guards and have it reject writes carrying a token lower than one it has
// seen: that keeps a holder whose lease ran out (a long GC pause, a network
// partition) from overwriting the next holder's work. The default is no
// fencing.
func WithFencing() Option {
	return func(o *options) { o.fencing = true }
}
