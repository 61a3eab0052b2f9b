package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// rateSlack shortens the rate check's window: the limiter counts its
// interval on the server's clock, which the netns topology's clock faults
// may run up to 0.5% fast.
const rateSlack = rateInterval / 100

// limiters are the workload's rate limiters and the most each may admit
// within a window of window ns.
var limiters = []struct {
	name string
	most func(window int64) int64
}{
	{rateName, func(int64) int64 { return rateLimit }},
	{gcraName, func(window int64) int64 {
		// GCRA: the burst, and one more per emission interval.
		return gcraLimit.Burst + window/(int64(gcraLimit.Period)/gcraLimit.Rate)
	}},
}

// checkRate checks each rate limiter's admissions in ops (checkLimiter)
// and returns its summary lines, one line.
func (r *run) checkRate(ops []Op) string {
	var lines []string
	for _, l := range limiters {
		lines = append(lines, r.checkLimiter(ops, l.name, l.most))
	}
	return strings.Join(lines, "\n  ")
}

// checkLimiter checks the admissions of the rate limiter name in ops: no
// window of rateInterval (less rateSlack) holds more than most(window)
// permits whose acquisition was called and returned within it, so
// certainly admitted within it. Acquisitions that failed with an error
// are left out (their undo takes back what they may have taken). It
// returns its summary line.
func (r *run) checkLimiter(ops []Op, name string, most func(int64) int64) string {
	var adm []Op
	for _, op := range ops {
		if op.Kind == RateAcquire && op.Object == name && op.Outcome == OK {
			adm = append(adm, op)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i].Call < adm[j].Call })
	window := int64(rateInterval - rateSlack)
	limit := most(window)
	seen, bad := int64(0), 0
	for i, a := range adm {
		var n int64
		var in []string
		for _, b := range adm[i:] {
			if b.Call >= a.Call+window {
				break
			}
			if b.Return < a.Call+window {
				n += b.N
				in = append(in, b.String())
			}
		}
		seen = max(seen, n)
		if n > limit {
			bad++
			r.violate(Violation{At: a.Call, Check: "rate limit", Detail: fmt.Sprintf(
				"%s: %d permits admitted within %v from %.3fs, at most %d allowed", name, n, time.Duration(window), sec(a.Call), limit),
				Excerpt: in})
		}
	}
	return fmt.Sprintf("rate limiter %s: %d admitted, at most %d within any %v (at most %d allowed): %v",
		name, len(adm), seen, time.Duration(window), limit, bad == 0)
}
