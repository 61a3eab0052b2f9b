package lua

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A script's digest is the recorded one only when it was recorded for the
// script's source: a script changed without regenerating the bindings gets
// one no server has (its calls fall back to EVAL), never the digest of its
// old source, which a server may still run.
func TestDigestOfChecksTheSource(t *testing.T) {
	src, ok := Composed("lock_acquire.lua")
	assert.True(t, ok)
	assert.Equal(t, digests["lock_acquire.lua"].sha1, digestOf("lock_acquire.lua", src))
	assert.Equal(t, digests["lock_acquire.lua"].sha1, LockAcquire.Hash())
	assert.Equal(t, staleDigest, digestOf("lock_acquire.lua", src+"\n"))
	assert.Equal(t, staleDigest, digestOf("no_such.lua", src))
	assert.Equal(t, staleDigest, withDigest("return 1", staleDigest).Hash())
}
