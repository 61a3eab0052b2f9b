package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// Rate limiters in inspect: a ratelimit.Limiter (Redisson RRateLimiter's
// layout) is recognised by its configuration hash (fields rate, interval
// and type); a ratelimit.GCRA, a string holding a time in epoch
// microseconds, only with -type gcra (it looks like a very large counter
// otherwise). inspect.go calls inspectRateLimit before its own
// recognition, and writeRateLimit for the text.

// kindGCRA is a ratelimit.GCRA (kindRateLimiter, in inspect.go, is a
// Limiter).
const kindGCRA kind = "gcra"

func init() { allKinds = append(allKinds, kindGCRA) }

// rateLimit reports whether the kind is a rate limiter: neither has a
// channel (Redisson's rate limiter uses no pub/sub).
func (k kind) rateLimit() bool { return k == kindRateLimiter || k == kindGCRA }

// RateLimit is what inspect reports of a rate limiter.
type RateLimit struct {
	// Limiter: its configuration (Redisson's hash).
	RateType    string       `json:"rate_type,omitempty"` // "overall" or "per-client"
	Rate        int64        `json:"rate,omitempty"`
	IntervalMs  int64        `json:"interval_ms,omitempty"`
	KeepAliveMs int64        `json:"keep_alive_ms,omitempty"`
	Budgets     []RateBudget `json:"budgets,omitempty"`
	// GCRA: the theoretical arrival time (TAT), epoch µs, which is when
	// the limiter is back to a full burst, and how long until then (0: it
	// is). The key holds no limit (the handles have it), so inspect cannot
	// say when the next event is allowed: with burst B and emission
	// interval T (the period over the rate), n events are allowed from
	// TAT − (B − n)·T on.
	TATMicros         int64 `json:"tat_us,omitempty"`
	FullBurstInMillis int64 `json:"full_burst_in_ms,omitempty"`
}

// RateBudget is one budget of a Limiter: the Overall one, or a client's.
type RateBudget struct {
	ClientID string `json:"client_id,omitempty"` // empty for Overall
	// Left is the permits left now, as the limiter's next script counts
	// them (rl_settle in lua/prelude_ratelimit.lua): the value key plus
	// the permits of the grants that have left the window, which that
	// script gives back; or, when the value key is missing or that sum is
	// above the rate, the rate minus the permits in the window. Stored is
	// the value key as last written (-1 when missing), and
	// ExpiredPermits the permits of grants that left the window but are
	// not dropped yet (no script has run since). Live counts the grants
	// in the window (younger than the interval, by the server's clock),
	// and LivePermits their permits.
	Left           int64 `json:"left"`
	Stored         int64 `json:"stored_left"`
	ExpiredPermits int64 `json:"expired_permits"`
	Live           int64 `json:"grants_in_window"`
	LivePermits    int64 `json:"permits_in_window"`
	// NextFreeMs is when the oldest live grant leaves the window, from now
	// (0 without live grants).
	NextFreeMs int64 `json:"next_free_ms"`
}

// inspectRateLimit reports name as a rate limiter when it is one (or
// forced is kindRateLimiter or kindGCRA); ok is false to let inspect
// recognise the other kinds.
func inspectRateLimit(ctx context.Context, rdb redis.UniversalClient, name string, forced kind) (r *Report, ok bool, err error) {
	if forced != "" && forced != kindRateLimiter && forced != kindGCRA {
		return nil, false, nil
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return nil, true, err
	}
	if forced == kindGCRA {
		return inspectGCRA(ctx, rdb, name, now)
	}
	if forced == "" {
		// Without -type, only a hash laid out as a limiter's config (those
		// fields and no other, all numbers) is one: an application's hash
		// that happens to have a rate field is left to inspect's checks.
		hash, err := rdb.HGetAll(ctx, name).Result()
		if err != nil || !isLimiterHash(hash) {
			return nil, false, nil
		}
	}
	cfg, err := readLimiterConfig(ctx, rdb, name)
	if err != nil {
		exists := errors.Is(err, errNoLimiterConfig) && rdb.Exists(ctx, name).Val() == 1
		return limiterConfigFailure(name, forced, exists, err)
	}
	rl := &RateLimit{Rate: cfg.rate, IntervalMs: cfg.interval, KeepAliveMs: cfg.keepAlive, RateType: "overall"}
	ttl := rdb.PTTL(ctx, name).Val().Milliseconds()
	r = &Report{Name: name, Type: kindRateLimiter, Reason: limiterReason(cfg.hash), Exists: true,
		TTLMillis: &ttl, RateLimit: rl}
	if cfg.typ == 1 {
		rl.RateType = "per-client"
	}
	if rl.Budgets, err = limiterBudgets(ctx, rdb, name, cfg, now); err != nil {
		return nil, true, err
	}
	return r, true, nil
}

// limiterConfigFailure is inspectRateLimit's answer when
// readLimiterConfig fails with err: without -type (forced ""), a key that
// is not a limiter's config is left to inspect's other checks; with it, an
// error, or a report of type none (errNotFound) when there is no key
// (exists is false).
func limiterConfigFailure(name string, forced kind, exists bool, err error) (*Report, bool, error) {
	notLimiter := errors.Is(err, errLimiterNotHash) || errors.Is(err, errNoLimiterConfig)
	switch {
	case notLimiter && forced == "":
		return nil, false, nil
	case errors.Is(err, errLimiterNotHash):
		return nil, true, fmt.Errorf("%q is not a hash: not a rate limiter", name)
	case errors.Is(err, errNoLimiterConfig) && exists:
		return nil, true, fmt.Errorf("%q is a hash without a rate limiter configuration (fields rate, interval, type): %w", name, errNotPrimitive)
	case errors.Is(err, errNoLimiterConfig):
		return &Report{Name: name, Type: kindNone, Reason: "no rate limiter configuration (hash fields rate, interval, type)"},
			true, fmt.Errorf("%w under %q: no rate limiter configuration", errNotFound, name)
	}
	return nil, true, err
}

var (
	// errLimiterNotHash reports that a limiter's configuration key is not
	// a hash.
	errLimiterNotHash = errors.New("not a hash")
	// errNoLimiterConfig reports a limiter's configuration hash without an
	// integer rate, interval or type.
	errNoLimiterConfig = errors.New("no rate limiter configuration")
)

// limiterConfig is a Limiter's configuration, as its hash holds it.
type limiterConfig struct {
	rate, interval, typ int64
	keepAlive           int64             // 0 when the field is missing
	hash                map[string]string // the fields, for limiterReason
}

// readLimiterConfig reads name's configuration hash. A key that is not a
// hash is errLimiterNotHash; a rate, interval or type that is missing or
// not an integer is errNoLimiterConfig.
func readLimiterConfig(ctx context.Context, rdb redis.UniversalClient, name string) (limiterConfig, error) {
	var cfg limiterConfig
	vals, err := rdb.HMGet(ctx, name, "rate", "interval", "type", "keepAliveTime").Result()
	if isWrongType(err) {
		return cfg, errLimiterNotHash
	}
	if err != nil {
		return cfg, err
	}
	num := func(v any) (int64, bool) {
		s, isStr := v.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		return n, isStr && err == nil
	}
	rate, ok1 := num(vals[0])
	interval, ok2 := num(vals[1])
	typ, ok3 := num(vals[2])
	if !ok1 || !ok2 || !ok3 {
		return cfg, errNoLimiterConfig
	}
	cfg = limiterConfig{rate: rate, interval: interval, typ: typ}
	cfg.keepAlive, _ = num(vals[3])
	cfg.hash = map[string]string{"rate": strconv.FormatInt(rate, 10), "interval": strconv.FormatInt(interval, 10), "type": strconv.FormatInt(typ, 10)}
	if s, ok := vals[3].(string); ok {
		cfg.hash["keepAliveTime"] = s
	}
	return cfg, nil
}

// limiterBudgets reads a Limiter's budgets at now: the one Overall budget
// (type 0), or one per client in its clients set (type 1; none when the
// set is empty).
func limiterBudgets(ctx context.Context, rdb redis.UniversalClient, name string, cfg limiterConfig, now time.Time) ([]RateBudget, error) {
	if cfg.typ != 1 {
		b, err := readBudget(ctx, rdb, "", keys.RateValue(name), keys.RatePermits(name), cfg, now)
		if err != nil {
			return nil, err
		}
		return []RateBudget{b}, nil
	}
	ids, err := rdb.SMembers(ctx, keys.RateClients(name)).Result()
	if err != nil {
		return nil, err
	}
	var bs []RateBudget
	for _, id := range ids {
		b, err := readBudget(ctx, rdb, id, keys.RateClientValue(name, id), keys.RateClientPermits(name, id), cfg, now)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	return bs, nil
}

// readBudget reads one budget of a Limiter: its value key and its grants
// zset, by the server's clock now, and counts the permits left as the
// limiter's next script will (see RateBudget.Left), without writing.
func readBudget(ctx context.Context, rdb redis.UniversalClient, id, value, zset string, cfg limiterConfig, now time.Time) (RateBudget, error) {
	b := RateBudget{ClientID: id, Stored: -1}
	v, err := rdb.Get(ctx, value).Int64()
	if err == nil {
		b.Stored = v
	} else if err != redis.Nil {
		return b, err
	}
	grants, err := rdb.ZRangeWithScores(ctx, zset, 0, -1).Result()
	if err != nil {
		return b, err
	}
	// A grant made at s is in the window while s >= now - interval
	// (lua/prelude_ratelimit.lua).
	from := now.UnixMilli() - cfg.interval
	for _, g := range grants {
		n := grantPermits(g.Member.(string))
		if int64(g.Score) < from {
			b.ExpiredPermits += n
			continue
		}
		if b.Live == 0 {
			b.NextFreeMs = max(int64(g.Score)+cfg.interval+1-now.UnixMilli(), 0)
		}
		b.LivePermits += n
		b.Live++
	}
	b.Left = b.Stored + b.ExpiredPermits
	if b.Stored < 0 || b.Left > cfg.rate {
		b.Left = max(cfg.rate-b.LivePermits, 0)
	}
	return b, nil
}

// grantPermits is the permit count a grant's zset member holds: Redisson
// packs it as a 21-byte member whose bytes 17 to 20 are the count, little
// endian. A member of another length counts 0.
func grantPermits(member string) int64 {
	m := []byte(member)
	if len(m) != 21 {
		return 0
	}
	return int64(m[17]) | int64(m[18])<<8 | int64(m[19])<<16 | int64(m[20])<<24
}

// inspectGCRA reports a GCRA limiter's key.
func inspectGCRA(ctx context.Context, rdb redis.UniversalClient, name string, now time.Time) (*Report, bool, error) {
	v, err := rdb.Get(ctx, name).Result()
	r := &Report{Name: name, Type: kindGCRA, Reason: "set with -type", RateLimit: &RateLimit{}}
	switch {
	case err == redis.Nil:
		r.Reason += "; no key: idle, at a full burst"
		return r, true, nil
	case isWrongType(err):
		return nil, true, fmt.Errorf("%q is not a string: not a GCRA limiter", name)
	case err != nil:
		return nil, true, err
	}
	tat, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, true, fmt.Errorf("%q holds %q, not a GCRA time", name, truncate(v))
	}
	ttl := rdb.PTTL(ctx, name).Val().Milliseconds()
	r.Exists, r.TTLMillis = true, &ttl
	r.RateLimit.TATMicros = tat
	r.RateLimit.FullBurstInMillis = max(tat-now.UnixMicro(), 0) / 1000
	return r, true, nil
}

// writeRateLimit prints a rate limiter's report.
func (r *Report) writeRateLimit(line func(label, format string, args ...any)) {
	rl := r.RateLimit
	if r.Type == kindGCRA {
		if rl.TATMicros == 0 {
			line("state", "idle: a full burst is available")
			return
		}
		line("state", "back to a full burst in %s (theoretical arrival time, TAT, %s)", msText(rl.FullBurstInMillis),
			time.UnixMicro(rl.TATMicros).UTC().Format(time.RFC3339Nano))
		line("next", "n events are allowed from TAT − (burst − n)·period/rate on (the key holds no limit)")
		return
	}
	keep := "none"
	if rl.KeepAliveMs > 0 {
		keep = msText(rl.KeepAliveMs)
	}
	line("config", "%s, %d permits per %s, keep-alive %s", rl.RateType, rl.Rate, msText(rl.IntervalMs), keep)
	if len(rl.Budgets) == 0 {
		line("budgets", "none yet")
	}
	for _, b := range rl.Budgets {
		label := "budget"
		if b.ClientID != "" {
			label = "client " + b.ClientID
		}
		next := ""
		if b.Live > 0 {
			next = fmt.Sprintf("; the oldest frees in %s", msText(b.NextFreeMs))
		}
		if b.ExpiredPermits > 0 {
			// Counted back by the limiter's next script, not yet in Redis.
			stored := "unset"
			if b.Stored >= 0 {
				stored = strconv.FormatInt(b.Stored, 10)
			}
			next += fmt.Sprintf("; %d back from expired grants (stored: %s)", b.ExpiredPermits, stored)
		}
		line(label, "%d permits left; %d in the window (%s)%s", b.Left, b.LivePermits, plural(int(b.Live), "grant"), next)
	}
}
