package core

import (
	"testing"
	"time"
)

func TestRetryAfterPTTL(t *testing.T) {
	if d := RetryAfterPTTL(0); d <= 0 {
		t.Fatalf("PTTL 0 gives hint %v: the waiter would fall back to the re-check cap", d)
	}
	if d := RetryAfterPTTL(1500); d != 1501*time.Millisecond {
		t.Fatalf("PTTL 1500 gives %v", d)
	}
	if d := RetryAfterPTTL(-1); d != 0 {
		t.Fatalf("no expiry gives %v, want no hint", d)
	}
}

// One lease rule for every primitive: whole milliseconds, rounded up, so a
// positive lease never becomes PEXPIRE 0 (rlock once sent 500µs as 0 and
// the lock was gone the moment it was taken).
func TestMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {500 * time.Microsecond, 1}, {time.Millisecond, 1}, {1500 * time.Microsecond, 2}, {time.Second, 1000}} {
		if got := Millis(c.d); got != c.want {
			t.Errorf("Millis(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	if err := CheckLease("rlock", 0); err == nil {
		t.Error("a zero lease must be refused")
	}
	if err := CheckLease("rlock", 500*time.Microsecond); err != nil {
		t.Errorf("a 500µs lease is rounded up, not refused: %v", err)
	}
}
