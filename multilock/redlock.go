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
	"github.com/redisync/redisync/internal/core"
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

// acquire runs the RedLock acquisition (see the package doc):
// attempts that try every member not held at once; after an attempt failed
// on busy members, an ordered wait for the first busy member, for at most
// a share of the wait, keeping the members before it; after an attempt
// failed on failing members, a pause.
func (r *redLock) acquire(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	n := len(r.members)
	deadline := time.Now().Add(wait)
	sliced := !forever && wait > 0
	share := maxStep
	if sliced {
		share = min(wait/time.Duration(n), maxStep)
	}
	// limit cuts a step's duration to the end of the wait and to ctx's
	// deadline.
	limit := func(d time.Duration) time.Duration {
		if sliced {
			d = min(d, time.Until(deadline))
		}
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		return d
	}
	pause := minPause
	var held []int    // members held going into the next attempt
	var lastErr error // why the latest attempt failed, when members failed
	for first := true; ; first = false {
		// An attempt may use the whole step: the grace in round cuts
		// unresponsive members short as soon as a majority has answered,
		// and without a majority of answers it cannot succeed anyway.
		bound := limit(maxStep)
		if ctx.Err() != nil || (!first && bound <= 0) {
			r.releaseTolerant(ctx, held)
			return false, r.endErr(ctx, lastErr)
		}

		// Attempt: every member not yet held, at once, without waiting.
		tried := r.others(held)
		answers := r.round(ctx, tried, 0, bound, func(answers map[int]answer) bool {
			if len(answers) < r.quorum-len(held) {
				return false
			}
			if sliced || forever {
				return true // a majority answered; a late member costs a retry at worst
			}
			// A single attempt (wait 0): cut late members only when they
			// can no longer change the outcome.
			got := len(held)
			for _, a := range answers {
				if a.err == nil && a.ok {
					got++
				}
			}
			return got >= r.quorum || got+len(tried)-len(answers) < r.quorum
		})
		taken := slices.Clone(held)
		busy, fatal := -1, -1
		var failures []error
		for _, i := range r.all() {
			a, tried := answers[i]
			switch {
			case !tried:
			case a.err == nil && a.ok:
				taken = append(taken, i)
			case a.err == nil:
				if busy < 0 {
					busy = i
				}
			case ctx.Err() == nil && isFatal(a.err):
				if fatal < 0 {
					fatal = i
				}
			default:
				failures = append(failures, fmt.Errorf("member %d: %w", i, a.err))
			}
		}
		if fatal >= 0 {
			r.releaseTolerant(ctx, taken)
			return false, r.memberErr(fatal, answers[fatal].err)
		}
		if len(taken) >= r.quorum {
			r.record(ctx, taken)
			return true, nil
		}
		lastErr = nil
		if len(failures) > n-r.quorum {
			lastErr = fmt.Errorf("%d of %d members failed, a majority (%d) is out of reach: %w",
				len(failures), n, r.quorum, errors.Join(failures...))
		}
		if ctx.Err() != nil || (!forever && !time.Now().Before(deadline)) {
			r.releaseTolerant(ctx, taken)
			return false, r.endErr(ctx, lastErr)
		}

		if busy < 0 || lastErr != nil {
			// Too many members failed: their servers are down or slow,
			// and nothing will be published. Pause, then try again.
			r.releaseTolerant(ctx, taken)
			held = nil
			sleep(ctx, limit(jitter(pause)))
			pause = min(2*pause, maxPause)
			continue
		}
		pause = minPause

		// Wait for the first busy member, through its own wait (pub/sub),
		// for at most a share, keeping the members before it and releasing
		// those after it. Contenders that list the members in the same
		// order thus queue in that order: one waiting for member k holds
		// only members before k, so no two can wait for each other.
		keep, drop := split(taken, busy)
		r.releaseTolerant(ctx, drop)
		held = keep
		slice := limit(share)
		if slice <= 0 {
			continue // the next turn ends the wait
		}
		a := r.round(ctx, []int{busy}, slice, limit(slice+share), nil)[busy]
		switch {
		case a.err == nil && a.ok:
			held = append(held, busy)
			if len(held) >= r.quorum {
				r.record(ctx, held)
				return true, nil
			}
		case a.err != nil && ctx.Err() == nil && isFatal(a.err):
			r.releaseTolerant(ctx, held)
			return false, r.memberErr(busy, a.err)
		default:
			// The member stayed busy for a share (or failed). Give the
			// kept members back, so that contenders listing the members
			// in another order cannot hold each other up, and start over
			// after a short random pause, so that they do not meet again
			// in step.
			r.releaseTolerant(ctx, held)
			held = nil
			if a.err == nil {
				sleep(ctx, limit(jitter(minPause)))
			}
		}
	}
}

// endErr is the error of a RedLock acquisition that did not succeed: nil
// when the wait ran out with members busy, ctx's error when ctx ended, the
// latest attempt's member failures otherwise (joined to ctx's error if
// both).
func (r *redLock) endErr(ctx context.Context, lastErr error) error {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// Past ctx's deadline, ctx is done or about to be: a step cut
		// short by the deadline must report it.
		<-ctx.Done()
	}
	switch {
	case ctx.Err() != nil && lastErr != nil:
		return fmt.Errorf("%s: %w (latest attempt: %w)", r.kind, core.CtxError(ctx), lastErr)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", r.kind, core.CtxError(ctx))
	case lastErr != nil:
		return fmt.Errorf("%s: %w", r.kind, lastErr)
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

// ownerKey names the owner a RedLock acquisition acts for: the token ctx
// carries, or 0 for the members' own handle owners. Given the RedLock's
// fixed members, it determines the owner of every member.
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
