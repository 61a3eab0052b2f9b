package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chain serves the callers waiting when it began, and others only while
// it is younger than HandoffWindow.
func TestChainAllows(t *testing.T) {
	young := Chain{Start: time.Now(), Last: 5}
	assert.True(t, chainAllows(young, 3))
	assert.True(t, chainAllows(young, 9), "a young chain serves late arrivals")
	old := Chain{Start: time.Now().Add(-time.Second), Last: 5}
	assert.True(t, chainAllows(old, 5), "an old chain still serves those waiting when it began")
	assert.False(t, chainAllows(old, 6))
	assert.False(t, chainAllows(Chain{}, 1), "no chain: no handoff")
}

// claim takes only the head's offer, never while the head asks Redis,
// and only once; Withdraw returns a claimed offer with its outcome.
func TestClaimRules(t *testing.T) {
	c := lineClient(t)
	chain := c.lines.newChain()
	assert.Nil(t, c.lines.claim("r", chain, &c.owners), "no line")
	head := c.lines.Join("r", false)
	next := c.lines.Join("r", false)
	na := &acceptor{turn: next}
	na.setOffer(&Offer{Req: &Request{Name: "r", Field: "next"}})
	assert.Nil(t, c.lines.claim("r", Chain{Start: time.Now(), Last: 0}, &c.owners), "the head accepts no handoff")
	ha := &acceptor{turn: head}
	ha.setOffer(&Offer{Req: &Request{Name: "r", Field: "head"}})

	require.True(t, ha.beginAsking(true))
	assert.Nil(t, c.lines.claim("r", chain, &c.owners), "claimed while the head asks Redis")
	ha.endAsking()

	o := c.lines.claim("r", chain, &c.owners)
	require.NotNil(t, o)
	assert.Equal(t, "head", o.Req.Field)
	assert.Nil(t, c.lines.claim("r", chain, &c.owners), "claimed twice")
	assert.False(t, ha.beginAsking(true), "a claimed head asks Redis")
	o.finish(offerResult{Acquired: true, Fence: 7})
	got := ha.takeOffer(true)
	require.NotNil(t, got)
	assert.True(t, got.res.Acquired)
	assert.EqualValues(t, 7, got.res.Fence)
	c.owners.unlock(HoldKey{Key: "r", Field: "head"}, got.ol)
	assert.Nil(t, ha.takeOffer(true), "withdrawn twice")
	head.Leave()
	next.Leave()
}
