package semaphore

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Info is a snapshot of a counted semaphore as Redis holds it.
type Info struct {
	// Available is the number of permits available: 0 when the semaphore
	// was never set; it may be negative (AddPermits with n < 0).
	Available int64
}

// Inspect reads the semaphore's available permits in one round trip. A
// key under its name that is not a string holding an integer gives an
// error wrapping redisync.ErrWrongType; Inspect only reads.
func (s *Semaphore) Inspect(ctx context.Context) (Info, error) {
	n, err := s.AvailablePermits(ctx)
	if err != nil {
		return Info{}, err
	}
	return Info{Available: n}, nil
}

// ExpirableInfo is a snapshot of a permit-expirable semaphore as Redis
// holds it, read in one round trip, as the next script on it would see it:
// permits whose lease ran out are counted as available (the next script
// gives them back) and are not listed.
type ExpirableInfo struct {
	// Available is the number of permits available, expired ones
	// included.
	Available int64
	// Permits are the acquired permits whose lease has not run out,
	// soonest expiry first.
	Permits []Permit
}

// Permit is one acquired permit of an expirable semaphore.
type Permit struct {
	ID    string        // the permit id, 32 lowercase hex characters
	Lease time.Duration // remaining lease; -1 for a permit that never expires
}

// neverExpires is the expiry score (epoch ms) of a permit acquired
// without a lease, Redisson's.
const neverExpires = 922337203685477

// Inspect reads the semaphore's available permits and its acquired
// permits with their remaining leases in one round trip (one pipeline to
// the node of the semaphore's cluster slot, with the server's clock). A
// key of another layout gives an error wrapping redisync.ErrWrongType;
// Inspect only reads.
func (s *ExpirableSemaphore) Inspect(ctx context.Context) (ExpirableInfo, error) {
	if err := s.h.Check(ctx); err != nil {
		return ExpirableInfo{}, err
	}
	var (
		get     *redis.StringCmd
		permits *redis.ZSliceCmd
		now     *redis.TimeCmd
	)
	_, err := s.h.C.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, s.h.Name)
		permits = p.ZRangeWithScores(ctx, s.timeouts, 0, -1)
		now = p.Time(ctx)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return ExpirableInfo{}, s.fail("inspect", err)
	}
	var info ExpirableInfo
	if v, err := get.Result(); err == nil {
		if info.Available, err = strconv.ParseInt(v, 10, 64); err != nil {
			return ExpirableInfo{}, s.fail("inspect", err)
		}
	}
	nowMillis := now.Val().UnixMilli()
	for _, z := range permits.Val() {
		id, _ := z.Member.(string)
		switch {
		case z.Score >= neverExpires:
			info.Permits = append(info.Permits, Permit{ID: hex.EncodeToString([]byte(id)), Lease: -1})
		case int64(z.Score) <= nowMillis: // the scripts' rule: expired at its score
			info.Available++
		default:
			info.Permits = append(info.Permits, Permit{ID: hex.EncodeToString([]byte(id)),
				Lease: time.Duration(int64(z.Score)-nowMillis) * time.Millisecond})
		}
	}
	return info, nil
}
