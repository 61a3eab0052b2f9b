package election

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/rlock"
)

// Option configures an Election.
type Option func(*options)

type options struct {
	lease time.Duration // 0: the Client's watchdog timeout
	err   error
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithLease sets the election's lease: a leader's hold expires d after
// its last renewal, and the Client's watchdog renews it every third of d,
// so a leader whose process dies or is cut off from Redis is replaced
// about d later (plus the next candidate's re-check), and a leader that
// cannot renew sees its leadership end before that. It does not change
// the lease of the Client's other locks. d must be at least 1ms and at
// most 2^43 ms, and is rounded up to whole milliseconds; outside that
// range the first operation returns an error wrapping
// redisync.ErrInvalidArgument. Keep d well above the round-trip time to
// Redis and the replicas' acknowledgement. The default is the Client's
// watchdog timeout (redisync.WithWatchdogTimeout, 30s by default).
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if err := core.CheckLease("election", d); err != nil {
			if o.err == nil {
				o.err = fmt.Errorf("lease: %w", err)
			}
			return
		}
		o.lease = d
	}
}

// lockOptions are the options of the election's lock: a fair lock,
// fenced (the fencing token is the term), with the election's lease.
func (o options) lockOptions() []rlock.Option {
	opts := []rlock.Option{rlock.WithFencing()}
	if o.lease > 0 {
		opts = append(opts, rlock.WithWatchdogTimeout(o.lease))
	}
	return opts
}
