package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// Info is a snapshot of a Limiter's budget.
type Info struct {
	// Available is the number of permits the caller's next acquisition
	// could take now (its Client's budget for a PerClient limiter), as the
	// next script sees it: grants older than the interval given back.
	Available int64
}

// Inspect reads the limiter's budget left in one round trip (the script
// AvailablePermits runs). A limiter with no rate is ErrNotInitialized;
// Config reads the rate.
func (l *Limiter) Inspect(ctx context.Context) (Info, error) {
	n, err := l.AvailablePermits(ctx)
	if err != nil {
		return Info{}, err
	}
	return Info{Available: n}, nil
}

// GCRAInfo is a snapshot of a GCRA limiter, as its next call would see it.
type GCRAInfo struct {
	Remaining  int64         // events that could be allowed at once now (Burst when idle)
	ResetAfter time.Duration // until the limiter is back to a full burst; 0 when it is
}

// Inspect reads the limiter's state in one round trip (its key and the
// server's clock, pipelined) and takes nothing. A key of another layout
// gives an error wrapping redisync.ErrWrongType.
func (g *GCRA) Inspect(ctx context.Context) (GCRAInfo, error) {
	if err := g.h.Check(ctx); err != nil {
		return GCRAInfo{}, err
	}
	var (
		get *redis.StringCmd
		now *redis.TimeCmd
	)
	_, err := g.h.C.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, g.h.Name)
		now = p.Time(ctx)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return GCRAInfo{}, g.fail("inspect", err)
	}
	// gcra_take's arithmetic, on the server's clock in µs.
	nowUS := now.Val().UnixMicro()
	tat := nowUS
	if v, err := get.Result(); err == nil {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return GCRAInfo{}, fmt.Errorf("%s %q: inspect: %w (key %s holds a string that is not a GCRA arrival time)", g.h.Kind, g.h.Name, errs.ErrWrongType, g.h.Name)
		}
		tat = max(int64(f), nowUS)
	}
	em, burst := g.limit.emission(), g.limit.Burst
	remaining := min(max((nowUS+burst*em-tat)/em, 0), burst)
	return GCRAInfo{Remaining: remaining, ResetAfter: time.Duration(tat-nowUS) * time.Microsecond}, nil
}
