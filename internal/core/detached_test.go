package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type detachedKey struct{}

// TestDetachedContext: a detached context keeps the caller's values, not
// its cancellation, and ends by the shared deadline, at most
// releaseTimeout away; contexts derived from it end with it.
func TestDetachedContext(t *testing.T) {
	c := NewClient(nil, Options{})
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), detachedKey{}, "v"))
	cancelParent()
	before := time.Now()
	ctx, cancel := c.DetachedContext(parent)
	defer cancel()
	require.NoError(t, ctx.Err())
	require.NoError(t, context.Cause(ctx))
	require.Equal(t, "v", ctx.Value(detachedKey{}))
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	require.False(t, dl.After(time.Now().Add(releaseTimeout)))
	require.True(t, dl.After(before.Add(releaseTimeout-detachedGrain)))
	select {
	case <-ctx.Done():
		t.Fatal("done before its deadline")
	default:
	}

	bg, cancelBg := c.DetachedContext(context.Background())
	defer cancelBg()
	bdl, _ := bg.Deadline()
	require.Equal(t, dl, bdl, "one shared deadline within a grain")

	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	require.NoError(t, child.Err())
	c.detachedEnds.cancel() // as the deadline would
	<-child.Done()
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.Error(t, ctx.Err())
}
