package gate

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Gate is a lock handle's local read-write gate for callers without a
// context owner. Such callers all act for the handle's own owner, which
// Redis would let re-enter; the gate makes them exclude each other as
// sync.RWMutex's callers do: one exclusive holder (a lock, a write side) or
// any number of shared ones (read sides). Callers wait in arrival order,
// locally, without touching Redis; a waiting exclusive caller keeps later
// shared ones out, so writers are not starved. The zero value is an open
// gate.
type Gate struct {
	mu      sync.Mutex
	readers int  // shared holders
	writer  bool // an exclusive holder
	q       []*gateWaiter
}

type gateWaiter struct {
	shared bool
	ready  chan struct{} // closed when admitted
}

// admits reports whether a caller may pass now. g.mu must be held.
func (g *Gate) admits(shared bool) bool {
	if shared {
		return !g.writer
	}
	return !g.writer && g.readers == 0
}

func (g *Gate) take(shared bool) {
	if shared {
		g.readers++
	} else {
		g.writer = true
	}
}

// Enter passes the gate: at once when it admits the caller and nobody
// waits; otherwise after the callers before it, waiting as long as ctx,
// closing and (unless forever) wait allow. wait 0 and no admission gives
// (false, nil) at once. It returns (false, nil) when the wait ran out and
// an error wrapping ctx.Err() (or errs.ErrClosed) when ctx ended or the client
// closed; then it holds nothing and has left the queue.
func (g *Gate) Enter(ctx context.Context, shared, forever bool, wait time.Duration, closing <-chan struct{}) (bool, error) {
	g.mu.Lock()
	if len(g.q) == 0 && g.admits(shared) {
		g.take(shared)
		g.mu.Unlock()
		return true, nil
	}
	if !forever && wait <= 0 {
		g.mu.Unlock()
		return false, nil
	}
	w := &gateWaiter{shared: shared, ready: make(chan struct{})}
	g.q = append(g.q, w)
	g.mu.Unlock()

	var timeout <-chan time.Time
	if !forever {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case <-w.ready:
		return true, nil
	case <-timeout:
	case <-ctx.Done():
		err = errs.CtxError(ctx)
	case <-closing:
		err = errs.ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // admitted meanwhile: give the place back
		g.leaveLocked(shared)
	default:
		for i, o := range g.q {
			if o == w {
				g.q = append(g.q[:i], g.q[i+1:]...)
				break
			}
		}
		g.admitLocked() // a waiting writer that gave up may unblock readers
	}
	return false, err
}

// Holds reports whether the gate has a holder of the given kind.
func (g *Gate) Holds(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if shared {
		return g.readers > 0
	}
	return g.writer
}

// Leave gives one place back and admits the callers it unblocks. It
// reports false, changing nothing, when there was no such holder.
func (g *Gate) Leave(shared bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leaveLocked(shared)
}

func (g *Gate) leaveLocked(shared bool) bool {
	switch {
	case shared && g.readers > 0:
		g.readers--
	case !shared && g.writer:
		g.writer = false
	default:
		return false
	}
	g.admitLocked()
	return true
}

// admitLocked admits waiters from the head of the queue while the gate
// admits them. g.mu must be held.
func (g *Gate) admitLocked() {
	for len(g.q) > 0 && g.admits(g.q[0].shared) {
		w := g.q[0]
		g.q = g.q[1:]
		g.take(w.shared)
		close(w.ready)
	}
}

// Queued returns the number of callers waiting to pass, for tests.
func (g *Gate) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.q)
}
