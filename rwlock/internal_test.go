package rwlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
)

func TestWakePolicy(t *testing.T) {
	assert.Negative(t, wake(msgWrite, 5), `a write release ("1") wakes all waiters`)
	assert.Equal(t, 1, wake(msgRead, 5), `a read release ("0") wakes 1 waiter`)
	assert.Equal(t, "0", msgRead, "messages differ from Redisson's")
	assert.Equal(t, "1", msgWrite, "messages differ from Redisson's")
}

// TestTimeoutParts: the parts scripts build other readers' timeout keys
// from agree with the key names of internal/keys.
func TestTimeoutParts(t *testing.T) {
	for _, name := range []string{"config", "{orders}:rw", "a{b}c", "x:y"} {
		head, tail := keys.RWTimeoutParts(name)
		owner := "6f1c2a54-3b7e-4c8d-9e0f-112233445566:7"
		require.Equal(t, keys.RWTimeoutPrefix(name, owner), head+owner+tail, "%q: parts", name)
		require.Equal(t, keys.RWTimeoutKey(name, owner, 3), head+owner+tail+":3", "%q: parts", name)
		require.Equal(t, keys.Slot(name), keys.Slot(keys.RWTimeoutKey(name, owner, 1)), "%q: timeout key not in the lock's slot", name)
	}
	require.Equal(t, "{config}:id:1:rwlock_timeout:2", keys.RWTimeoutKey("config", "id:1", 2), "RWTimeoutKey")
}
