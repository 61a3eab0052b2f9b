package wait

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Spin waits without pub/sub: no subscription, a pause between attempts
// that starts at Min and doubles up to Max; each pause is drawn at random
// from its upper half.
type Spin struct {
	Min, Max time.Duration
}

func (s *Spin) wait(ctx context.Context, w *Waits, b Bound, a Attempt) (bool, error) {
	deadline := b.deadline()
	pause := s.Min
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ok, _, err := w.try(ctx, a)
		if ok || err != nil {
			return ok, err
		}
		d := pause/2 + rand.N(pause/2+1)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false, nil
			}
			d = min(d, left)
		}
		pause = min(pause*2, s.Max)
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false, errs.CtxError(ctx)
		case <-w.closing:
			return false, errs.ErrClosed
		}
	}
}
