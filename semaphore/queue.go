package semaphore

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
)

// Local FIFO order of waiters.
//
// Redis does not order waiters: whoever runs its acquire script when
// enough permits are available gets them. Left at that, a caller that needs
// 3 permits would rarely see 3 free at once while other callers of the same
// process keep taking them one at a time: it could wait forever. So, as in
// golang.org/x/sync/semaphore, the callers of one Client that want permits
// of one semaphore form a line, and only the caller at its head asks Redis;
// the others wait, without any Redis traffic or subscription, until it is
// their turn. The head leaves the line when it got its permits, gave up (its
// wait ran out, its ctx ended, the Client closed) or failed, and hands its
// turn to the next, which tries at once. So a release of n permits lets up
// to n callers of this Client through one after the other, each with one
// round trip, and never wakes the whole line.
//
// The line is keyed by the core client and the semaphore's name: the
// counted and the expirable semaphore of one name share the Redis count, so
// they share the line. Lines hold no goroutine and are deleted when empty.
// The line orders the callers of one Client only; callers of different
// Clients (other processes) compete through Redis, as Redisson's do. The
// price of the order is x/sync's: while the head waits for more permits than
// are available, later callers of this Client wait behind it even if their
// smaller requests could be served.

type lineKey struct {
	c    *core.Client
	name string
}

// line is the queue of one client's callers for one semaphore; q[0] is the
// head, the only one that may ask Redis.
type line struct {
	q []*turn
}

// turn is one caller's place in a line.
type turn struct {
	key   lineKey
	ready chan struct{} // closed when the turn reaches the head of the line
}

var lines = struct {
	mu sync.Mutex
	m  map[lineKey]*line
}{m: make(map[lineKey]*line)}

// join puts a caller at the end of its line. With onlyIfEmpty it joins only
// an empty line, and returns nil otherwise.
func join(c *core.Client, name string, onlyIfEmpty bool) *turn {
	key := lineKey{c, name}
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[key]
	if l == nil {
		l = &line{}
		lines.m[key] = l
	} else if onlyIfEmpty && len(l.q) > 0 {
		return nil
	}
	t := &turn{key: key, ready: make(chan struct{})}
	if len(l.q) == 0 {
		close(t.ready)
	}
	l.q = append(l.q, t)
	return t
}

// leave takes the turn out of its line; when it was the head, the next
// caller becomes the head. The line is deleted when it is empty.
func (t *turn) leave() {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	l := lines.m[t.key]
	if l == nil {
		return
	}
	for i, o := range l.q {
		if o != t {
			continue
		}
		l.q = append(l.q[:i], l.q[i+1:]...)
		if i == 0 && len(l.q) > 0 {
			close(l.q[0].ready)
		}
		break
	}
	if len(l.q) == 0 {
		delete(lines.m, t.key)
	}
}

// lineLen returns the number of callers in a line, for tests.
func lineLen(c *core.Client, name string) int {
	lines.mu.Lock()
	defer lines.mu.Unlock()
	if l := lines.m[lineKey{c, name}]; l != nil {
		return len(l.q)
	}
	return 0
}

// waitInLine runs an acquisition for a caller of c on the semaphore called
// name: it waits for the caller's turn in the local line, then runs the
// shared waiting algorithm (core.Client.Wait) on the semaphore's channel
// with try as the attempt. forever waits until ctx ends; otherwise the whole
// call, turn included, takes at most wait, and wait 0 makes a single attempt
// only if no other caller of c is waiting (it does not overtake them).
//
// It returns (true, nil) when try succeeded, (false, nil) when the wait ran
// out, and an error (wrapping ctx.Err() when ctx ended) otherwise. It leaves
// the line in every case.
func waitInLine(ctx context.Context, c *core.Client, name string, forever bool, wait time.Duration, try core.Attempt) (bool, error) {
	start := time.Now()
	t := join(c, name, !forever && wait == 0)
	if t == nil {
		return false, nil
	}
	defer t.leave()
	select {
	case <-t.ready:
	default:
		var timeout <-chan time.Time
		if !forever {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-t.ready:
		case <-timeout:
			return false, nil
		case <-ctx.Done():
			return false, core.CtxError(ctx)
		case <-c.Closing():
			return false, core.ErrClosed
		}
	}
	spec := core.WaitSpec{
		Channel: keys.SemaphoreChannel(name),
		Wake:    wake,
		Forever: forever,
		Try:     try,
	}
	if !forever {
		spec.Wait = max(wait-time.Since(start), 0)
	}
	return c.Wait(ctx, spec)
}
