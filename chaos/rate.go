package chaos

import (
	"fmt"
	"sort"
	"time"
)

// rateSlack shortens the rate check's window: the limiter counts its
// interval on the server's clock, which the netns topology's clock faults
// may run up to 0.5% fast.
const rateSlack = rateInterval / 100

// checkRate checks the rate limiter's admissions in ops: no window of
// rateInterval (less rateSlack) holds more than rateLimit permits whose
// acquisition was called and returned within it, so certainly admitted
// within it. Acquisitions that failed with an error are left out (their
// undo takes back what they may have taken). It returns its summary
// line.
func (r *run) checkRate(ops []Op) string {
	var adm []Op
	for _, op := range ops {
		if op.Kind == RateAcquire && op.Outcome == OK {
			adm = append(adm, op)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i].Call < adm[j].Call })
	window := int64(rateInterval - rateSlack)
	most, bad := int64(0), 0
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
		most = max(most, n)
		if n > rateLimit {
			bad++
			r.violate(Violation{At: a.Call, Check: "rate limit", Detail: fmt.Sprintf(
				"%s: %d permits admitted within %v from %.3fs, limit %d per %v", rateName, n, time.Duration(window), sec(a.Call), rateLimit, rateInterval),
				Excerpt: in})
		}
	}
	return fmt.Sprintf("rate limiter %s: %d admitted, at most %d within any %v (limit %d per %v): %v",
		rateName, len(adm), most, time.Duration(window), rateLimit, rateInterval, bad == 0)
}
