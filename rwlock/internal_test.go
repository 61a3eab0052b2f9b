package rwlock

import (
	"testing"

	"github.com/redisync/redisync/internal/keys"
)

func TestWakePolicy(t *testing.T) {
	if got := wake(msgWrite, 5); got >= 0 {
		t.Fatalf(`a write release ("1") wakes %d waiters, want all`, got)
	}
	if got := wake(msgRead, 5); got != 1 {
		t.Fatalf(`a read release ("0") wakes %d waiters, want 1`, got)
	}
	if msgRead != "0" || msgWrite != "1" {
		t.Fatal("messages differ from Redisson's")
	}
}

// TestTimeoutParts: the parts scripts build other readers' timeout keys
// from agree with the key names of internal/keys.
func TestTimeoutParts(t *testing.T) {
	for _, name := range []string{"config", "{orders}:rw", "a{b}c", "x:y"} {
		head, tail := keys.RWTimeoutParts(name)
		owner := "6f1c2a54-3b7e-4c8d-9e0f-112233445566:7"
		if got, want := head+owner+tail, keys.RWTimeoutPrefix(name, owner); got != want {
			t.Fatalf("%q: parts give %q, want %q", name, got, want)
		}
		if got, want := head+owner+tail+":3", keys.RWTimeoutKey(name, owner, 3); got != want {
			t.Fatalf("%q: parts give %q, want %q", name, got, want)
		}
		if keys.Slot(keys.RWTimeoutKey(name, owner, 1)) != keys.Slot(name) {
			t.Fatalf("%q: timeout key not in the lock's slot", name)
		}
	}
	if got := keys.RWTimeoutKey("config", "id:1", 2); got != "{config}:id:1:rwlock_timeout:2" {
		t.Fatalf("RWTimeoutKey = %q", got)
	}
}
