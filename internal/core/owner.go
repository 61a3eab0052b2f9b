package core

import (
	"context"
	"strconv"
	"sync/atomic"
)

// tokens hands out owner tokens: positive, unique within the process. An
// owner is "<client id>:<token>", so tokens from different processes never
// meet under the same client id.
var tokens atomic.Uint64

// NewToken returns a fresh owner token.
func NewToken() uint64 { return tokens.Add(1) }

// FreshToken returns the token of a fresh hold's owner (see Lock): a new
// token from NewToken, plus a random number drawn for the client. Context
// owners' tokens start from 1 in every process; if fresh holds' did, a
// process restarted with the same client id (WithID) would give its first
// holds the owners whose holds and marks its predecessor left in Redis,
// and find itself holding a dead process's hold or refused by a mark.
func (c *Client) FreshToken() uint64 { return c.freshBase + NewToken() }

type ownerKey struct{}

// WithOwnerToken returns ctx carrying owner token t.
func WithOwnerToken(ctx context.Context, t uint64) context.Context {
	return context.WithValue(ctx, ownerKey{}, t)
}

// OwnerToken returns the owner token ctx carries and whether it carries one.
func OwnerToken(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(ownerKey{}).(uint64)
	return t, ok
}

// ownerName returns the owner "<client id>:<token>" of token in c.
func (c *Client) ownerName(token uint64) string {
	return c.id + ":" + strconv.FormatUint(token, 10)
}
