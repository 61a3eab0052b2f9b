package bg

import (
	"context"
	"sync"
	"time"
)

// Detached returns a context for a release or clean-up that must run
// even though ctx is cancelled: ctx's values without its cancellation,
// bounded by a timeout (ReleaseTimeout, less at most detachedGrain).
//
// The deadline is shared (detachedEnd): a context.WithTimeout per call
// costs a timer, its closure, the context, the cancel function and the
// Done channel go-redis asks for, at every release. A caller's context
// without values or cancellation (context.Background) gets the shared
// context itself; any other is wrapped in one small detached. The cancel
// function returned does nothing: the shared deadline ends the context.
func (g *Group) Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	end := g.detachedEnd()
	if ctx == context.Background() || ctx == context.TODO() {
		return end, noCancel
	}
	if _, ok := ctx.Deadline(); ok || ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx) // else ctx is never cancelled: keep it
	}
	return &detached{values: ctx, end: end}, noCancel
}

// noCancel is the cancel function of Detached's contexts.
func noCancel() {}

// detachedGrain is how much shorter than ReleaseTimeout the shared deadline
// of Detached may be: a new one is made when the current one ends
// sooner than ReleaseTimeout less this.
const detachedGrain = 50 * time.Millisecond

// detachedEnds keeps the shared deadline of Detached's contexts.
type detachedEnds struct {
	mu     sync.Mutex
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc // never called: the deadline ends ctx
}

// detachedEnd returns a context that ends between ReleaseTimeout less
// detachedGrain and ReleaseTimeout from now, shared by the calls of one
// detachedGrain.
func (g *Group) detachedEnd() context.Context {
	d := &g.detachedEnds
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.at.Sub(now) < ReleaseTimeout-detachedGrain {
		d.at = now.Add(ReleaseTimeout)
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.at)
	}
	return d.ctx
}

// detached is a context with the values of a caller's (without its
// cancellation) and the deadline, Done and Err of a shared one (end).
type detached struct {
	values context.Context
	end    context.Context
}

func (d *detached) Deadline() (time.Time, bool) { return d.end.Deadline() }
func (d *detached) Done() <-chan struct{}       { return d.end.Done() }
func (d *detached) Err() error                  { return d.end.Err() }

// Value returns the caller's values; the context package's own key (which
// values, having no cancellation, does not answer) finds end's, so that a
// context derived from this one is cancelled with it and context.Cause
// reports end's cause.
func (d *detached) Value(key any) any {
	if v := d.values.Value(key); v != nil {
		return v
	}
	return d.end.Value(key)
}
