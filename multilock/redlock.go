package multilock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

// acquireMajority runs the RedLock acquisition (see the package doc):
// attempts that try every member not held at once; after an attempt failed
// on busy members, an ordered wait for the first busy member, for at most
// a share of the wait, keeping the members before it; after an attempt
// failed on failing members, a pause.
func (m *MultiLock) acquireMajority(ctx context.Context, wait time.Duration, forever bool) (bool, error) {
	n := len(m.members)
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
			m.releaseTolerant(ctx, held)
			return false, m.endErr(ctx, lastErr)
		}

		// Attempt: every member not yet held, at once, without waiting.
		tried := m.others(held)
		answers := m.round(ctx, tried, 0, bound, func(answers map[int]answer) bool {
			if len(answers) < m.quorum-len(held) {
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
			return got >= m.quorum || got+len(tried)-len(answers) < m.quorum
		})
		taken := slices.Clone(held)
		busy, fatal := -1, -1
		var failures []error
		for _, i := range m.all() {
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
			m.releaseTolerant(ctx, taken)
			return false, m.memberErr(fatal, answers[fatal].err)
		}
		if len(taken) >= m.quorum {
			m.record(ctx, taken)
			return true, nil
		}
		lastErr = nil
		if len(failures) > n-m.quorum {
			lastErr = fmt.Errorf("%d of %d members failed, a majority (%d) is out of reach: %w",
				len(failures), n, m.quorum, errors.Join(failures...))
		}
		if ctx.Err() != nil || (!forever && !time.Now().Before(deadline)) {
			m.releaseTolerant(ctx, taken)
			return false, m.endErr(ctx, lastErr)
		}

		if busy < 0 || lastErr != nil {
			// Too many members failed: their servers are down or slow,
			// and nothing will be published. Pause, then try again.
			m.releaseTolerant(ctx, taken)
			held = nil
			m.sleep(ctx, limit(jitter(pause)))
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
		m.releaseTolerant(ctx, drop)
		held = keep
		slice := limit(share)
		if slice <= 0 {
			continue // the next turn ends the wait
		}
		a := m.round(ctx, []int{busy}, slice, limit(slice+share), nil)[busy]
		switch {
		case a.err == nil && a.ok:
			held = append(held, busy)
			if len(held) >= m.quorum {
				m.record(ctx, held)
				return true, nil
			}
		case a.err != nil && ctx.Err() == nil && isFatal(a.err):
			m.releaseTolerant(ctx, held)
			return false, m.memberErr(busy, a.err)
		default:
			// The member stayed busy for a share (or failed). Give the
			// kept members back, so that contenders listing the members
			// in another order cannot hold each other up, and start over
			// after a short random pause, so that they do not meet again
			// in step.
			m.releaseTolerant(ctx, held)
			held = nil
			if a.err == nil {
				m.sleep(ctx, limit(jitter(minPause)))
			}
		}
	}
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
func (m *MultiLock) sleep(ctx context.Context, d time.Duration) {
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

// endErr is the error of a RedLock acquisition that did not succeed: nil
// when the wait ran out with members busy, ctx's error when ctx ended, the
// latest attempt's member failures otherwise (joined to ctx's error if
// both).
func (m *MultiLock) endErr(ctx context.Context, lastErr error) error {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// Past ctx's deadline, ctx is done or about to be: a step cut
		// short by the deadline must report it.
		<-ctx.Done()
	}
	switch {
	case ctx.Err() != nil && lastErr != nil:
		return fmt.Errorf("%s: %w (latest attempt: %w)", m.kind(), core.CtxError(ctx), lastErr)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", m.kind(), core.CtxError(ctx))
	case lastErr != nil:
		return fmt.Errorf("%s: %w", m.kind(), lastErr)
	}
	return nil
}

// isFatal reports a member error that says the call itself is wrong, so
// that retrying or tolerating it cannot help.
func isFatal(err error) bool {
	return errors.Is(err, redisync.ErrInvalidArgument) ||
		errors.Is(err, redisync.ErrClosed) ||
		errors.Is(err, redisync.ErrUpgrade)
}

// others returns the members not in held.
func (m *MultiLock) others(held []int) []int {
	idx := make([]int, 0, len(m.members))
	for i := range m.members {
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
func (m *MultiLock) releaseTolerant(ctx context.Context, idx []int) {
	_ = m.release(ctx, idx)
}

// ownerKey names the owner a RedLock acquisition acts for: the token ctx
// carries, or 0 for the members' own handle owners. Given the MultiLock's
// fixed members, it determines the owner of every member.
func ownerKey(ctx context.Context) uint64 {
	t, _ := redisync.OwnerToken(ctx)
	return t
}

// record notes the members a successful RedLock acquisition took.
func (m *MultiLock) record(ctx context.Context, taken []int) {
	taken = slices.Clone(taken)
	slices.Sort(taken)
	k := ownerKey(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = make(map[uint64][][]int)
	}
	m.held[k] = append(m.held[k], taken)
}

// takeRecord removes and returns the members the latest acquisition of
// ctx's owner took, or nil if there is none.
func (m *MultiLock) takeRecord(ctx context.Context) []int {
	k := ownerKey(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.held[k]
	if len(s) == 0 {
		return nil
	}
	taken := s[len(s)-1]
	if len(s) == 1 {
		delete(m.held, k)
	} else {
		m.held[k] = s[:len(s)-1]
	}
	return taken
}

// unlockMajority releases a RedLock (see Unlock).
func (m *MultiLock) unlockMajority(ctx context.Context) error {
	idx := m.takeRecord(ctx)
	if idx == nil {
		idx = m.all()
	}
	released, notHeld := 0, 0
	var errs []error
	for k, err := range m.release(ctx, idx) {
		switch {
		case err == nil:
			released++
		case errors.Is(err, redisync.ErrNotHeld):
			notHeld++ // not held (any more): nothing to release
		default:
			errs = append(errs, m.memberErr(idx[k], err))
		}
	}
	if len(idx)-notHeld < m.quorum {
		errs = append([]error{fmt.Errorf("%s: %w: %d of %d members were still held, fewer than a majority (%d)",
			m.kind(), redisync.ErrNotHeld, len(idx)-notHeld, len(m.members), m.quorum)}, errs...)
	}
	return errors.Join(errs...)
}
