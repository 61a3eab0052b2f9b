package multilock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
)

// minGrace is the least time a RedLock attempt waits for the remaining
// members once a majority has answered (see round).
const minGrace = 20 * time.Millisecond

// errNoAnswer stands for a member that did not answer in time (see round).
var errNoAnswer = errors.New("no answer in time")

// answer is a member's reply to TryLock in a round.
type answer struct {
	ok  bool
	err error // errNoAnswer when the member did not answer within the bound
}

// round calls TryLock(ctx, wait) on the members idx, all at once, and
// returns their answers by member index. It waits until every member has
// answered, or until bound has passed, or, once the answers in hand satisfy
// settled (nil: never), for as long again as they took (at least
// minGrace), whichever comes first. A member that has not answered by then
// gets errNoAnswer: its try is abandoned to finish by itself (its context
// is cancelled, and it is bounded by the member's own timeouts), and if it
// acquires the member after all, it releases it. So an unresponsive server
// (stopped, paused, partitioned) costs a round little more than the others'
// answers once they settle it, and never more than bound, whatever
// go-redis's timeouts.
func (g *group) round(ctx context.Context, idx []int, wait, bound time.Duration, settled func(map[int]answer) bool) map[int]answer {
	start := time.Now()
	answers := make(map[int]answer, len(idx))
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	r := &roundState{ch: make(chan reply, len(idx))}
	release := context.WithoutCancel(ctx) // carries ctx's owner
	for _, i := range idx {
		// A member whose try of an earlier round is still running has not
		// answered that one: it counts as not answering this one either.
		// (A new try would queue behind it, at the handle's local gate.)
		if !g.pending[i].CompareAndSwap(false, true) {
			answers[i] = answer{err: errNoAnswer}
			continue
		}
		go r.try(rctx, release, g.members[i], i, wait, &g.pending[i])
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	graced := false
	for len(answers) < len(idx) {
		if !graced && settled != nil && settled(answers) {
			graced = true
			took := time.Since(start)
			timer.Reset(min(max(took, minGrace), bound-took))
		}
		select {
		case rp := <-r.ch:
			answers[rp.i] = rp.answer
		case <-timer.C:
			for _, rp := range r.abandon() {
				answers[rp.i] = rp.answer
			}
			for _, i := range idx {
				if _, ok := answers[i]; !ok {
					answers[i] = answer{err: errNoAnswer}
				}
			}
			return answers
		}
	}
	return answers
}

type reply struct {
	i int
	answer
}

// roundState hands the members' replies of one round to its caller, until
// the caller stops listening.
type roundState struct {
	mu        sync.Mutex
	abandoned bool
	ch        chan reply // buffered for every member: sends never block
}

// try runs one member's TryLock and hands its reply over, or, when the
// round was abandoned meanwhile, releases what it got on release, a
// context that carries the caller's owner.
func (r *roundState) try(ctx, release context.Context, l redisync.Locker, i int, wait time.Duration, pending *atomic.Bool) {
	defer pending.Store(false)
	ok, err := l.TryLock(ctx, wait)
	r.mu.Lock()
	if !r.abandoned {
		r.ch <- reply{i, answer{ok, err}}
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	if err == nil && ok {
		// Nobody counts this hold: give it back. If that fails, the
		// member's renewal has stopped and its lease frees it.
		_ = l.Unlock(release)
	}
}

// abandon stops the round's caller from listening and returns the replies
// handed over before that.
func (r *roundState) abandon() []reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = true
	var out []reply
	for {
		select {
		case rp := <-r.ch:
			out = append(out, rp)
		default:
			return out
		}
	}
}
