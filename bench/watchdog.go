package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
)

// renewCall is one request (a command or a pipeline) of the watchdog that
// carried renewal script calls.
type renewCall struct {
	start, end time.Time
	scripts    int // renewal script calls in it
}

// watchdog measures what keeping held locks costs (scenario watchdog-1000
// with WatchdogLocks locks, watchdog-10000 with WatchdogManyLocks): one
// client holds them all with a watchdog timeout of WatchdogTimeout
// (renewed every third of it), and the renewal ticks after the first are
// measured. The
// first tick is left out because it loads the renewal script (EVALSHA
// answered NOSCRIPT, then EVAL).
//
// Round trips per tick are counted by Redis (EVALSHA and EVAL calls in
// INFO commandstats over the measured ticks) and, as a cross-check, by the
// client's hook; ticks are told apart by the hook's timestamps (calls
// less than half an interval apart belong to one tick).
func (b *bench) watchdog(ctx context.Context, scenario string, held int) (Result, error) {
	cfg := b.cfg
	interval := cfg.WatchdogTimeout / 3
	rdb, cnt := newClient(b.addr)
	defer rdb.Close()
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(cfg.WatchdogTimeout))
	defer c.Close()

	rl := &renewLog{sha: lua.RenewLock.Hash(), cnt: cnt, interval: interval}
	cnt.setObserver(rl.observe)
	defer cnt.setObserver(nil)

	locks := make([]*rlock.Lock, held)
	for i := range locks {
		locks[i] = rlock.New(c, b.key("redisync", scenario, fmt.Sprint(i)))
	}
	if err := eachLock(locks, func(l *rlock.Lock) error { return l.Lock(ctx) }); err != nil {
		return Result{}, fmt.Errorf("lock: %w", err)
	}
	defer func() { _ = eachLock(locks, func(l *rlock.Lock) error { return l.Unlock(ctx) }) }()

	// The first tick (script loading) is not measured.
	if _, err := rl.ticksDone(ctx, time.Time{}, 1); err != nil {
		return Result{}, err
	}
	sp, err := beginSpan(ctx, b.meter, []*counter{cnt})
	if err != nil {
		return Result{}, err
	}
	begin := time.Now()
	ticks, err := rl.ticksDone(ctx, begin, cfg.WatchdogTicks)
	if err != nil {
		return Result{}, err
	}
	u, err := sp.end(ctx)
	if err != nil {
		return Result{}, err
	}
	return watchdogResult(cfg, scenario, held, ticks, u), nil
}

// eachLock runs do on every lock, 8 at a time, and returns the first
// error.
func eachLock(locks []*rlock.Lock, do func(*rlock.Lock) error) error {
	var g errgroup.Group
	g.SetLimit(8)
	for _, l := range locks {
		g.Go(func() error { return do(l) })
	}
	return g.Wait()
}

// watchdogResult is the watchdog row: ticks as the client's hook saw
// them, u as Redis counted them over the same span.
func watchdogResult(cfg config, scenario string, held int, ticks [][]renewCall, u usage) Result {
	interval := cfg.WatchdogTimeout / 3
	var tickDur []time.Duration
	hookCalls, hookTrips := 0, 0
	for _, t := range ticks {
		first, last := t[0].start, t[0].end
		for _, rc := range t {
			last = later(last, rc.end)
			hookCalls += rc.scripts
		}
		tickDur = append(tickDur, last.Sub(first))
		hookTrips += len(t)
	}
	n := int64(len(ticks))
	perLock := func(v int64) float64 { return round4(float64(v) / float64(n) / float64(held)) }
	res := Result{
		Library:  "redisync",
		Scenario: scenario,
		Op: fmt.Sprintf("one renewal tick of %d held locks (watchdog timeout %v, tick every %v)",
			held, cfg.WatchdogTimeout, interval),
		Latency: "tick duration, from the first renewal request sent to the last answered",
		Ops:     n,
		Seconds: round4(u.elapsed.Seconds()),
		Extra: map[string]float64{
			"held_locks":                      float64(held),
			"ticks":                           float64(n),
			"renewal_scripts_per_tick_redis":  round4(float64(u.scripts) / float64(n)),
			"renewal_scripts_per_tick_client": round4(float64(hookCalls) / float64(n)),
			"renewal_scripts_per_tick_min":    float64((held + 99) / 100),
			"renewal_round_trips_per_tick":    round4(float64(hookTrips) / float64(n)),
			// Per held lock, per tick.
			"commands_per_lock":      perLock(u.commands),
			"server_cpu_us_per_lock": perLock(u.cpu.Microseconds()),
			"bytes_in_per_lock":      perLock(u.bytesIn),
			"exec_us_per_lock":       perLock(u.usecBy["evalsha"] + u.usecBy["eval"]),
		},
		Note: fmt.Sprintf("per tick %g renewal scripts of ≤100 locks (EVALSHA+EVAL, counted by Redis) in %g round trip(s); per lock %g commands, %g µs Redis CPU",
			round4(float64(u.scripts)/float64(n)), round4(float64(hookTrips)/float64(n)), perLock(u.commands), perLock(u.cpu.Microseconds())),
	}
	res.quantiles(sortDurations(tickDur))
	res.perOp(u, n)
	return res
}

// renewLog records the calls of the renewal script the client's hook
// sees (observe), for the watchdog scenario.
type renewLog struct {
	sha      string // the renewal script's SHA1
	cnt      *counter
	interval time.Duration // between ticks

	mu    sync.Mutex
	calls []renewCall
}

// isRenewal reports whether cmd runs the renewal script (EVALSHA of its
// SHA1, or EVAL of its text).
func (rl *renewLog) isRenewal(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	script, _ := args[1].(string)
	switch strings.ToLower(cmd.Name()) {
	case "evalsha":
		return script == rl.sha
	case "eval":
		sum := sha1.Sum([]byte(script))
		return hex.EncodeToString(sum[:]) == rl.sha
	}
	return false
}

// observe is the counter's observer: it records a round trip that ran
// the renewal script.
func (rl *renewLog) observe(cmds []redis.Cmder, start, end time.Time) {
	n := 0
	for _, cmd := range cmds {
		if rl.isRenewal(cmd) {
			n++
		}
	}
	if n == 0 {
		return
	}
	rl.mu.Lock()
	rl.calls = append(rl.calls, renewCall{start: start, end: end, scripts: n})
	rl.mu.Unlock()
}

// since returns the calls recorded that started after t.
func (rl *renewLog) since(t time.Time) []renewCall {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var recent []renewCall
	for _, rc := range rl.calls {
		if rc.start.After(t) {
			recent = append(recent, rc)
		}
	}
	return recent
}

// ticksDone waits until n ticks have started after since and the last
// of them has ended: no renewal call in flight and none started for a
// quarter of the interval.
func (rl *renewLog) ticksDone(ctx context.Context, since time.Time, n int) ([][]renewCall, error) {
	interval := rl.interval
	deadline := time.Now().Add(time.Duration(n+3)*interval + 10*time.Second)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("watchdog: fewer than %d renewal ticks within %v", n, time.Duration(n+3)*interval+10*time.Second)
		}
		ticks := groupTicks(rl.since(since), interval/2)
		if len(ticks) >= n && rl.cnt.inFlight() == 0 {
			last := ticks[len(ticks)-1]
			if time.Since(last[len(last)-1].start) > interval/4 {
				return ticks, nil
			}
		}
		time.Sleep(min(interval/20, 20*time.Millisecond))
	}
}

// groupTicks splits renewal calls (in any order) into ticks: a call that
// starts more than gap after the first call of the current tick starts a
// new one.
func groupTicks(calls []renewCall, gap time.Duration) [][]renewCall {
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b renewCall) int { return a.start.Compare(b.start) })
	var ticks [][]renewCall
	for _, rc := range calls {
		if len(ticks) == 0 || rc.start.Sub(ticks[len(ticks)-1][0].start) > gap {
			ticks = append(ticks, nil)
		}
		ticks[len(ticks)-1] = append(ticks[len(ticks)-1], rc)
	}
	return ticks
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
