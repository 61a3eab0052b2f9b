package countdown

import "context"

// Info is a snapshot of a latch as Redis holds it.
type Info struct {
	// Count is the latch's count: 0 when it is open (Redis then holds no
	// key: a latch that reaches zero, or was never set, is deleted).
	Count int64
}

// Inspect reads the latch's count in one round trip. A key under its name
// that is not a string holding an integer gives an error wrapping
// redisync.ErrWrongType; Inspect only reads.
func (l *Latch) Inspect(ctx context.Context) (Info, error) {
	n, err := l.Count(ctx)
	if err != nil {
		return Info{}, err
	}
	return Info{Count: n}, nil
}
