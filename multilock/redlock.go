package multilock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core/errs"
)

const (
	// maxStep bounds every RedLock step: how long an attempt waits for
	// members' answers when fewer than a majority has answered, and how
	// long a wait for one busy member lasts (its share: wait/n, or maxStep
	// for Lock). It is the per-member wait of Redisson's RedLock lock().
	maxStep = 1500 * time.Millisecond

	// minPause and maxPause bound the pause between attempts when too many
	// members failed (their servers are down or slow) for a majority and no
	// busy member can be waited for. The pause doubles from minPause up to
	// maxPause while that lasts, with jitter so that clients do not retry
	// in step.
	minPause = 25 * time.Millisecond
	maxPause = time.Second
)

// redLock is the strategy of NewRedLock: a majority of the members.
type redLock struct {
	*group
	quorum int // members needed: len(members)/2 + 1

	mu sync.Mutex
	// records holds the members each acquisition took, as a stack per
	// owner (see ownerKey), so that unlock releases those and no others.
	records map[uint64][][]int
}

func newRedLock(g *group) *redLock {
	return &redLock{group: g, quorum: len(g.members)/2 + 1}
}

// acquire runs the RedLock acquisition (see the package doc) as steps: an
// attempt that tries every member not held at once; after an attempt
// failed on busy members, a wait for the first busy one; after an attempt
// failed on failing members, a pause.
func (r *redLock) acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	a := r.begin(ctx, wait, forever)
	for first := true; ; first = false {
		o := a.attempt(first)
		switch o.next {
		case waitBusy:
			o = a.waitFor(o.busy)
		case backOff:
			a.backOff()
		}
		if o.next == done {
			return o.ok, o.err
		}
	}
}

// next is what a RedLock acquisition does after a step.
type next int

const (
	again    next = iota // attempt again at once
	waitBusy             // wait for a busy member, then attempt again
	backOff              // pause, then attempt again
	done                 // return
)

// outcome is how a step of a RedLock acquisition ended.
type outcome struct {
	next next
	busy int   // for waitBusy: the member to wait for
	ok   bool  // for done: whether the RedLock is held
	err  error // for done: why not, or nil when members stayed busy
}

// acquisition is one Lock or TryLock call on a RedLock: its bounds, the
// members it holds so far, and why its latest attempt failed.
type acquisition struct {
	r        *redLock
	ctx      context.Context
	forever  bool          // Lock: only ctx ends it
	sliced   bool          // TryLock with a wait: every step ends by the deadline
	deadline time.Time     // the end of the wait
	share    time.Duration // the longest wait for one busy member
	held     []int         // members held going into the next step
	lastErr  error         // why the latest attempt failed, when members failed
	pause    time.Duration // the next pause after an attempt on failing members
}

func (r *redLock) begin(ctx context.Context, wait time.Duration, forever bool) *acquisition {
	a := &acquisition{
		r: r, ctx: ctx, forever: forever, sliced: !forever && wait > 0,
		deadline: time.Now().Add(wait), share: maxStep, pause: minPause,
	}
	if a.sliced {
		a.share = min(wait/time.Duration(len(r.members)), maxStep)
	}
	return a
}

// attempt tries every member not yet held, at once and without waiting.
// It is done when a majority is held (keeping every member it got), when a
// member's error ends the call, or when ctx or the wait has ended; else it
// leads to a wait for the first busy member, or to a pause when too many
// members failed for a majority.
func (a *acquisition) attempt(first bool) outcome {
	// An attempt may use the whole step: the grace in round cuts
	// unresponsive members short as soon as a majority has answered, and
	// without a majority of answers it cannot succeed anyway.
	bound := a.limit(maxStep)
	if a.ctx.Err() != nil || (!first && bound <= 0) {
		return a.fail(a.endErr())
	}
	tried := a.r.others(a.held)
	t := a.count(a.r.round(a.ctx, tried, 0, bound, a.settled(len(tried))))
	a.held = t.taken
	switch {
	case t.fatal != nil:
		return a.fail(t.fatal)
	case len(a.held) >= a.r.quorum:
		return a.win()
	}
	a.lastErr = a.outOfReach(t.failures)
	switch {
	case a.ctx.Err() != nil || (!a.forever && !time.Now().Before(a.deadline)):
		return a.fail(a.endErr())
	case t.busy < 0 || a.lastErr != nil:
		return outcome{next: backOff}
	}
	return outcome{next: waitBusy, busy: t.busy}
}

// settled tells round when an attempt's answers are enough to stop waiting
// for the other members beyond a grace (see round).
func (a *acquisition) settled(tried int) func(map[int]answer) bool {
	held, quorum := len(a.held), a.r.quorum
	return func(answers map[int]answer) bool {
		if len(answers) < quorum-held {
			return false
		}
		if a.sliced || a.forever {
			return true // a majority answered; a late member costs a retry at worst
		}
		// A single attempt (wait 0): cut late members only when they can
		// no longer change the outcome.
		got := held
		for _, ans := range answers {
			if ans.err == nil && ans.ok {
				got++
			}
		}
		return got >= quorum || got+tried-len(answers) < quorum
	}
}

// tally is an attempt's answers, sorted.
type tally struct {
	taken    []int   // the members held before the attempt and those it got
	busy     int     // the first busy member, or -1
	fatal    error   // the first member error that ends the call (see isFatal)
	failures []error // the other members' errors
}

// count sorts an attempt's answers in member order.
func (a *acquisition) count(answers map[int]answer) tally {
	t := tally{taken: slices.Clone(a.held), busy: -1}
	for i := range a.r.members {
		ans, tried := answers[i]
		switch {
		case !tried:
		case ans.err == nil && ans.ok:
			t.taken = append(t.taken, i)
		case ans.err == nil:
			if t.busy < 0 {
				t.busy = i
			}
		case a.ctx.Err() == nil && isFatal(ans.err):
			if t.fatal == nil {
				t.fatal = a.r.memberErr(i, ans.err)
			}
		default:
			t.failures = append(t.failures, fmt.Errorf("member %d: %w", i, ans.err))
		}
	}
	return t
}

// outOfReach returns why a majority is out of reach when so many members
// failed, or nil while one is still within reach.
func (a *acquisition) outOfReach(failures []error) error {
	n := len(a.r.members)
	if len(failures) <= n-a.r.quorum {
		return nil
	}
	return fmt.Errorf("%d of %d members failed, a majority (%d) is out of reach: %w",
		len(failures), n, a.r.quorum, errors.Join(failures...))
}

// waitFor waits for the busy member k through its own wait (pub/sub), for
// at most a share, keeping the members before it and releasing those after
// it. Contenders that list the members in the same order thus queue in
// that order: one waiting for member k holds only members before k, so no
// two can wait for each other.
func (a *acquisition) waitFor(k int) outcome {
	a.pause = minPause // members answer: the next back-off starts short
	keep, drop := split(a.held, k)
	a.r.releaseTolerant(a.ctx, drop)
	a.held = keep
	slice := a.limit(a.share)
	if slice <= 0 {
		return outcome{next: again} // the next attempt ends the wait
	}
	ans := a.r.round(a.ctx, []int{k}, slice, a.limit(slice+a.share), nil)[k]
	switch {
	case ans.err == nil && ans.ok:
		a.held = append(a.held, k)
		if len(a.held) >= a.r.quorum {
			return a.win()
		}
		return outcome{next: again}
	case ans.err != nil && a.ctx.Err() == nil && isFatal(ans.err):
		return a.fail(a.r.memberErr(k, ans.err))
	}
	// The member stayed busy for a share (or failed). Give the kept
	// members back, so that contenders listing the members in another
	// order cannot hold each other up, and start over after a short random
	// pause, so that they do not meet again in step.
	a.releaseHeld()
	if ans.err == nil {
		sleep(a.ctx, a.limit(jitter(minPause)))
	}
	return outcome{next: again}
}

// backOff gives back what the attempt took and pauses, longer each time in
// a row: too many members failed (their servers are down or slow), and
// nothing will be published.
func (a *acquisition) backOff() {
	a.releaseHeld()
	sleep(a.ctx, a.limit(jitter(a.pause)))
	a.pause = min(2*a.pause, maxPause)
}

// win records the members held and ends the acquisition with success.
func (a *acquisition) win() outcome {
	a.r.record(a.ctx, a.held)
	return outcome{next: done, ok: true}
}

// fail gives back the members held and ends the acquisition with err.
func (a *acquisition) fail(err error) outcome {
	a.releaseHeld()
	return outcome{next: done, err: err}
}

func (a *acquisition) releaseHeld() {
	a.r.releaseTolerant(a.ctx, a.held)
	a.held = nil
}

// limit cuts a step's duration to the end of the wait and to ctx's
// deadline.
func (a *acquisition) limit(d time.Duration) time.Duration {
	if a.sliced {
		d = min(d, time.Until(a.deadline))
	}
	if dl, ok := a.ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return d
}

// endErr is the error of an acquisition that did not succeed: nil when
// the wait ran out with members busy, ctx's error when ctx ended, the
// latest attempt's member failures otherwise (joined to ctx's error if
// both).
func (a *acquisition) endErr() error {
	ctx, kind := a.ctx, a.r.kind
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// Past ctx's deadline, ctx is done or about to be: a step cut
		// short by the deadline must report it.
		<-ctx.Done()
	}
	switch {
	case ctx.Err() != nil && a.lastErr != nil:
		return fmt.Errorf("%s: %w (latest attempt: %w)", kind, errs.CtxError(ctx), a.lastErr)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", kind, errs.CtxError(ctx))
	case a.lastErr != nil:
		return fmt.Errorf("%s: %w", kind, a.lastErr)
	}
	return nil
}

// split returns the members of taken before member k, and the others.
func split(taken []int, k int) (before, after []int) {
	for _, i := range taken {
		if i < k {
			before = append(before, i)
		} else {
			after = append(after, i)
		}
	}
	return before, after
}

// jitter returns a random duration between d/2 and d.
func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// isFatal reports a member error that says the call itself is wrong, so
// that retrying or tolerating it cannot help.
func isFatal(err error) bool {
	return errors.Is(err, redisync.ErrInvalidArgument) ||
		errors.Is(err, redisync.ErrClosed) ||
		errors.Is(err, redisync.ErrUpgrade)
}

// others returns the members not in held.
func (g *group) others(held []int) []int {
	idx := make([]int, 0, len(g.members))
	for i := range g.members {
		if !slices.Contains(held, i) {
			idx = append(idx, i)
		}
	}
	return idx
}

// releaseTolerant releases members taken by a failed RedLock attempt. Their
// errors are not reported: a RedLock tolerates failing members, and a
// member that could not be released, whose renewal has stopped, is freed by
// Redis when its lease ends.
func (g *group) releaseTolerant(ctx context.Context, idx []int) {
	_ = g.release(ctx, idx)
}

// ownerKey names the owner a RedLock acquisition or release acts for: the
// token ctx carries, which MultiLock.acquire and Unlock always put there
// (the caller's, or the MultiLock's own for a hold taken without one).
func ownerKey(ctx context.Context) uint64 {
	t, _ := redisync.OwnerToken(ctx)
	return t
}

// record notes the members a successful acquisition took.
func (r *redLock) record(ctx context.Context, taken []int) {
	taken = slices.Clone(taken)
	slices.Sort(taken)
	k := ownerKey(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		r.records = make(map[uint64][][]int)
	}
	r.records[k] = append(r.records[k], taken)
}

// takeRecord removes and returns the members the latest acquisition of
// ctx's owner took, or nil if there is none.
func (r *redLock) takeRecord(ctx context.Context) []int {
	k := ownerKey(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.records[k]
	if len(s) == 0 {
		return nil
	}
	taken := s[len(s)-1]
	if len(s) == 1 {
		delete(r.records, k)
	} else {
		r.records[k] = s[:len(s)-1]
	}
	return taken
}

// unlock releases the members the latest acquisition of ctx's owner took,
// or every member without such a record (see Unlock).
func (r *redLock) unlock(ctx context.Context) error {
	idx := r.takeRecord(ctx)
	if idx == nil {
		idx = r.all()
	}
	notHeld := 0
	var errs []error
	for k, err := range r.release(ctx, idx) {
		switch {
		case err == nil:
		case errors.Is(err, redisync.ErrNotHeld):
			notHeld++ // not held (any more): nothing to release
		default:
			errs = append(errs, r.memberErr(idx[k], err))
		}
	}
	if len(idx)-notHeld < r.quorum {
		errs = append([]error{fmt.Errorf("%s: %w: %d of %d members were still held, fewer than a majority (%d)",
			r.kind, redisync.ErrNotHeld, len(idx)-notHeld, len(r.members), r.quorum)}, errs...)
	}
	return errors.Join(errs...)
}
