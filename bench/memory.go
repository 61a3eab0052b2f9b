package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// memoryPrimitive is one primitive of the redis-memory scenario: open
// makes what one operation (an acquisition and its release) runs on.
type memoryPrimitive struct {
	name, op string
	open     func(ctx context.Context, c conn, key string) (mutex, func(), error)
}

// ownedMutex is a redisync lock used with a context owner: every call
// carries the same owner, so its acquisition and release are recorded
// requests (not the fresh hold of a handle without an owner).
type ownedMutex struct {
	l     *rlock.Lock
	owner context.Context
}

// Lock and Unlock use the owner's context (the scenario is not
// cancelled midway).
func (m ownedMutex) Lock(context.Context) error   { return m.l.Lock(m.owner) }
func (m ownedMutex) Unlock(context.Context) error { return m.l.Unlock(m.owner) }

// memoryPrimitives are the primitives whose leftovers are measured:
// redisync's lock without and with a context owner, its fair lock and its
// counted semaphore (1 permit), and each peer's lock.
func memoryPrimitives() []memoryPrimitive {
	viaLib := func(l library) func(ctx context.Context, c conn, key string) (mutex, func(), error) {
		return func(_ context.Context, c conn, key string) (mutex, func(), error) {
			s, err := l.open(c, nil)
			if err != nil {
				return nil, nil, err
			}
			return s.mutex(key), s.close, nil
		}
	}
	var out []memoryPrimitive
	for _, l := range lockLibraries(scContended0) {
		switch l.name {
		case "redisync", "redisync-fair", "redsync", "rueidislock":
			out = append(out, memoryPrimitive{name: l.name, op: "Lock+Unlock", open: viaLib(l)})
		case "redislock-linear10ms":
			out = append(out, memoryPrimitive{name: "redislock", op: "Obtain+Release", open: viaLib(l)})
		}
	}
	out = slices.Insert(out, 1, memoryPrimitive{name: "redisync-owner", op: "Lock+Unlock with one context owner (redisync.WithOwner)",
		open: func(ctx context.Context, c conn, key string) (mutex, func(), error) {
			rc := newRedisync(c.rdb)
			return ownedMutex{l: rlock.New(rc, key), owner: redisync.WithOwner(context.WithoutCancel(ctx))}, func() { _ = rc.Close() }, nil
		}})
	out = append(out, memoryPrimitive{name: "redisync-semaphore", op: "Acquire(1)+Release(1) of a counted semaphore of 1 permit",
		open: func(ctx context.Context, c conn, key string) (mutex, func(), error) {
			rc := newRedisync(c.rdb)
			s := semaphore.New(rc, key)
			if _, err := s.TrySetPermits(ctx, 1); err != nil {
				_ = rc.Close()
				return nil, nil, err
			}
			return permit{s}, func() { _ = rc.Close() }, nil
		}})
	return out
}

// keyGroup is the keys of one kind a primitive left behind.
type keyGroup struct {
	kind     string
	count    int
	maxPTTL  time.Duration // the longest time to live left (≈ the lifetime set by the latest operation)
	bytes    float64       // MEMORY USAGE, mean per key
	noExpire int           // keys without a time to live
}

// memoryCurve runs -scale-memory-ops operations of each primitive, one
// after the other, and reads what they left behind: the keys under the
// primitive's names (SCAN), grouped by kind, with their time to live
// (PTTL) and size (MEMORY USAGE). A kind with at least one key per two
// operations is per operation; its memory held at steady state is
// keys/op × lifetime × bytes/key per operation per second, given per
// 1,000 operations per second. The others (a semaphore's permits, a
// client's ledger) are per name or per client and listed in the note.
func (b *bench) memoryCurve(ctx context.Context) ([]Result, error) {
	var rows []Result
	ops := b.cfg.ScaleMemoryOps
	for _, p := range memoryPrimitives() {
		if !b.cfg.library(p.name) {
			continue
		}
		rdb, cnt := newClient(b.addr)
		base := b.key(p.name, scMemory)
		m, closeFn, err := p.open(ctx, conn{addr: b.addr, rdb: rdb, cnt: cnt}, base)
		if err != nil {
			_ = rdb.Close()
			return rows, fmt.Errorf("%s %s: %w", scMemory, p.name, err)
		}
		sp, err := beginSpan(ctx, b.meter, []*counter{cnt})
		if err == nil {
			start := time.Now()
			for i := 0; i < ops && err == nil; i++ {
				if err = m.Lock(ctx); err == nil {
					err = m.Unlock(ctx)
				}
			}
			elapsed := time.Since(start)
			var u usage
			if err == nil {
				u, err = sp.end(ctx)
			}
			if err == nil {
				var groups []keyGroup
				groups, err = b.leftovers(ctx, base)
				if err == nil {
					rows = append(rows, memoryRow(p, ops, elapsed, u, groups))
					fmt.Fprintf(b.log, "bench: %-18s %-21s %s\n", scMemory, p.name, rows[len(rows)-1].Note)
				}
			}
		}
		closeFn()
		_ = rdb.Close()
		if err != nil {
			return rows, fmt.Errorf("%s %s: %w", scMemory, p.name, err)
		}
	}
	return rows, nil
}

// idPart matches the parts of a key name that differ from one operation
// or client to the next (request ids, owner ids, sequence numbers), so
// that keys of one kind group together.
var idPart = regexp.MustCompile(`[0-9a-z]{6,}\.[0-9a-z]+|[0-9a-f-]{16,}|:\d+$`)

// leftovers returns the keys whose name contains base, grouped by kind.
func (b *bench) leftovers(ctx context.Context, base string) ([]keyGroup, error) {
	byKind := map[string]*keyGroup{}
	iter := b.meter.Scan(ctx, 0, "*"+base+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		kind := idPart.ReplaceAllString(strings.Replace(k, base, "<name>", 1), "<id>")
		g := byKind[kind]
		if g == nil {
			g = &keyGroup{kind: kind}
			byKind[kind] = g
		}
		pttl, err := b.meter.PTTL(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		size, err := b.meter.MemoryUsage(ctx, k).Result()
		if err != nil && err != redis.Nil {
			return nil, err
		}
		if pttl < 0 {
			g.noExpire++
		} else if pttl > g.maxPTTL {
			g.maxPTTL = pttl
		}
		g.bytes = (g.bytes*float64(g.count) + float64(size)) / float64(g.count+1)
		g.count++
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	var out []keyGroup
	for _, g := range byKind {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind < out[j].kind })
	return out, nil
}

// memoryRow is the redis-memory row of primitive p after ops operations.
func memoryRow(p memoryPrimitive, ops int, elapsed time.Duration, u usage, groups []keyGroup) Result {
	r := Result{Library: p.name, Scenario: scMemory, Op: p.op, Latency: "none",
		Ops: int64(ops), Seconds: round4(elapsed.Seconds()), Extra: map[string]float64{}}
	r.perOp(u, int64(ops))
	var perOpKeys, perKOps float64
	var notes []string
	for _, g := range groups {
		life := g.maxPTTL.Seconds()
		if g.count*2 >= ops && g.noExpire == 0 {
			k := float64(g.count) / float64(ops)
			perOpKeys += k
			perKOps += k * life * g.bytes * 1000
			notes = append(notes, fmt.Sprintf("%s: %.2f/op, %.0f B, lives %.1f s", g.kind, k, g.bytes, life))
			continue
		}
		lifetime := "no expiry"
		if g.noExpire == 0 {
			lifetime = fmt.Sprintf("lives %.0f s after the last operation", life)
		}
		notes = append(notes, fmt.Sprintf("%s: %d in all (per name or client, not per op), %.0f B, %s", g.kind, g.count, g.bytes, lifetime))
	}
	r.Extra["keys_per_op"] = round4(perOpKeys)
	r.Extra["bytes_held_per_1000_ops_per_s"] = round4(perKOps)
	r.Extra["keys_held_per_1000_ops_per_s"] = 0
	for _, g := range groups {
		if g.count*2 >= ops && g.noExpire == 0 {
			r.Extra["keys_held_per_1000_ops_per_s"] += round4(float64(g.count) / float64(ops) * g.maxPTTL.Seconds() * 1000)
		}
	}
	if len(notes) == 0 {
		notes = append(notes, "no key left behind")
	}
	r.Note = fmt.Sprintf("%.0f B held per 1,000 ops/s; ", perKOps) + strings.Join(notes, "; ")
	return r
}
