package semaphore

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

func expAvailable(t *testing.T, s *ExpirableSemaphore) int64 {
	t.Helper()
	n, err := s.AvailablePermits(context.Background())
	noErr(t, err)
	return n
}

func expAcquired(t *testing.T, s *ExpirableSemaphore) int64 {
	t.Helper()
	n, err := s.AcquiredPermits(context.Background())
	noErr(t, err)
	return n
}

// serverMillis returns the Redis server's clock in epoch milliseconds.
func serverMillis(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	v := srv.Do(t, "TIME").([]any)
	sec, err := strconv.ParseInt(v[0].(string), 10, 64)
	noErr(t, err)
	usec, err := strconv.ParseInt(v[1].(string), 10, 64)
	noErr(t, err)
	return sec*1000 + usec/1000
}

func TestExpirableAcquireRelease(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	ok, err := s.TrySetPermits(ctx, 3)
	noErr(t, err)
	equal(t, ok, true, "TrySetPermits")
	ok, err = s.TrySetPermits(ctx, 5)
	noErr(t, err)
	equal(t, ok, false, "second TrySetPermits")

	id, err := s.Acquire(ctx, time.Minute)
	noErr(t, err)
	if _, ok := decodeID(id); !ok || len(id) != 32 || hex.EncodeToString(mustHex(t, id)) != id {
		t.Fatalf("permit id %q is not 32 lowercase hex characters", id)
	}
	ids, err := s.AcquireN(ctx, 2, 0)
	noErr(t, err)
	equal(t, len(ids), 2, "ids of AcquireN(2)")
	equal(t, expAvailable(t, s), 0, "available")
	equal(t, expAcquired(t, s), 3, "acquired")
	n, err := s.Permits(ctx)
	noErr(t, err)
	equal(t, n, 3, "permits")

	_, ok, err = s.TryAcquire(ctx, 0, time.Minute)
	noErr(t, err)
	equal(t, ok, false, "TryAcquire with none available")

	noErr(t, s.Release(ctx, ids...))
	noErr(t, s.Release(ctx, id))
	equal(t, expAvailable(t, s), 3, "available after the releases")
	equal(t, expAcquired(t, s), 0, "acquired after the releases")
	if err := s.Release(ctx, id); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("second release of %s: got %v, want ErrNotHeld", id, err)
	}
	equal(t, expAvailable(t, s), 3, "available after a second release")

	got, ok, err := s.TryAcquireN(ctx, 3, time.Second, time.Minute)
	noErr(t, err)
	equal(t, ok, true, "TryAcquireN(3)")
	equal(t, len(got), 3, "ids of TryAcquireN(3)")
	seen := map[string]bool{}
	for _, id := range got {
		seen[id] = true
	}
	equal(t, len(seen), 3, "distinct ids")
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	noErr(t, err)
	return b
}

// The layout is Redisson's: the available count in the string name, the
// acquired permits in the zset {name}:timeout as 16 raw id bytes scored by
// their expiry in epoch ms (922337203685477: never), and releases published
// on redisson_sc:{name}.
func TestExpirableLayout(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := NewExpirable(newClient(t), name)
	zset := "{" + name + "}:timeout"

	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	noErr(t, err)

	noErr(t, s.SetPermits(ctx, 3))
	equal(t, srv.Do(t, "GET", name), any("3"), "GET name")
	msg, err := sub.ReceiveMessage(ctx)
	noErr(t, err)
	equal(t, msg.Payload, "3", "message of SetPermits")

	before := serverMillis(t, srv)
	id, err := s.Acquire(ctx, 10*time.Second)
	noErr(t, err)
	after := serverMillis(t, srv)
	forever, err := s.Acquire(ctx, 0)
	noErr(t, err)
	equal(t, srv.Do(t, "GET", name), any("1"), "GET name after two acquisitions")
	equal(t, srv.Do(t, "TYPE", zset), any("zset"), "TYPE {name}:timeout")

	score, err := strconv.ParseInt(srv.Do(t, "ZSCORE", zset, string(mustHex(t, id))).(string), 10, 64)
	noErr(t, err)
	if score < before+10000 || score > after+10000 {
		t.Fatalf("expiry score %d, want between %d and %d (server clock + lease)", score, before+10000, after+10000)
	}
	equal(t, srv.Do(t, "ZSCORE", zset, string(mustHex(t, forever))), any("922337203685477"), "score of a permit that never expires")
	members := srv.Do(t, "ZRANGE", zset, 0, -1).([]any)
	equal(t, len(members), 2, "zset members")
	for _, m := range members {
		equal(t, len(m.(string)), 16, "member length in bytes")
	}

	d, err := s.LeaseTime(ctx, id)
	noErr(t, err)
	if d <= 8*time.Second || d > 10*time.Second {
		t.Fatalf("LeaseTime %v, want about 10s", d)
	}
	d, err = s.LeaseTime(ctx, forever)
	noErr(t, err)
	equal(t, d, time.Duration(-1), "LeaseTime of a permit that never expires")

	noErr(t, s.Release(ctx, id))
	msg, err = sub.ReceiveMessage(ctx)
	noErr(t, err)
	equal(t, msg.Payload, "2", "message of Release")

	// A permit added by someone else (a Java service) is released by id.
	raw := "0123456789abcdef"
	srv.Do(t, "ZADD", zset, after+60000, raw)
	srv.Do(t, "DECRBY", name, 1)
	noErr(t, s.Release(ctx, hex.EncodeToString([]byte(raw))))
	equal(t, expAvailable(t, s), 2, "available after releasing a foreign permit")
}

// Redisson: 2 permits with 1 s leases; a third acquire succeeds about 1 s
// later without any release. The waiter's re-check interval is a minute: it
// wakes up for the nearest expiry.
func TestExpirableLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := NewExpirable(newClient(t, redisync.WithRecheckInterval(time.Minute)), name)
	noErr(t, s.SetPermits(ctx, 2))
	start := time.Now()
	_, err := s.AcquireN(ctx, 2, time.Second)
	noErr(t, err)

	third := NewExpirable(newClient(t, redisync.WithRecheckInterval(time.Minute)), name)
	id, err := third.Acquire(ctx, time.Minute)
	noErr(t, err)
	d := time.Since(start)
	t.Logf("third permit acquired after %v", d)
	if d < 900*time.Millisecond || d > 3*time.Second {
		t.Fatalf("third permit acquired after %v, want about 1s", d)
	}
	equal(t, expAcquired(t, s), 1, "acquired")
	equal(t, expAvailable(t, s), 1, "available")
	noErr(t, third.Release(ctx, id))
}

// Redisson: releasing an expired permit fails, and changes nothing.
func TestExpirableReleaseExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.SetPermits(ctx, 2))
	id, err := s.Acquire(ctx, 200*time.Millisecond)
	noErr(t, err)
	time.Sleep(400 * time.Millisecond)
	if err := s.Release(ctx, id); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("release of an expired permit: got %v, want ErrNotHeld", err)
	}
	equal(t, expAvailable(t, s), 2, "available after releasing an expired permit")
	if _, err := s.LeaseTime(ctx, id); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("LeaseTime of an expired permit: got %v, want ErrNotHeld", err)
	}
	ok, err := s.UpdateLease(ctx, id, time.Minute)
	noErr(t, err)
	equal(t, ok, false, "UpdateLease of an expired permit")
	equal(t, expAcquired(t, s), 0, "acquired")
}

// Redisson: UpdateLease extends a permit's lease.
func TestExpirableUpdateLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.SetPermits(ctx, 1))
	id, err := s.Acquire(ctx, time.Second)
	noErr(t, err)
	ok, err := s.UpdateLease(ctx, id, 5*time.Second)
	noErr(t, err)
	equal(t, ok, true, "UpdateLease")
	time.Sleep(1200 * time.Millisecond) // past the first lease
	d, err := s.LeaseTime(ctx, id)
	noErr(t, err)
	if d < 2*time.Second || d > 4*time.Second {
		t.Fatalf("LeaseTime 1.2s after UpdateLease(5s): %v", d)
	}
	ok, err = s.UpdateLease(ctx, id, 0)
	noErr(t, err)
	equal(t, ok, true, "UpdateLease to never")
	d, err = s.LeaseTime(ctx, id)
	noErr(t, err)
	equal(t, d, time.Duration(-1), "LeaseTime after UpdateLease(0)")
	noErr(t, s.Release(ctx, id))

	unknown := hex.EncodeToString(make([]byte, 16))
	ok, err = s.UpdateLease(ctx, unknown, time.Minute)
	noErr(t, err)
	equal(t, ok, false, "UpdateLease of an unknown permit")
	if _, err := s.LeaseTime(ctx, unknown); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("LeaseTime of an unknown permit: got %v, want ErrNotHeld", err)
	}
}

// A batch release is all or nothing.
func TestExpirableReleaseAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.SetPermits(ctx, 3))
	ids, err := s.AcquireN(ctx, 2, time.Minute)
	noErr(t, err)
	unknown := "00112233445566778899aabbccddeeff"
	err = s.Release(ctx, ids[0], unknown, ids[1])
	if !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("release with an unknown id: got %v, want ErrNotHeld", err)
	}
	equal(t, expAvailable(t, s), 1, "available after the failed release")
	equal(t, expAcquired(t, s), 2, "acquired after the failed release")
	for _, id := range ids {
		_, err := s.LeaseTime(ctx, id)
		noErr(t, err)
	}
	noErr(t, s.Release(ctx, ids...))
	equal(t, expAvailable(t, s), 3, "available after the release")
}

// SetPermits sets the total: available + acquired.
func TestExpirableSetPermits(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.SetPermits(ctx, 5))
	ids, err := s.AcquireN(ctx, 2, time.Minute)
	noErr(t, err)
	noErr(t, s.SetPermits(ctx, 3))
	equal(t, expAvailable(t, s), 1, "available after SetPermits(3) with 2 acquired")
	n, err := s.Permits(ctx)
	noErr(t, err)
	equal(t, n, 3, "permits")
	noErr(t, s.SetPermits(ctx, 1))
	equal(t, expAvailable(t, s), -1, "available after SetPermits(1) with 2 acquired")
	noErr(t, s.Release(ctx, ids[0]))
	equal(t, expAvailable(t, s), 0, "available after a release")
	noErr(t, s.AddPermits(ctx, 2))
	equal(t, expAvailable(t, s), 2, "available after AddPermits(2)")
	noErr(t, s.AddPermits(ctx, -3))
	equal(t, expAvailable(t, s), -1, "available after AddPermits(-3)")
	ok, err := s.TrySetPermits(ctx, 10)
	noErr(t, err)
	equal(t, ok, false, "TrySetPermits of a set semaphore")
}

// Every operation gives expired permits back first and publishes when that
// makes permits available.
func TestExpirableReclaimedByEveryOperation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := NewExpirable(newClient(t), name)
	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	noErr(t, err)

	unknown := "00112233445566778899aabbccddeeff"
	ops := map[string]func() error{
		"AvailablePermits": func() error { _, err := s.AvailablePermits(ctx); return err },
		"AcquiredPermits":  func() error { _, err := s.AcquiredPermits(ctx); return err },
		"Permits":          func() error { _, err := s.Permits(ctx); return err },
		"LeaseTime":        func() error { _, _ = s.LeaseTime(ctx, unknown); return nil },
		"UpdateLease":      func() error { _, err := s.UpdateLease(ctx, unknown, time.Minute); return err },
		"Release":          func() error { _ = s.Release(ctx, unknown); return nil },
		"AddPermits(0)":    func() error { return s.AddPermits(ctx, 0) },
		"TrySetPermits":    func() error { _, err := s.TrySetPermits(ctx, 9); return err },
		"SetPermits":       func() error { return s.SetPermits(ctx, 1) },
		"TryAcquireN(2)":   func() error { _, _, err := s.TryAcquireN(ctx, 2, 0, time.Minute); return err },
	}
	for what, op := range ops {
		noErr(t, s.SetPermits(ctx, 1))
		_, err := sub.ReceiveMessage(ctx) // SetPermits' message
		noErr(t, err)
		_, err = s.Acquire(ctx, 50*time.Millisecond)
		noErr(t, err)
		time.Sleep(100 * time.Millisecond)
		equal(t, srv.Do(t, "GET", name), any("0"), what+": count before")
		noErr(t, op())
		equal(t, srv.Do(t, "ZCARD", "{"+name+"}:timeout"), any(int64(0)), what+": permits left in the zset")
		equal(t, srv.Do(t, "GET", name), any("1"), what+": count after")
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msg, err := sub.ReceiveMessage(mctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: no message after reclaiming: %v", what, err)
		}
		equal(t, msg.Payload, "1", what+": message")
	}
}

// A request re-sent by go-redis after a lost reply is applied once.
func TestExpirableRetrySafety(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t)
	s := NewExpirable(c, redistest.Key(t, "sem"))
	_, err := s.TrySetPermits(ctx, 5)
	noErr(t, err)
	id, err := s.Acquire(ctx, time.Minute)
	noErr(t, err)
	noErr(t, s.Release(ctx, id))
	noErr(t, s.AddPermits(ctx, 0))

	drop := func(what string, op func() error) {
		t.Helper()
		noErr(t, rdb.Ping(ctx).Err())
		before := p.Dropped()
		p.DropNextReply()
		noErr(t, op())
		equal(t, p.Dropped(), before+1, "replies dropped during "+what)
	}
	var ids []string
	drop("AcquireN(2)", func() (err error) { ids, err = s.AcquireN(ctx, 2, time.Minute); return err })
	equal(t, expAvailable(t, s), 3, "available after AcquireN(2) with a lost reply")
	equal(t, expAcquired(t, s), 2, "acquired after AcquireN(2) with a lost reply")
	drop("Release", func() error { return s.Release(ctx, ids...) })
	equal(t, expAvailable(t, s), 5, "available after Release with a lost reply")
	equal(t, expAcquired(t, s), 0, "acquired after Release with a lost reply")
	drop("AddPermits(2)", func() error { return s.AddPermits(ctx, 2) })
	equal(t, expAvailable(t, s), 7, "available after AddPermits(2) with a lost reply")
	drop("SetPermits(4)", func() error { return s.SetPermits(ctx, 4) })
	equal(t, expAvailable(t, s), 4, "available after SetPermits(4) with a lost reply")
}

// An acquisition whose reply was lost is undone: its permits released if it
// took place (expired ones already came back), cancelled if it had not.
func TestExpirableUndo(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(newClient(t), redistest.Key(t, "sem"))
	noErr(t, s.SetPermits(ctx, 3))
	raw := []any{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"}
	run := func(reqKey string) int64 {
		t.Helper()
		res, err := lua.SemaphorePermitAcquire.Run(ctx, s.h.C.Redis(), s.keys(reqKey),
			append([]any{60000, s.h.C.RequestDeadline(ctx), "publish"}, raw...)...).Int64Slice()
		noErr(t, err)
		return res[0]
	}
	took := s.requestKey()
	equal(t, run(took), 1, "acquisition")
	equal(t, expAcquired(t, s), 2, "acquired")
	s.undo(ctx, took, raw)
	equal(t, expAcquired(t, s), 0, "acquired after the undo")
	equal(t, expAvailable(t, s), 3, "available after the undo")
	equal(t, run(took), -1, "late copy of the undone acquisition")
	equal(t, expAvailable(t, s), 3, "available after the late copy")

	never := s.requestKey()
	s.undo(ctx, never, raw)
	equal(t, run(never), -1, "late acquisition after its undo")
	equal(t, expAvailable(t, s), 3, "available after the late acquisition")
}

// A cancelled acquisition holds nothing: no permit, no subscription, no
// place in line.
func TestExpirableCancelledAcquire(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := NewExpirable(newClient(t), name)
	noErr(t, s.SetPermits(ctx, 1))
	cctx, cancel := context.WithCancel(ctx)
	var ids []string
	done := async(func() (err error) { ids, err = s.AcquireN(cctx, 2, time.Minute); return err })
	eventually(t, 5*time.Second, "the waiter subscribes", func() bool { return waiters(s.h.C) == 1 })
	cancel()
	r := await(t, done, 5*time.Second, "cancelled AcquireN")
	if !errors.Is(r.err, context.Canceled) || ids != nil {
		t.Fatalf("cancelled AcquireN: got %v, %v", ids, r.err)
	}
	equal(t, expAvailable(t, s), 1, "available")
	equal(t, expAcquired(t, s), 0, "acquired")
	equal(t, channels(s.h.C), 0, "channels subscribed")
	equal(t, lineLen(s.h.C, name), 0, "callers in line")

	_, ok, err := s.TryAcquireN(ctx, 2, 200*time.Millisecond, time.Minute)
	noErr(t, err)
	equal(t, ok, false, "TryAcquireN(2) with 1 available")
	equal(t, channels(s.h.C), 0, "channels subscribed after TryAcquireN")
}

// Expired permits reach waiters on other clients; 6 clients × 10 sections
// with 2 permits never exceed 2 holders.
func TestExpirableConcurrencyCap(t *testing.T) {
	const clients, sections, permits = 6, 10, 2
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	noErr(t, NewExpirable(newClient(t), name).SetPermits(ctx, permits))

	sems := make([]*ExpirableSemaphore, clients)
	for c := range sems {
		sems[c] = NewExpirable(newClient(t), name)
	}
	most := mostHolders(t, clients, sections, func(c int) (func() error, error) {
		id, err := sems[c].Acquire(ctx, 10*time.Second)
		if err != nil {
			return nil, err
		}
		return func() error { return sems[c].Release(ctx, id) }, nil
	})
	equal(t, most, permits, "most holders at once")
	s := NewExpirable(newClient(t), name)
	equal(t, expAvailable(t, s), permits, "available after all sections")
	equal(t, expAcquired(t, s), 0, "acquired after all sections")
}

// Bad input is reported before anything is sent.
func TestExpirableBadInputSendsNothing(t *testing.T) {
	ctx := context.Background()
	c, cc := countedClient(t)
	s := NewExpirable(c, redistest.Key(t, "sem"))
	empty := NewExpirable(c, "")
	good := "00112233445566778899aabbccddeeff"

	invalid := map[string]error{
		"Release()":               s.Release(ctx),
		"Release(short)":          s.Release(ctx, "0011"),
		"Release(non-hex)":        s.Release(ctx, "zz112233445566778899aabbccddeeff"),
		"Release(33 chars)":       s.Release(ctx, good+"0"),
		"Release(duplicate)":      s.Release(ctx, good, good),
		"Release(good, bad)":      s.Release(ctx, good, "bad"),
		"Release(too many)":       s.Release(ctx, make([]string, maxIDs+1)...),
		"SetPermits(-1)":          s.SetPermits(ctx, -1),
		"AddPermits(2^53+1)":      s.AddPermits(ctx, maxPermits+1),
		"empty name SetPermits":   empty.SetPermits(ctx, 1),
		"empty name Release":      empty.Release(ctx, good),
		"nil client Release":      NewExpirable(nil, "x").Release(ctx, good),
		"empty name AddPermits":   empty.AddPermits(ctx, 1),
		"UpdateLease(bad id)":     func() error { _, err := s.UpdateLease(ctx, "x", time.Second); return err }(),
		"LeaseTime(bad id)":       func() error { _, err := s.LeaseTime(ctx, "x"); return err }(),
		"AcquireN(0)":             func() error { _, err := s.AcquireN(ctx, 0, time.Second); return err }(),
		"AcquireN(-1)":            func() error { _, err := s.AcquireN(ctx, -1, time.Second); return err }(),
		"AcquireN(65537)":         func() error { _, err := s.AcquireN(ctx, maxIDs+1, time.Second); return err }(),
		"TryAcquire(-1s)":         func() error { _, _, err := s.TryAcquire(ctx, -time.Second, 0); return err }(),
		"TryAcquireN(0)":          func() error { _, _, err := s.TryAcquireN(ctx, 0, time.Second, 0); return err }(),
		"TryAcquireN(2, -1ns)":    func() error { _, _, err := s.TryAcquireN(ctx, 2, -1, 0); return err }(),
		"TrySetPermits(-1)":       func() error { _, err := s.TrySetPermits(ctx, -1); return err }(),
		"empty name Acquire":      func() error { _, err := empty.Acquire(ctx, 0); return err }(),
		"empty name Permits":      func() error { _, err := empty.Permits(ctx); return err }(),
		"empty name Delete":       func() error { _, err := empty.Delete(ctx); return err }(),
		"empty name LeaseTime":    func() error { _, err := empty.LeaseTime(ctx, good); return err }(),
		"empty name UpdateLease":  func() error { _, err := empty.UpdateLease(ctx, good, 0); return err }(),
		"empty name AcquiredPerm": func() error { _, err := empty.AcquiredPermits(ctx); return err }(),
	}
	allInvalidNothingSent(t, invalid, cc)

	// Unknown ids of the right form are sent, and change nothing.
	noErr(t, s.SetPermits(ctx, 2))
	if err := s.Release(ctx, good); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("release of an unknown id: got %v, want ErrNotHeld", err)
	}
	equal(t, expAvailable(t, s), 2, "available after releasing an unknown id")
	// Upper-case hex names the same permit.
	id, err := s.Acquire(ctx, time.Minute)
	noErr(t, err)
	noErr(t, s.Release(ctx, upper(id)))
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestExpirableDelete(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := NewExpirable(newClient(t), name)
	ok, err := s.Delete(ctx)
	noErr(t, err)
	equal(t, ok, false, "Delete of an unset semaphore")
	noErr(t, s.SetPermits(ctx, 2))
	id, err := s.Acquire(ctx, time.Minute)
	noErr(t, err)
	ok, err = s.Delete(ctx)
	noErr(t, err)
	equal(t, ok, true, "Delete")
	equal(t, srv.Do(t, "EXISTS", name, "{"+name+"}:timeout"), any(int64(0)), "keys after Delete")
	if err := s.Release(ctx, id); !errors.Is(err, redisync.ErrNotHeld) {
		t.Fatalf("release after Delete: got %v, want ErrNotHeld", err)
	}
}

func TestLeaseMillis(t *testing.T) {
	for _, tc := range []struct {
		lease time.Duration
		want  int64
	}{
		{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {time.Second, 1000}, {1<<63 - 1, 9223372036855},
	} {
		equal(t, leaseMillis(tc.lease), tc.want, tc.lease.String())
	}
}
