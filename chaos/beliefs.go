package chaos

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// The belief check: what the clients believe, whichever server told them.
//
// The sampler reads Redis, and one Redis cannot show what two primaries
// granted at once (a split brain: an isolated old primary still renewing
// a hold while the promoted replica grants it to another owner). The
// belief check reads no server: each worker records, for every hold it
// got, the interval during which it believed it held it, from the
// acquisition's return to its release call or to the moment it saw the
// hold's Done close, whichever came first. For every lock, the fair lock
// and the read-write lock's write side, no two holders' intervals may
// overlap by more than Config.BeliefMargin; a write interval may not
// overlap a read interval either. For the counted semaphore the permits
// believed held at any instant stay within the total; an expirable
// permit with a lease is believed only until its lease can have run out
// (acquisition call plus the permit lease: the library renews no permit).
//
// Every worker runs in this process, so one monotonic clock stamps every
// interval (History.Now), whichever namespace a worker's connections live
// in.

// beliefMode is what a belief holds.
type beliefMode int

const (
	beliefExclusive beliefMode = iota // a lock hold or a write hold
	beliefRead                        // a read hold
	beliefPermits                     // n permits
)

// belief is one interval during which a worker believed it held
// something: [from, to] on the history's clock.
type belief struct {
	worker int
	object string
	mode   beliefMode
	n      int64 // permits
	from   int64 // the acquisition returned
	to     int64 // the release was called or the loss was seen
	lost   bool  // it ended because the hold's Done closed
	token  int64
	// acqCall is when the acquisition was called.
	acqCall int64
	// cause is the hold's Err when its Done closed (lost), and lockLost
	// whether it wraps redisync.ErrLockLost.
	cause    string
	lockLost bool
}

// overlap is one overlap of two holders' beliefs beyond the margin: when
// the second began, and how long.
type overlap struct {
	at int64
	d  time.Duration
}

// beliefs collects the workers' beliefs.
type beliefs struct {
	mu  sync.Mutex
	all []belief
}

func (bs *beliefs) add(b belief) {
	bs.mu.Lock()
	bs.all = append(bs.all, b)
	bs.mu.Unlock()
}

func (bs *beliefs) list() []belief {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return append([]belief(nil), bs.all...)
}

// defaultBeliefMargin is Config.BeliefMargin's default: how much two
// holders' intervals may overlap without a violation. Every client runs
// on the same machine as the servers, so the clocks do not drift apart;
// the margin covers the scheduling of the worker goroutine between the
// hold's Done closing and its select returning on a loaded machine with
// the race detector on.
const defaultBeliefMargin = 50 * time.Millisecond

// checkBeliefs runs the belief check over bs and returns its summary line.
func (r *run) checkBeliefs(bs []belief) string {
	margin := int64(r.cfg.BeliefMargin)
	byObject := map[string][]belief{}
	for _, b := range bs {
		byObject[b.object] = append(byObject[b.object], b)
	}
	var objects []string
	for o := range byObject {
		objects = append(objects, o)
	}
	sort.Strings(objects)
	overlaps, longest := 0, int64(0)
	for _, o := range objects {
		list := byObject[o]
		sort.Slice(list, func(i, j int) bool { return list[i].from < list[j].from })
		if list[0].mode == beliefPermits {
			n, l := r.checkPermitBeliefs(o, list, margin)
			overlaps += n
			longest = max(longest, l)
			continue
		}
		for i, a := range list {
			for _, b := range list[i+1:] {
				if b.from >= a.to {
					break // sorted by from: no later one starts before a ends
				}
				if a.worker == b.worker || a.mode == beliefRead && b.mode == beliefRead {
					continue
				}
				ov := min(a.to, b.to) - b.from
				longest = max(longest, ov)
				if ov <= margin {
					continue
				}
				overlaps++
				r.overlaps = append(r.overlaps, overlap{at: b.from, d: time.Duration(ov)})
				r.violate(Violation{At: b.from, Check: "mutual exclusion (clients' beliefs)", Detail: fmt.Sprintf(
					"%s: w%d and w%d both believed they held it for %v (margin %v): %s and %s",
					o, a.worker, b.worker, time.Duration(ov).Round(time.Millisecond), r.cfg.BeliefMargin, a, b),
					Excerpt: append(r.opsAround(o, b.from-int64(5*time.Second), min(a.to, b.to)),
						append([]string{"faults in the 30s before:"}, r.faultsAround(b.from-int64(30*time.Second), min(a.to, b.to))...)...)})
			}
		}
	}
	r.beliefOverlap = time.Duration(longest)
	return fmt.Sprintf("clients' beliefs: %d hold and permit intervals on %d primitives, %d overlaps beyond %v (the longest overlap between two holders: %v)",
		len(bs), len(objects), overlaps, r.cfg.BeliefMargin, time.Duration(max(longest, 0)).Round(time.Millisecond))
}

// checkPermitBeliefs checks that the permits believed held on semaphore o
// (list, sorted by from) never exceed the total for longer than margin. It
// returns the violations and the longest excess.
func (r *run) checkPermitBeliefs(o string, list []belief, margin int64) (int, int64) {
	type ev struct {
		at int64
		n  int64
	}
	var evs []ev
	for _, b := range list {
		evs = append(evs, ev{b.from, b.n}, ev{b.to, -b.n})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].n < evs[j].n // ends first
	})
	total := r.cfg.Permits
	var held, overSince, longest int64
	over := false
	found := 0
	for _, e := range evs {
		held += e.n
		switch {
		case held > total && !over:
			over, overSince = true, e.at
		case held <= total && over:
			over = false
			d := e.at - overSince
			longest = max(longest, d)
			if d > margin {
				found++
				r.violate(Violation{At: overSince, Check: "permits (clients' beliefs)", Detail: fmt.Sprintf(
					"%s: the workers believed they held more than its %d permits for %v from %.3fs (margin %v)",
					o, total, time.Duration(d).Round(time.Millisecond), sec(overSince), r.cfg.BeliefMargin),
					Excerpt: r.opsAround(o, overSince-int64(5*time.Second), e.at)})
			}
		}
	}
	return found, longest
}

func (b belief) String() string {
	end := "release called"
	if b.lost {
		end = "Done closed"
	}
	s := fmt.Sprintf("w%d [%.3fs, %.3fs] (%s)", b.worker, sec(b.from), sec(b.to), end)
	if b.token != 0 {
		s += fmt.Sprintf(" token %d", b.token)
	}
	if b.mode == beliefRead {
		s += " read"
	}
	return s
}

// opsAround lists the calls on object between from and to.
func (r *run) opsAround(object string, from, to int64) []string {
	var lines []string
	for _, op := range r.h.Ops() {
		if op.Object == object && op.Return >= from && op.Call <= to && op.Outcome != Refused {
			lines = append(lines, op.String())
		}
	}
	if n := len(lines); n > 40 {
		lines = append([]string{fmt.Sprintf("… %d earlier calls", n-40)}, lines[n-40:]...)
	}
	return lines
}
