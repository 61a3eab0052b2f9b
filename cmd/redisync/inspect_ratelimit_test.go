package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
)

// TestInspectRateLimiter: a PerClient limiter with grants of two clients,
// and a GCRA limiter with -type gcra.
func TestInspectRateLimiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	a, b := clienttest.Shared(t), clienttest.Shared(t)
	if err := ratelimit.New(a, name).SetRate(ctx, ratelimit.PerClient, 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ratelimit.New(a, name).Delete(context.Background()) })
	for c, n := range map[string]int64{a.ID(): 2, b.ID(): 3} {
		cl := a
		if c == b.ID() {
			cl = b
		}
		if ok, err := ratelimit.New(cl, name).TryAcquire(ctx, n, 0); err != nil || !ok {
			t.Fatalf("acquire %d: %v %v", n, ok, err)
		}
	}
	r := inspectJSON(t, name)
	if r.Type != kindRateLimiter || r.RateLimit == nil {
		t.Fatalf("report %+v: want a rate limiter", r)
	}
	rl := r.RateLimit
	if rl.RateType != "per-client" || rl.Rate != 5 || rl.IntervalMs != 3600000 || len(rl.Budgets) != 2 {
		t.Fatalf("rate limit %+v", rl)
	}
	for _, bu := range rl.Budgets {
		want := int64(2)
		if bu.ClientID == b.ID() {
			want = 3
		}
		if bu.LivePermits != want || bu.Left != 5-want || bu.Live != 1 || bu.NextFreeMs <= 0 {
			t.Errorf("budget %+v: want %d permits in the window", bu, want)
		}
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	if res.code != 0 || !strings.Contains(res.stdout, "per-client, 5 permits per 1h0m0s") {
		t.Errorf("text: %s", res.stdout)
	}

	g := ratelimit.NewGCRA(a, redistest.Key(t, "gcra"), ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 2})
	t.Cleanup(func() { _ = g.Reset(context.Background()) })
	if ok, err := g.Allow(ctx); err != nil || !ok {
		t.Fatalf("allow: %v %v", ok, err)
	}
	// One event of 1 per hour: the TAT is an hour ahead, when the burst of
	// 2 is full again; the next event is allowed at TAT − (2 − 1)·1h, now.
	before := time.Now()
	r = inspectJSON(t, g.Name(), "-type", "gcra")
	if r.Type != kindGCRA || r.RateLimit == nil || r.RateLimit.FullBurstInMillis <= 3500000 || r.RateLimit.FullBurstInMillis > 3600000 {
		t.Fatalf("gcra report %+v %+v", r, r.RateLimit)
	}
	if tat := time.UnixMicro(r.RateLimit.TATMicros); tat.Before(before.Add(59*time.Minute)) || tat.After(before.Add(61*time.Minute)) {
		t.Errorf("gcra TAT %v, want an hour after %v", tat, before)
	}
	res = runCmd(t, nil, "inspect", "-redis", testURL(t), "-type", "gcra", g.Name())
	for _, want := range []string{"back to a full burst in 59m", "theoretical arrival time, TAT,",
		"n events are allowed from TAT − (burst − n)·period/rate on (the key holds no limit)"} {
		if res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("gcra text lacks %q:\n%s", want, res.stdout)
		}
	}
}

// Regression (issue 34): inspect of a Limiter whose grants had left the
// window showed the value key as written ("3 permits left; 0 in the
// window") where the limiter had 5: its next script counts the expired
// grants back. inspect counts as the script does, and says how many
// permits came back; the limiter's own AvailablePermits agrees.
func TestInspectRateLimiterExpiredGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "rl")
	c := clienttest.Shared(t)
	l := ratelimit.New(c, name)
	if err := l.SetRate(ctx, ratelimit.Overall, 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = l.Delete(context.Background()) })
	if ok, err := l.TryAcquire(ctx, 2, 0); err != nil || !ok {
		t.Fatalf("acquire 2: %v %v", ok, err)
	}
	// Age the grant past the window (two hours ago, by the server's
	// clock) instead of waiting an hour.
	now, err := rdb(t).Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	grants, err := rdb(t).ZRange(ctx, keys.RatePermits(name), 0, -1).Result()
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants %q: %v", grants, err)
	}
	old := float64(now.Add(-2 * time.Hour).UnixMilli())
	if err := rdb(t).ZAddXX(ctx, keys.RatePermits(name), redis.Z{Score: old, Member: grants[0]}).Err(); err != nil {
		t.Fatal(err)
	}

	r := inspectJSON(t, name)
	if r.RateLimit == nil || len(r.RateLimit.Budgets) != 1 {
		t.Fatalf("report %+v: want one budget", r)
	}
	b := r.RateLimit.Budgets[0]
	if b.Left != 5 || b.Stored != 3 || b.ExpiredPermits != 2 || b.LivePermits != 0 || b.Live != 0 {
		t.Errorf("budget %+v: want 5 left (3 stored + 2 from the expired grant), none in the window", b)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	if want := "5 permits left; 0 in the window (0 grants); 2 back from expired grants (stored: 3)"; res.code != 0 || !strings.Contains(res.stdout, want) {
		t.Errorf("text lacks %q:\n%s", want, res.stdout)
	}
	if n, err := l.AvailablePermits(ctx); err != nil || n != 5 {
		t.Errorf("AvailablePermits: %d, %v; want 5, as inspect said", n, err)
	}
}
