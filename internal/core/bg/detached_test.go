package bg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type detachedKey struct{}

// TestDetachedContext: a detached context keeps the caller's values, not
// its cancellation, and ends by the shared deadline, at most
// ReleaseTimeout away; contexts derived from it end with it.
func TestDetachedContext(t *testing.T) {
	g := New()
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), detachedKey{}, "v"))
	cancelParent()
	before := time.Now()
	ctx, cancel := g.Detached(parent)
	defer cancel()
	require.NoError(t, ctx.Err())
	require.NoError(t, context.Cause(ctx))
	require.Equal(t, "v", ctx.Value(detachedKey{}))
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	require.False(t, dl.After(time.Now().Add(ReleaseTimeout)))
	require.True(t, dl.After(before.Add(ReleaseTimeout-detachedGrain)))
	select {
	case <-ctx.Done():
		t.Fatal("done before its deadline")
	default:
	}

	bg, cancelBg := g.Detached(context.Background())
	defer cancelBg()
	bdl, _ := bg.Deadline()
	require.Equal(t, dl, bdl, "one shared deadline within a grain")

	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	require.NoError(t, child.Err())
	g.detachedEnds.cancel() // as the deadline would
	<-child.Done()
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.Error(t, ctx.Err())
}
