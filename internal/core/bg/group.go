package bg

import (
	"context"
	"sync"
	"time"
)

// ReleaseTimeout bounds a release (or the undo of an acquire) that runs on
// a context detached from a cancelled caller (Detached).
const ReleaseTimeout = 10 * time.Second

// CloseGrace is how long Close lets undos, settles and queue leaves that
// are under way go on before it cancels them (Finish).
const CloseGrace = 5 * time.Second

// Group is one client's background work. The zero value is not usable:
// New makes one.
type Group struct {
	closing chan struct{}
	once    sync.Once
	// wg counts background work; Wait waits for it after Close, which
	// cancels it. mu orders wg.Add before Close's wg.Wait.
	wg sync.WaitGroup
	mu sync.Mutex
	// detachedEnds: the shared deadline of Detached.
	detachedEnds detachedEnds
}

// New returns a group with no work under way.
func New() *Group { return &Group{closing: make(chan struct{})} }

// Closing is closed when Close starts.
func (g *Group) Closing() <-chan struct{} { return g.closing }

// Context returns a context that is done when Close starts.
func (g *Group) Context() context.Context { return closedContext{g.closing} }

// Close closes Closing, cancels the background work (Finish's after its
// grace) and counts no more. It is idempotent; Wait waits for the work.
func (g *Group) Close() {
	g.once.Do(func() {
		g.mu.Lock()
		close(g.closing)
		g.mu.Unlock()
	})
}

// Wait waits for the background work counted before Close.
func (g *Group) Wait() { g.wg.Wait() }

// Background runs f in a goroutine that Close waits for. f's context ends
// when Close starts, or after timeout. It reports false, running nothing,
// when the group is closed already.
func (g *Group) Background(timeout time.Duration, f func(ctx context.Context)) bool {
	return g.spawn(timeout, 0, f)
}

// Finish is Background for work that Close lets finish: undos, settles
// and queue leaves under way. f's context ends after timeout, or
// CloseGrace after Close starts, whichever comes first.
func (g *Group) Finish(timeout time.Duration, f func(ctx context.Context)) bool {
	return g.spawn(timeout, CloseGrace, f)
}

// spawn runs f in a goroutine that Close waits for; f's context ends after
// timeout, or grace after Close starts. It reports false, running nothing,
// when the group is closed already.
func (g *Group) spawn(timeout, grace time.Duration, f func(ctx context.Context)) bool {
	if !g.Track() {
		return false
	}
	go func() {
		defer g.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		stop := context.AfterFunc(closedContext{g.closing}, func() {
			if grace > 0 {
				t := time.NewTimer(grace)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
			cancel()
		})
		defer stop()
		f(ctx)
	}()
	return true
}

// Track counts one piece of work that Close waits for (Untrack ends it).
// It reports false, counting nothing, when the group is closed already.
func (g *Group) Track() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.closing:
		return false
	default:
	}
	g.wg.Add(1)
	return true
}

// Untrack ends a piece of work counted by Track.
func (g *Group) Untrack() { g.wg.Done() }

// closedContext is a context that is done when ch is closed.
type closedContext struct{ ch <-chan struct{} }

func (closedContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c closedContext) Done() <-chan struct{}     { return c.ch }
func (c closedContext) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}
func (closedContext) Value(any) any { return nil }
