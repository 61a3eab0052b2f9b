package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
)

// Local lines of waiters.
//
// The callers of one Client that wait for permits of one limiter form a
// line, in arrival order (x/sync/semaphore's rule: a large request is not
// starved by small ones). Only the head asks Redis. When Redis says no, it
// also says how long until the permits the head wants are free (the delay):
// the head sleeps that long on one timer, then asks again. Waiters behind
// it hold no timer and send nothing: each waits for its turn or its ctx.
// Since none of them can be served before the head, every waiter whose
// bound (its TryAcquire wait, or its ctx's deadline) ends before the head's
// next attempt is told at once that it cannot succeed, and returns then,
// instead of sleeping its wait out as Redisson's tryAcquire does.
//
// Lines are keyed by the Client and the limiter's name, held in a map of
// this package, and deleted when empty; they hold no goroutine.

// lineKey names one line.
type lineKey struct {
	c    *core.Client
	name string
}

var lines = struct {
	mu sync.Mutex
	m  map[lineKey]*line
}{m: make(map[lineKey]*line)}

// line is the queue of waiters; q[0] is the head.
type line struct {
	q []*waiter
	// next is when the head asks Redis again (zero: it is asking now, or
	// will at once): a waiter joining with an earlier bound cannot succeed.
	next time.Time
	// kick is closed (and replaced) by a Release of this Client, to make
	// the sleeping head ask again at once: the permits it waits for may be
	// back before the delay Redis gave. Releases of other processes are
	// not seen (Redisson has no pub/sub for its rate limiter); the head
	// then asks when its delay ends.
	kick chan struct{}
}

// waiter is one caller's place in a line.
type waiter struct {
	key   lineKey
	bound time.Time     // when its wait or its ctx ends; zero: never
	ready chan struct{} // closed when it is the head, or when it cannot succeed (late)
	late  bool          // set before ready is closed: it cannot succeed within bound
}

// join puts a waiter at the end of the line of key; with onlyIfEmpty only
// into an empty line (nil otherwise). A waiter whose bound comes before
// the head's next attempt is late at once (await reports it).
func join(key lineKey, bound time.Time, onlyIfEmpty bool) *waiter {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[key]
	if l == nil {
		l = &line{}
		lines.m[key] = l
	} else if onlyIfEmpty && len(l.q) > 0 {
		return nil
	}
	w := &waiter{key: key, bound: bound, ready: make(chan struct{})}
	if len(l.q) > 0 && !bound.IsZero() && bound.Before(l.next) {
		w.late = true
		close(w.ready)
		return w // not in the line: leave finds nothing to do
	}
	if len(l.q) == 0 {
		l.next = time.Time{}
		close(w.ready)
	}
	l.q = append(l.q, w)
	return w
}

// await waits for the waiter's turn. It returns (true, nil) at the head,
// (false, nil) when it was told it cannot succeed within its bound, and
// ctx's error or errs.ErrClosed when ctx ended or the Client closed first.
func (w *waiter) await(ctx context.Context) (bool, error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return false, context.Cause(ctx)
	case <-w.key.c.Background().Closing():
		return false, errs.ErrClosed
	}
	lines.mu.Lock()
	late := w.late
	lines.mu.Unlock()
	return !late, nil
}

// notBefore tells, from the head, every waiter behind it whose bound ends
// before next (the head's next attempt) that it cannot succeed: they leave
// the line and return at once.
func (w *waiter) notBefore(next time.Time) {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[w.key]
	if l == nil || len(l.q) == 0 || l.q[0] != w {
		return
	}
	l.next = next
	kept := l.q[:1]
	for _, o := range l.q[1:] {
		if !o.bound.IsZero() && o.bound.Before(next) {
			o.late = true
			close(o.ready)
			continue
		}
		kept = append(kept, o)
	}
	clear(l.q[len(kept):])
	l.q = kept
}

// kicked returns the channel a Release of this Client closes (see
// line.kick); the head selects on it while it sleeps.
func (w *waiter) kicked() <-chan struct{} {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[w.key]
	if l == nil {
		return nil
	}
	if l.kick == nil {
		l.kick = make(chan struct{})
	}
	return l.kick
}

// kick wakes the sleeping head of the line of key, if any.
func kick(key lineKey) {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	if l := lines.m[key]; l != nil && l.kick != nil {
		close(l.kick)
		l.kick = nil
	}
}

// leave takes the waiter out of its line, and makes the next one the head
// when it was the head. It is idempotent.
func (w *waiter) leave() {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[w.key]
	if l == nil {
		return
	}
	for i, o := range l.q {
		if o != w {
			continue
		}
		copy(l.q[i:], l.q[i+1:])
		l.q[len(l.q)-1] = nil
		l.q = l.q[:len(l.q)-1]
		if i == 0 && len(l.q) > 0 {
			l.next = time.Time{}
			close(l.q[0].ready)
		}
		break
	}
	if len(l.q) == 0 {
		delete(lines.m, w.key)
	}
}

// lineLen returns the number of waiters in a line, for tests.
func lineLen(c *core.Client, name string) int {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	if l := lines.m[lineKey{c, name}]; l != nil {
		return len(l.q)
	}
	return 0
}
