package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/pubsub"
)

// Local FIFO lines.
//
// Redis does not order waiters: whoever runs its acquire script when the
// resource is available gets it. A line orders the callers of one Client
// that wait for the same resource (a semaphore's permits, ...): only the
// caller at the head asks Redis; the others wait without any Redis traffic
// or subscription until it is their turn, as in golang.org/x/sync/semaphore.
// Lines hold no goroutine and are deleted when empty; they live in the
// Client, so two Clients in one process never share one.

// Lines are a Client's local lines, keyed by resource.
type Lines struct {
	mu sync.Mutex
	// closing is closed when the client closes: waits for a turn end.
	closing <-chan struct{}
	m       map[string]*line
	// held counts, per line, the live holds of this client taken by
	// callers of the line ([Lines.heldHere]).
	held map[string]int
	// seq counts arrivals in the lines (Turn.seq).
	seq atomic.Uint64
	// heads keeps, per line, how the head's attempts stand
	// ([Turn.Asking], [Turn.Report]), for the callers behind it.
	heads map[string]headState
	// queued records, by the key of their queue, the locks whose queue of
	// waiting Clients (queue.go) this client joined and has not left as
	// far as it knows: an attempt that found the lock busy joined it, a
	// hold taken since left it (the scripts take the client out of the
	// queue at every acquisition). Only a wait that ends while the client
	// is queued leaves it with a script of its own (waitEnded).
	queued map[string]struct{}
}

// setQueued records whether the client is in the lock's queue key.
func (ls *Lines) setQueued(key string, in bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case in && ls.queued == nil:
		ls.queued = map[string]struct{}{key: {}}
	case in:
		ls.queued[key] = struct{}{}
	default:
		delete(ls.queued, key)
	}
}

// takeQueued reports whether the client is in the lock's queue key, and
// forgets it.
func (ls *Lines) takeQueued(key string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	_, in := ls.queued[key]
	delete(ls.queued, key)
	return in
}

// headState is how the attempts of a line's head stand: the failure that
// kept its latest attempt from Redis, and since when an attempt of it has
// been on its way without an answer (zero: none).
type headState struct {
	failed error
	since  time.Time
}

// line is the queue of callers for one resource; q[0] is the head, the only
// one that may ask Redis.
type line struct {
	q []*Turn
}

// Turn is one caller's place in a line.
type Turn struct {
	ls    *Lines
	key   string
	ready chan struct{} // closed when the turn reaches the head of the line
	// sub is a subscription passed on along the line (passOn, passedOn),
	// so that the channel stays subscribed from one head to the next.
	sub *pubsub.Waiter
	// park, when set, keeps sub when nobody follows (passOn).
	park func(*pubsub.Waiter)
	// seq is the caller's arrival in the client (Lines.seq), which
	// decides whether a handoff chain may serve it ([Chain]).
	seq uint64
	// joined is when the caller joined the line.
	joined time.Time
	// handoff is set while the caller accepts handoffs
	// ([Turn.AcceptHandoffs]): a releaser claims it at the head of the
	// line ([Lines.Claim]).
	handoff *Handoff
}

// AcceptHandoffs makes the turn's caller one that a releaser of this
// client may hand the lock to, through h, once it is at the head of the
// line and h is open ([Handoff.Open]).
func (t *Turn) AcceptHandoffs(h *Handoff) {
	t.ls.mu.Lock()
	t.handoff = h
	t.ls.mu.Unlock()
}

// Waits reports whether the caller joined behind others: it waits for its
// turn.
func (t *Turn) Waits() bool { return t.ready != readyNow }

// passOn gives the turn a subscription to pass on (nil: none): Leave
// passes it to the next caller in the line, or, when nobody follows, gives
// it to park (a queued wait's that took the lock: [parking.park]) or
// closes it (park nil).
func (t *Turn) passOn(w *pubsub.Waiter, park func(*pubsub.Waiter)) {
	t.ls.mu.Lock()
	old := t.sub
	t.sub, t.park = w, park
	t.ls.mu.Unlock()
	if old != nil && old != w {
		old.Close()
	}
}

// parks reports whether the subscription the turn passes on is kept when
// nobody follows (passOn with park).
func (t *Turn) parks() bool {
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	return t.sub != nil && t.park != nil
}

// passedOn returns the subscription passed on to the turn by the caller
// ahead of it (nil if none); the caller owns it from then on.
func (t *Turn) passedOn() *pubsub.Waiter {
	t.ls.mu.Lock()
	defer t.ls.mu.Unlock()
	w := t.sub
	t.sub = nil
	return w
}

// Join puts a caller at the end of the line for resource key. With
// onlyIfEmpty it joins only an empty line, and returns nil otherwise.
func (ls *Lines) Join(key string, onlyIfEmpty bool) *Turn {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = make(map[string]*line)
	}
	l := ls.m[key]
	if l == nil {
		l = linePool.Get().(*line)
		ls.m[key] = l
	} else if onlyIfEmpty && len(l.q) > 0 {
		return nil
	}
	t := &Turn{ls: ls, key: key, ready: readyNow, seq: ls.seq.Add(1)} // the head's turn is now
	if len(l.q) > 0 {
		t.ready = make(chan struct{})
		t.joined = time.Now()
	}
	l.q = append(l.q, t)
	return t
}

// Leave takes the turn out of its line; when it was the head, the next
// caller becomes the head, and gets the subscription the turn was given to
// pass on (passOn), which is closed otherwise. The line is deleted when it is empty. Leave is
// idempotent.
func (t *Turn) Leave() {
	ls := t.ls
	ls.mu.Lock()
	sub, park := t.sub, t.park
	t.sub, t.park = nil, nil
	defer func() {
		ls.mu.Unlock()
		switch {
		case sub == nil:
		case park != nil:
			park(sub) // nobody to hand it to: kept for the next wait
		default:
			sub.Close() // nobody to hand it to
		}
	}()
	l := ls.m[t.key]
	if l == nil {
		return
	}
	for i, o := range l.q {
		if o != t {
			continue
		}
		copy(l.q[i:], l.q[i+1:])
		l.q[len(l.q)-1] = nil // the array may be pooled: keep no turn alive
		l.q = l.q[:len(l.q)-1]
		if i == 0 && len(l.q) > 0 {
			l.q[0].sub, sub = sub, nil
			close(l.q[0].ready)
			delete(ls.heads, t.key) // the next head's attempts are its own
		}
		break
	}
	if len(l.q) == 0 {
		delete(ls.m, t.key)
		delete(ls.heads, t.key)
		l.q = l.q[:0]
		linePool.Put(l)
	}
}

// Held counts one more live hold taken by a caller of the line key, so
// that the line's head waits for its release instead of asking Redis
// ([Lines.heldHere]), until the hold ends ([Lines.left]). A hold records it
// with [Hold.through].
func (ls *Lines) Held(key string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.held == nil {
		ls.held = make(map[string]int)
	}
	ls.held[key]++
}

// left forgets a hold taken through the line key (Held), when it ends.
// When the hold was lost, or its release failed, rather than released
// (nothing is published, nothing handed on), it wakes the head of the
// line, which waits without asking Redis while the lock is held here.
// After a release it does not: the head hears the release's message in
// its turn among the channel's subscribers (last, if this client took the
// lock from Redis), as the other processes' waiters do.
func (ls *Lines) left(key string, lost bool) {
	if key == "" {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.held[key]--; ls.held[key] > 0 {
		return
	}
	delete(ls.held, key)
	if lost {
		ls.wakeHead(key)
	}
}

// heldHere reports whether a caller of the line key holds the lock in this
// client: its release will hand the lock off or publish, so the line's head
// need not ask Redis meanwhile.
func (ls *Lines) heldHere(key string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.held[key] > 0
}

// newChain returns the chain a hold taken from Redis now begins: it serves
// every caller of the client already waiting.
func (ls *Lines) newChain() Chain {
	return Chain{Start: time.Now(), Last: ls.seq.Load()}
}

// wake wakes the head of the line key if it waits for a handoff: to
// ask Redis again after a release that may not have published.
func (ls *Lines) wake(key string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.wakeHead(key)
}

// wakeHead wakes the head of the line key if it accepts handoffs, with
// an empty outcome (not handed: it asks Redis). ls.mu must be held.
func (ls *Lines) wakeHead(key string) {
	if l := ls.m[key]; l != nil && len(l.q) > 0 {
		if h := l.q[0].handoff; h != nil {
			h.wake()
		}
	}
}

// Claim is for the releaser of the last hold of a lock whose local line is
// key: when the caller at the head of the line accepts a handoff now
// ([Handoff]: open, not asking Redis, its owner's lock free) and the
// releasing hold's chain allows it, it claims the caller's Handoff and
// returns it with the acquisition to make for the caller; the releaser
// must Finish it. nil otherwise.
func (ls *Lines) Claim(key string, chain Chain, owners *ownerLocks) (*Handoff, *Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil || len(l.q) == 0 {
		return nil, nil
	}
	t := l.q[0]
	if t.handoff == nil || !chain.allows(t.seq) {
		return nil, nil
	}
	if req := t.handoff.claim(owners); req != nil {
		return t.handoff, req
	}
	return nil, nil
}

// LockLine returns the key of the local line of a lock's waiters (a
// Side's Line): one line per kind and name, so that the waiters of
// different kinds on one name ("rlock" and "rwlock" writers) never line up
// together. Its leading NUL keeps it apart from the semaphores' lines,
// which are keyed by the bare name.
func LockLine(kind, name string) string { return "\x00" + kind + "\x00" + name }

// readyNow is the ready channel of a turn at the head of its line at once.
var readyNow = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// linePool recycles empty lines with their queue's array: a lock's line is
// made and deleted at every uncontended acquisition.
var linePool = sync.Pool{New: func() any { return &line{q: make([]*Turn, 0, 4)} }}

// Await waits until the turn is at the head of its line. forever waits
// until ctx ends; otherwise at most wait. It returns (true, nil) at the
// head, (false, nil) when the wait ran out while the head's attempts got
// Redis's answer (an error wrapping the failure that kept them from Redis
// otherwise: an outage is no "busy", [Turn.Report]), and an error wrapping ctx.Err()
// (or [errs.ErrClosed]) when ctx ended or the Client closed first. It does not
// leave the line.
func (t *Turn) Await(ctx context.Context, forever bool, wait time.Duration) (bool, error) {
	select {
	case <-t.ready:
		return true, nil
	default:
	}
	var timeout <-chan time.Time
	if !forever {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-t.ready:
		return true, nil
	case <-timeout:
		return false, t.ls.failure(t.key, t.joined)
	case <-ctx.Done():
		return false, errs.CtxError(ctx)
	case <-t.ls.closing:
		return false, errs.ErrClosed
	}
}

// HeadAccepts reports whether the caller at the head of the line key
// would accept a handoff now ([Lines.Claim]'s conditions but the chain's
// and the owner's lock), for tests that need a release to be a handoff.
func (ls *Lines) HeadAccepts(key string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[key]
	if l == nil || len(l.q) == 0 {
		return false
	}
	h := l.q[0].handoff
	return h != nil && h.accepts()
}

// Len returns the number of callers in the line key, for tests.
func (ls *Lines) Len(key string) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.m[key]; l != nil {
		return len(l.q)
	}
	return 0
}

// Asking records that the turn's caller, at the head of its line, sends
// an attempt to Redis now ([Turn.Report] records how it ends).
func (t *Turn) Asking() {
	ls := t.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.heads == nil {
		ls.heads = make(map[string]headState)
	}
	h := ls.heads[t.key]
	if h.since.IsZero() {
		h.since = time.Now()
		ls.heads[t.key] = h
	}
}

// Report records how the latest attempt of the turn's caller, at the head
// of its line, ended: err nil when Redis answered it, else the failure that
// kept it from Redis (a lost connection, a failover, no answer within the
// wait). A caller behind it whose wait for its turn runs out while the
// head's attempts fail, or while one has been on its way since before the
// caller joined, returns an error instead of "busy" ([Turn.Await]): an
// outage is no "busy".
func (t *Turn) Report(err error) {
	ls := t.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err == nil {
		delete(ls.heads, t.key)
		return
	}
	if ls.heads == nil {
		ls.heads = make(map[string]headState)
	}
	ls.heads[t.key] = headState{failed: err}
}

// failure returns why a wait behind the head of the line key, joined at
// joined, that ran out got no answer from Redis: the head's latest failure,
// or its attempt on its way since before joined; nil when the head's
// attempts were answered (the primitive was seen taken).
func (ls *Lines) failure(key string, joined time.Time) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	h := ls.heads[key]
	switch {
	case h.failed != nil:
		return fmt.Errorf("the attempts of the caller ahead in this client failed: %w", h.failed)
	case !h.since.IsZero() && !joined.IsZero() && h.since.Before(joined):
		return fmt.Errorf("no answer from Redis within the wait: the attempt of the caller ahead in this client has waited since %s", h.since.Format(time.RFC3339Nano))
	}
	return nil
}
