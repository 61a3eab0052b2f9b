package core

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// The bounds of every lease (the locks' WithLease, the watchdog timeout, an
// expirable permit's lease): at least a millisecond, Redis's unit, and at
// most 2^43 ms (about 278 years), so that a lease added to the server's
// clock in epoch milliseconds stays exact in a Lua number (a double, exact
// to 2^53) and within time.Duration.
const (
	MinLease = time.Millisecond
	MaxLease = (1 << 43) * time.Millisecond
)

// LeaseError returns nil for a lease within [MinLease, MaxLease], else the
// reason it is not, for an error wrapping errs.ErrInvalidArgument.
func LeaseError(d time.Duration) string {
	switch {
	case d < MinLease:
		return fmt.Sprintf("lease %v, must be at least 1ms", d)
	case d > MaxLease:
		return fmt.Sprintf("lease %v, must be at most 2^43 ms (about 278 years)", d)
	}
	return ""
}

// CheckLease is the one rule for a fixed lease given as an option (the
// locks' WithLease): at least MinLease and at most MaxLease. Leases are sent
// to Redis in whole milliseconds, rounded up (Millis). It returns an error
// wrapping errs.ErrInvalidArgument that names kind, or nil.
func CheckLease(kind string, d time.Duration) error {
	if msg := LeaseError(d); msg != "" {
		return fmt.Errorf("%w: %s %s", errs.ErrInvalidArgument, kind, msg)
	}
	return nil
}

// Millis converts a duration to the whole milliseconds Redis counts leases
// in, rounding up: every positive duration is at least 1. Durations ≤ 0 give
// 0.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
