package core

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
)

// tokens hands out owner tokens: positive, unique within the process. An
// owner is "<client id>:<token>", so tokens from different processes never
// meet under the same client id.
var tokens atomic.Uint64

// NewToken returns a fresh owner token.
func NewToken() uint64 { return tokens.Add(1) }

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

// Owner returns the owner acting in ctx for a handle whose own token is
// handleToken: the context's owner when it carries one, else the handle's.
// A context carrying token 0 is an invalid argument.
func (c *Client) Owner(ctx context.Context, handleToken uint64) (string, error) {
	t, ok := OwnerToken(ctx)
	if !ok {
		t = handleToken
	} else if t == 0 {
		return "", fmt.Errorf("%w: owner token must be positive", ErrInvalidArgument)
	}
	return c.id + ":" + strconv.FormatUint(t, 10), nil
}
