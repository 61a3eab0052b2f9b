package keys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLayout(t *testing.T) {
	cases := []struct{ got, want string }{
		{Tag("orders:42"), "{orders:42}"},
		{Tag("a{b}c"), "a{b}c"},
		{LockChannel("orders:42"), "redisson_lock__channel:{orders:42}"},
		{LockChannel("a{b}"), "redisson_lock__channel:a{b}"},
		{FenceCounter("x"), "redisson_lock_token:{x}"},
		{RWChannel("x"), "redisson_rwlock:{x}"},
		{RWWriteField("id:1"), "id:1:write"},
		{RWTimeoutPrefix("x", "id:1") + ":1", "{x}:id:1:rwlock_timeout:1"},
		{SemaphoreChannel("s"), "redisson_sc:{s}"},
		{SemaphoreTimeouts("s"), "{s}:timeout"},
		{LatchChannel("l"), "redisson_countdownlatch__channel__{l}"},
		{LatchChannel("a{b}"), "redisson_countdownlatch__channel__{a{b}}"},
		{Request("x", "r1"), "redisync_request:{x}:r1"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.got)
	}
}

func TestSlot(t *testing.T) {
	// Reference values from CLUSTER KEYSLOT.
	cases := map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "user1000": 3443, "a{}b": 13694, "orders:42": 11414}
	for k, want := range cases {
		assert.Equal(t, want, Slot(k), "Slot(%q)", k)
	}
	assert.Equal(t, Slot("orders:42"), Slot(LockChannel("orders:42")), "a lock's keys must share its slot")
	assert.Equal(t, Slot("orders:42"), Slot(Request("orders:42", "r")), "a lock's keys must share its slot")
}

// A request key shares its name's slot whatever braces the name holds.
func TestRequestSharesSlot(t *testing.T) {
	for _, name := range []string{"orders:42", "a{b}c", "a}b", "a{}b", "a{b", "}{", "{", "}", "x{y}z{w}"} {
		assert.Equal(t, Slot(name), Slot(Request(name, "c:1")), "Request(%q)", name)
	}
}

// AppendRequestPrefix builds in a buffer what RequestPrefix returns: the
// prefix, then what gives the name's slot, in braces unless the name's
// own hash tag gives it.
func TestAppendRequestPrefix(t *testing.T) {
	for _, name := range []string{"orders:42", "a{b}c", "a}b", "a{}b", "a{b", "}{", "{", "}", "x{y}z{w}", ""} {
		assert.Equal(t, RequestPrefix(name), string(AppendRequestPrefix([]byte("x"), name))[1:], "%q", name)
	}
	assert.Equal(t, "redisync_request:{orders:42}:", RequestPrefix("orders:42"))
	assert.Equal(t, "redisync_request:a{b}c:", RequestPrefix("a{b}c"))
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		var buf [64]byte
		_ = AppendRequestPrefix(buf[:0], "orders:42")
	}), "allocations")
}

// StrayBraces is true exactly when a derived key leaves the name's slot.
func TestStrayBraces(t *testing.T) {
	for _, name := range []string{"orders:42", "a{b}c", "{x}", "a}b{c}", "x{y}z{w}"} {
		assert.False(t, StrayBraces(name), name)
		assert.Equal(t, Slot(name), Slot(FenceCounter(name)), "FenceCounter(%q)", name)
		assert.Equal(t, Slot(name), Slot(SemaphoreTimeouts(name)), "SemaphoreTimeouts(%q)", name)
	}
	for _, name := range []string{"a}b", "a{}b", "a{b", "}{", "{", "}"} {
		assert.True(t, StrayBraces(name), name)
	}
}

// A name longer than LongName is not repeated in full in its request
// keys: they stay short (a 1 MiB name left a 1 MiB record per call),
// share the name's slot, start with the name's first bytes (before any
// brace: a key prefix and ACL key patterns on it still match), and differ
// for names that differ anywhere, the last byte included.
func TestRequestOfLongName(t *testing.T) {
	mib := strings.Repeat("n", 1<<20)
	names := []string{
		"app:" + strings.Repeat("x", LongName-4), // the longest kept in full
		"app:" + strings.Repeat("x", LongName-3),
		"app:" + mib, "app:" + mib[1:] + "m",
		"app:{tenant}:" + mib, "app:" + strings.Repeat("y", 10) + "{" + mib + "}",
		"app:a}b" + mib, "app:" + strings.Repeat("z", 100) + "{" + mib,
	}
	seen := map[string]string{}
	for i, name := range names {
		p := RequestPrefix(name)
		assert.Equal(t, Slot(name), Slot(Request(name, "c:1")), "Request(%.40q…)", name)
		assert.Equal(t, p, string(AppendRequestPrefix(nil, name)))
		if i == 0 {
			assert.Equal(t, "redisync_request:{"+name+"}:", p, "kept in full")
			continue
		}
		assert.LessOrEqual(t, len(p), 140, "%q", p)
		assert.True(t, strings.HasPrefix(p, "redisync_request:app:"), "%q", p)
		assert.Equal(t, p, RequestPrefix(strings.Clone(name)), "the same for the same name")
		if other, ok := seen[p]; ok {
			t.Errorf("%q: the same prefix for two names (%.40q…)", p, other)
		}
		seen[p] = name
	}
}
