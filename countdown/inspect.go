package countdown

import (
	"context"
	"fmt"

	"github.com/redisync/redisync/internal/core/errs"
)

// Info is a snapshot of a latch as Redis holds it.
type Info struct {
	// Count is the latch's count: 0 when it is open (Redis then holds no
	// key: a latch that reaches zero, or was never set, is deleted).
	Count int64
}

// Inspect reads the latch's count in one round trip (a GET). A key under
// its name that is not a string holding an integer gives an error wrapping
// redisync.ErrWrongType. Inspect only reads: unlike Count, it writes no
// fence key and waits for no replica, so its count is a snapshot of the
// primary, which may include count-downs its replicas have not received
// yet (use Count for a count to act on).
func (l *Latch) Inspect(ctx context.Context) (Info, error) {
	if err := l.h.Check(ctx); err != nil {
		return Info{}, err
	}
	n, err := l.get(ctx)
	if err != nil {
		return Info{}, fmt.Errorf("countdown %q: inspect: %w", l.h.Name, errs.ReplyError(err))
	}
	return Info{Count: n}, nil
}
