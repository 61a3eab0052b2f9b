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
	assert.True(t, young.allows(3))
	assert.True(t, young.allows(9), "a young chain serves late arrivals")
	old := Chain{Start: time.Now().Add(-time.Second), Last: 5}
	assert.True(t, old.allows(5), "an old chain still serves those waiting when it began")
	assert.False(t, old.allows(6))
	assert.False(t, Chain{}.allows(1), "no chain: no handoff")
}

// Claim takes only the head's Handoff, never before it opened nor while
// the head asks Redis, and only once; withdraw returns a claimed handoff
// with its outcome.
func TestClaimRules(t *testing.T) {
	c := lineClient(t)
	chain := c.lines.newChain()
	h, _ := c.lines.Claim("r", chain, &c.owners)
	assert.Nil(t, h, "no line")
	head := c.lines.Join("r", false)
	next := c.lines.Join("r", false)
	var nh, hh Handoff
	next.AcceptHandoffs(&nh)
	nh.Open(&Request{Name: "r", Field: "next"})
	h, _ = c.lines.Claim("r", Chain{Start: time.Now(), Last: 0}, &c.owners)
	assert.Nil(t, h, "the head accepts no handoff")
	head.AcceptHandoffs(&hh)
	h, _ = c.lines.Claim("r", chain, &c.owners)
	assert.Nil(t, h, "claimed before the head opened")
	hh.Open(&Request{Name: "r", Field: "head"})

	require.True(t, hh.Ask())
	h, _ = c.lines.Claim("r", chain, &c.owners)
	assert.Nil(t, h, "claimed while the head asks Redis")
	hh.DoneAsking()

	h, req := c.lines.Claim("r", chain, &c.owners)
	require.NotNil(t, h)
	assert.Equal(t, "head", req.Field)
	again, _ := c.lines.Claim("r", chain, &c.owners)
	assert.Nil(t, again, "claimed twice")
	assert.False(t, hh.Ask(), "a claimed head asks Redis")
	h.Finish(HandoffResult{Acquired: true, Fence: 7})
	res, got, ol, ok := hh.withdraw()
	require.True(t, ok)
	assert.Equal(t, "head", got.Field)
	assert.True(t, res.Acquired)
	assert.EqualValues(t, 7, res.Fence)
	c.owners.unlock(HoldKey{Key: "r", Field: "head"}, ol)
	_, _, _, ok = hh.withdraw()
	assert.False(t, ok, "withdrawn twice")
	head.Leave()
	next.Leave()
}

// A wake-up before the head opened its Handoff ends its first sleep at
// once: a hold lost while the head was asking Redis is not missed.
func TestWakeBeforeOpen(t *testing.T) {
	c := lineClient(t)
	head := c.lines.Join("w", false)
	var h Handoff
	head.AcceptHandoffs(&h)
	c.lines.wake("w")
	h.Open(&Request{Name: "w", Field: "head"})
	select {
	case <-h.Handed():
	default:
		t.Fatal("the wake-up before Open was lost")
	}
	res, req, ol, ok := h.take()
	require.True(t, ok)
	assert.False(t, res.Acquired)
	assert.Nil(t, ol, "a wake-up takes no owner's lock")
	assert.Equal(t, "head", req.Field)
	assert.True(t, h.Ask(), "ready again after a wake-up")
	head.Leave()
}
