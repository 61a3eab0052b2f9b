package core

import (
	"sync"
	"time"
)

// In-process handoff.
//
// When a hold ends and the next caller in the client's local line for the
// lock waits (and is not asking Redis at that moment), the release and that
// caller's acquisition are one script ([Handoffer].RunHandoff): the lock
// goes from one owner to the next in one round trip, with no PUBLISH and no
// waiter woken to try again. While the lock is held through the line
// ([Lines.heldHere]), its head does not ask Redis at all: the release hands
// the lock off to it, or publishes (a message makes the head ask Redis even
// before this client has counted the hold ended), or the hold is lost and
// the head is woken in-process ([Lines.left]). Other processes see the
// lock held all along; their waiters re-check when its lease would end,
// and are woken by the release that ends the chain of handoffs. A caller
// that took the lock from Redis drops the line's subscription
// ([acquisition.inLine]), so that the next head subscribes anew, at the
// end of the channel's subscribers: Redis delivers in subscription order,
// and the other processes' waiters hear the next release first.
//
// So that they get their turn, a chain is bounded as Go's sync.Mutex bounds
// its fast path: a hold taken from Redis starts a chain, and a release hands
// the lock off only to a caller that was already waiting when the chain
// began, or while the chain is younger than HandoffWindow. Past both, the
// release frees the lock in Redis and publishes, and the next local caller
// competes with everyone else. Every caller waiting in this client when a
// chain begins is served by it, so no caller of this client waits for more
// than one chain of its own client per chain of every other process.
//
// The handoff is one part, a [Handoff] that the waiting caller's turn
// holds, read by its contract:
//
//   - the waiter's side (acquire.go, wait.go): [Handoff.Open] with the
//     acquisition a releaser is to make for it (made on the waiter's
//     goroutine, the first time it sleeps), [Handoff.Ask] and
//     [Handoff.DoneAsking] around each of its own attempts,
//     [Handoff.Handed] to sleep on, [Handoff.take] for the outcome, and
//     [Handoff.withdraw] when its wait ends;
//   - the releaser's side (release.go): [Lines.Claim] finds the head of the
//     line and claims its Handoff ([Handoff.claim]), the releaser runs the
//     script and [Handoff.Finish]es it; [Lines.wake] wakes it without a
//     lock when a hold ended without a release that publishes.

// HandoffWindow is how long a chain of in-process handoffs may also serve
// callers that arrived after it began.
const HandoffWindow = time.Millisecond

// Chain is where a hold stands in a chain of in-process handoffs: when the
// chain began (a hold taken from Redis) and the last arrival in the local
// line ([Turn]) it serves in any case.
type Chain struct {
	Start time.Time
	Last  uint64
}

// allows reports whether the chain may hand the lock off to the caller
// that arrived as seq.
func (ch Chain) allows(seq uint64) bool {
	return seq <= ch.Last || time.Since(ch.Start) < HandoffWindow
}

// Handoff is one waiting caller's readiness to be handed the lock by a
// releaser of this client: the acquisition to make for it, whether it is
// asking Redis itself, and, once a releaser claimed it, the outcome.
// Its own mutex guards it; a releaser reaches it only through the head of
// the line ([Lines.Claim]), under the lines' lock, which it takes first.
type Handoff struct {
	mu sync.Mutex
	// req is the acquisition a releaser makes for the caller (Open); nil
	// until the caller sleeps for the first time. Nobody changes it once
	// made: every handoff to the caller makes the same one.
	req     *Request
	asking  bool // the caller is asking Redis: no claim meanwhile
	closed  bool // withdrawn: no claim, no wake
	claimed bool // a releaser took it (or woke it); take gives the outcome
	woken   bool // woken before Open: Open finishes it at once
	ol      *ownerLock
	done    chan struct{} // closed once res is set; made when first needed
	res     HandoffResult
}

// HandoffResult is the outcome of a handoff, for the caller it was made
// for.
type HandoffResult struct {
	// Acquired: the caller holds the lock (count Req.Count, fencing token
	// Fence), from Sent on: the lease began after Sent.
	Acquired bool
	Fence    int64
	Sent     time.Time
	Chain    Chain // the chain the hold goes on with
	// Unknown: the handoff's reply was lost; the acquisition may or may
	// not have happened, and the caller must undo it ([Lock.undo]).
	Unknown bool
}

// The waiter's side.

// Open makes the caller ready to be handed the lock with req, the
// acquisition a releaser is to make for it, unless it is open already.
// A wake-up that came before it ends the next sleep at once.
func (h *Handoff) Open(req *Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.req != nil || h.closed {
		return
	}
	h.req = req
	if h.woken {
		h.woken = false
		h.claimed = true
		h.finishLocked(HandoffResult{})
	}
}

// Opened reports whether Open made the caller ready.
func (h *Handoff) Opened() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.req != nil
}

// Ask reports whether the caller may ask Redis now, and marks it as doing
// so, so that no releaser claims it meanwhile (DoneAsking ends the mark):
// false once a releaser has claimed it (take then gives the outcome).
func (h *Handoff) Ask() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claimed {
		return false
	}
	h.asking = true
	return true
}

// DoneAsking ends an Ask.
func (h *Handoff) DoneAsking() {
	h.mu.Lock()
	h.asking = false
	h.mu.Unlock()
}

// Handed returns a channel closed when a releaser has finished a handoff
// to the caller, or woken it.
func (h *Handoff) Handed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.doneLocked()
}

// take returns the outcome of a handoff a releaser claimed, waiting for
// it (the releaser's script is bounded by its timeout), the acquisition
// it was, and the owner's lock the releaser took for the caller (nil for
// a wake-up), which the caller gives back; ok is false when none was
// claimed. The caller is ready for the next handoff after it, unless it
// got the lock.
func (h *Handoff) take() (res HandoffResult, req *Request, ol *ownerLock, ok bool) {
	return h.collect(false)
}

// withdraw ends the caller's readiness when its wait ends, and returns,
// as take, the outcome of a handoff claimed at that moment, if any.
func (h *Handoff) withdraw() (res HandoffResult, req *Request, ol *ownerLock, ok bool) {
	return h.collect(true)
}

// collect is take, and with end withdraw.
func (h *Handoff) collect(end bool) (res HandoffResult, req *Request, ol *ownerLock, ok bool) {
	h.mu.Lock()
	if end {
		h.closed = true
	}
	if !h.claimed {
		h.mu.Unlock()
		return HandoffResult{}, nil, nil, false
	}
	done := h.doneLocked()
	h.mu.Unlock()
	<-done
	h.mu.Lock()
	defer h.mu.Unlock()
	res, req, ol = h.res, h.req, h.ol
	// Ready for the next release (a new done channel when needed), but
	// for a caller that now holds the lock.
	h.claimed, h.ol, h.done, h.res = false, nil, nil, HandoffResult{}
	h.closed = h.closed || res.Acquired
	return res, req, ol, true
}

// The releaser's side.

// claim is [Lines.Claim]'s, under the lines' lock: it returns the
// acquisition to make for the caller when it is open, not asking Redis
// and its owner's lock is free; the Handoff is then claimed (the owner's
// lock taken for the caller) and the releaser must Finish it.
func (h *Handoff) claim(owners *ownerLocks) *Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.req == nil || h.claimed || h.asking || h.closed {
		return nil
	}
	ol, ok := owners.tryLock(HoldKey{Key: h.req.Name, Field: h.req.Field})
	if !ok {
		return nil
	}
	h.claimed, h.ol = true, ol
	h.doneLocked() // the caller waits for it (take)
	return h.req
}

// Finish sets a claimed handoff's outcome and wakes its caller.
func (h *Handoff) Finish(res HandoffResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finishLocked(res)
}

// wake wakes the caller, when it waits for a handoff, with an empty
// outcome (not handed: it asks Redis again); before it opened, its next
// sleep ends at once.
func (h *Handoff) wake() {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed || h.claimed:
	case h.req == nil:
		h.woken = true
	default:
		h.claimed = true
		h.finishLocked(HandoffResult{})
	}
}

// accepts reports whether a releaser could claim the handoff now, but
// for the chain and the owner's lock.
func (h *Handoff) accepts() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.req != nil && !h.claimed && !h.asking && !h.closed
}

// finishLocked sets the outcome and closes done (h.mu held).
func (h *Handoff) finishLocked(res HandoffResult) {
	h.res = res
	close(h.doneLocked())
}

// doneLocked returns done, making it first when needed (h.mu held).
func (h *Handoff) doneLocked() chan struct{} {
	if h.done == nil {
		h.done = make(chan struct{})
	}
	return h.done
}
