package core

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/keys"
)

// The request keys a lock handle builds from its cached prefix are the
// ones keys.Request builds, also for names with stray braces.
func TestLockRequestKey(t *testing.T) {
	c := NewClient(nil, Options{ID: "client-id"})
	for _, name := range []string{"orders", "a{b}c", "a}b", "{x"} {
		l := NewLock(c, "rlock", name)
		got := l.requestKey()
		want := keys.Request(name, c.reqID+"."+strconv.FormatUint(c.reqSeq.Load(), 36))
		assert.Equal(t, want, got, name)
	}
}
