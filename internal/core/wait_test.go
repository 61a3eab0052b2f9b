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
