package request

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/core/bg"
)

// A fresh hold's acquisition's deadline comes two seconds before its lease
// ends when that leaves go-redis at least [MinTTL] to re-send, and is
// Deadline's otherwise.
func TestFreshDeadline(t *testing.T) {
	r := New(nil, slog.New(slog.DiscardHandler), bg.New(), new(atomic.Uint64), new(atomic.Uint64))
	r.clock.next = time.Now().Add(time.Hour) // no measurement of the offset
	ttl := func(reqTTL, lease time.Duration) time.Duration {
		r.ttl = reqTTL
		return time.Duration(r.FreshDeadline(context.Background(), lease)-time.Now().UnixMilli()) * time.Millisecond
	}
	for _, tc := range []struct{ reqTTL, lease, want time.Duration }{
		{45 * time.Second, 30 * time.Second, 28 * time.Second}, // go-redis's and the watchdog's defaults
		{45 * time.Second, time.Hour, 45 * time.Second},
		{10 * time.Second, 30 * time.Second, 10 * time.Second},
		{45 * time.Second, 7 * time.Second, 5 * time.Second},
		{45 * time.Second, 6 * time.Second, 45 * time.Second}, // too short: the script records
		{45 * time.Second, 100 * time.Millisecond, 45 * time.Second},
	} {
		assert.InDelta(t, tc.want.Milliseconds(), ttl(tc.reqTTL, tc.lease).Milliseconds(), 50, "request TTL %v, lease %v", tc.reqTTL, tc.lease)
	}
}
