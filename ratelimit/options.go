package ratelimit

import "time"

// RateOption configures TrySetRate, SetRate and UpdateRate.
type RateOption func(*rateOptions)

// rateOptions are the optional settings of a rate; defaults are the zero
// values.
type rateOptions struct {
	keepAlive time.Duration
}

// WithKeepAlive makes every key of the limiter (its configuration, and each
// budget) expire after d without use, Redisson's keepAliveTime: each
// acquisition and release renews the keys it touches, and the
// configuration's expiry. After that the limiter is not initialized
// (ErrNotInitialized) until a rate is set again. d must be at least the
// interval (a shorter one would forget grants that still count), and is
// sent in whole milliseconds, rounded up. The default is no expiry: the
// keys live until Delete (or SetRate, which resets the budgets).
func WithKeepAlive(d time.Duration) RateOption {
	return func(o *rateOptions) { o.keepAlive = d }
}
