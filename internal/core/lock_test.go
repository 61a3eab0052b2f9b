package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
)

// The request keys a lock handle builds from its cached prefix are the
// ones keys.Request builds, also for names with stray braces.
func TestLockRequestKey(t *testing.T) {
	c := NewClient(nil, Options{ID: "client-id"})
	for _, name := range []string{"orders", "a{b}c", "a}b", "{x"} {
		l := NewLock(c, "rlock", name)
		last, err := strconv.ParseUint(strings.TrimPrefix(c.Requests().ID(), c.Requests().Prefix()), 36, 64)
		require.NoError(t, err)
		got := l.requestKey()
		want := keys.Request(name, c.Requests().Prefix()+strconv.FormatUint(last+1, 36))
		assert.Equal(t, want, got, name)
	}
}

// Fresh holds' owner tokens start from a random number per client, so a
// process restarted with the same client id does not reuse the owners (and
// find the holds and marks) its predecessor left in Redis moments before.
func TestFreshTokens(t *testing.T) {
	a, b := NewClient(nil, Options{ID: "fixed"}), NewClient(nil, Options{ID: "fixed"})
	ta, tb := freshToken(a.freshBase), freshToken(b.freshBase)
	assert.GreaterOrEqual(t, ta, uint64(1<<40))
	assert.Less(t, ta, uint64(1<<41+1<<30))
	assert.NotEqual(t, a.freshBase, b.freshBase)
	assert.Greater(t, freshToken(a.freshBase), ta, "tokens grow")
	assert.Len(t, strconv.FormatUint(tb, 10), 13)
}

// Regression (issue 25): owner tokens were counted from 1 in every process,
// so two processes given the same client id had the same owners and both
// held one lock. Tokens are random 63-bit numbers now, distinct within the
// process and apart from the fresh holds' tokens.
func TestOwnerTokensRandom(t *testing.T) {
	seen := map[uint64]bool{}
	var bits uint64
	for range 10000 {
		tok := NewToken()
		require.False(t, seen[tok], "token %d twice", tok)
		seen[tok] = true
		assert.GreaterOrEqual(t, tok, uint64(minToken))
		assert.Less(t, tok, uint64(1<<63))
		bits |= tok
	}
	assert.Equal(t, uint64(1<<63-1), bits, "every one of the 63 bits is used")
	// A bijection: distinct inputs give distinct outputs below 2^63.
	out := map[uint64]bool{}
	for x := range uint64(1 << 16) {
		y := mix63(x<<47 | x) // inputs that differ in high and low bits
		require.Less(t, y, uint64(1<<63))
		require.False(t, out[y])
		out[y] = true
	}
	c := NewClient(nil, Options{ID: "fixed"})
	assert.Less(t, freshToken(c.freshBase), uint64(minToken))
}

// Regression (issue 42, item 6): the handle kept a copy of its latest
// fresh hold's acquisition request (Lock.record), whose Sync still pointed
// into the acquisition's own Request; a release that found the hold gone
// (release.go, the stale-hold branch) sent with that Sync: it waited for
// the replicas with the old acquisition's acknowledgement and wrote its
// own into the old acquisition's storage. The handle's copy now has no
// Sync (nor the runner made from it): every send sets its own.
func TestTookKeepsNoSync(t *testing.T) {
	c := NewClient(nil, Options{ID: "client-id"})
	req := &Request{Name: "orders", Owner: "client-id:1", Fresh: true}
	req.Sync = c.pipe.NewSyncIn(&req.sync)
	req.Runner = c.pipe.Runner(req.Sync)
	require.NotNil(t, req.Sync, "replica acknowledgement is on by default")
	kept := freshCopy(req)
	assert.Equal(t, req.Owner, kept.Owner)
	assert.Nil(t, kept.Sync, "the handle's copy points into the acquisition's Request")
	assert.Nil(t, kept.Runner, "the handle's copy runs through the acquisition's Sync")
}
