package semaphore

import (
	"context"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/lua"
)

func expAvailable(t *testing.T, s *ExpirableSemaphore) int64 {
	t.Helper()
	n, err := s.AvailablePermits(context.Background())
	require.NoError(t, err)
	return n
}

func expAcquired(t *testing.T, s *ExpirableSemaphore) int64 {
	t.Helper()
	n, err := s.AcquiredPermits(context.Background())
	require.NoError(t, err)
	return n
}

// serverMillis returns the Redis server's clock in epoch milliseconds.
func serverMillis(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	v := srv.Do(t, "TIME").([]any)
	sec, err := strconv.ParseInt(v[0].(string), 10, 64)
	require.NoError(t, err)
	usec, err := strconv.ParseInt(v[1].(string), 10, 64)
	require.NoError(t, err)
	return sec*1000 + usec/1000
}

func TestExpirableAcquireRelease(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	ok, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok, "TrySetPermits")
	ok, err = s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.False(t, ok, "second TrySetPermits")

	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	_, ok = decodeID(id)
	require.True(t, ok && len(id) == 32 && hex.EncodeToString(mustHex(t, id)) == id, "permit id %q is not 32 lowercase hex characters", id)
	ids, err := s.AcquireN(ctx, 2, 0)
	require.NoError(t, err)
	require.Len(t, ids, 2, "ids of AcquireN(2)")
	require.EqualValues(t, 0, expAvailable(t, s), "available")
	require.EqualValues(t, 3, expAcquired(t, s), "acquired")
	n, err := s.Permits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "permits")

	_, ok, err = s.TryAcquire(ctx, 0, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquire with none available")

	require.NoError(t, s.Release(ctx, ids...))
	require.NoError(t, s.Release(ctx, id))
	require.EqualValues(t, 3, expAvailable(t, s), "available after the releases")
	require.EqualValues(t, 0, expAcquired(t, s), "acquired after the releases")
	require.ErrorIs(t, s.Release(ctx, id), redisync.ErrNotHeld, "second release of %s", id)
	require.EqualValues(t, 3, expAvailable(t, s), "available after a second release")

	got, ok, err := s.TryAcquireN(ctx, 3, time.Second, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "TryAcquireN(3)")
	require.Len(t, got, 3, "ids of TryAcquireN(3)")
	seen := map[string]bool{}
	for _, id := range got {
		seen[id] = true
	}
	require.Len(t, seen, 3, "distinct ids")
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
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
	s := NewExpirable(clienttest.Shared(t), name)
	zset := "{" + name + "}:timeout"

	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	require.NoError(t, s.SetPermits(ctx, 3))
	require.Equal(t, any("3"), srv.Do(t, "GET", name), "GET name")
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "3", msg.Payload, "message of SetPermits")

	before := serverMillis(t, srv)
	id, err := s.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	after := serverMillis(t, srv)
	forever, err := s.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, any("1"), srv.Do(t, "GET", name), "GET name after two acquisitions")
	require.Equal(t, any("zset"), srv.Do(t, "TYPE", zset), "TYPE {name}:timeout")

	score, err := strconv.ParseInt(srv.Do(t, "ZSCORE", zset, string(mustHex(t, id))).(string), 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, score, before+10000, "expiry score (server clock + lease)")
	require.LessOrEqual(t, score, after+10000, "expiry score (server clock + lease)")
	require.Equal(t, any("922337203685477"), srv.Do(t, "ZSCORE", zset, string(mustHex(t, forever))), "score of a permit that never expires")
	members := srv.Do(t, "ZRANGE", zset, 0, -1).([]any)
	require.Len(t, members, 2, "zset members")
	for _, m := range members {
		require.Len(t, m.(string), 16, "member length in bytes")
	}

	d, err := s.LeaseTime(ctx, id)
	require.NoError(t, err)
	require.Greater(t, d, 8*time.Second, "LeaseTime, want about 10s")
	require.LessOrEqual(t, d, 10*time.Second, "LeaseTime, want about 10s")
	d, err = s.LeaseTime(ctx, forever)
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), d, "LeaseTime of a permit that never expires")

	require.NoError(t, s.Release(ctx, id))
	msg, err = sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "2", msg.Payload, "message of Release")

	// A permit added by someone else (a Java service) is released by id.
	raw := "0123456789abcdef"
	srv.Do(t, "ZADD", zset, after+60000, raw)
	srv.Do(t, "DECRBY", name, 1)
	require.NoError(t, s.Release(ctx, hex.EncodeToString([]byte(raw))))
	require.EqualValues(t, 2, expAvailable(t, s), "available after releasing a foreign permit")
}

// Redisson: 2 permits with 1 s leases; a third acquire succeeds about 1 s
// later without any release. The waiter's re-check interval is a minute: it
// wakes up for the nearest expiry.
func TestExpirableLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := NewExpirable(clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute)), name)
	require.NoError(t, s.SetPermits(ctx, 2))
	start := time.Now()
	_, err := s.AcquireN(ctx, 2, time.Second)
	require.NoError(t, err)

	third := NewExpirable(clienttest.Shared(t, redisync.WithRecheckInterval(time.Minute)), name)
	id, err := third.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	d := time.Since(start)
	t.Logf("third permit acquired after %v", d)
	require.GreaterOrEqual(t, d, 900*time.Millisecond, "third permit acquired too early, want about 1s")
	require.LessOrEqual(t, d, 3*time.Second, "third permit acquired too late, want about 1s")
	require.EqualValues(t, 1, expAcquired(t, s), "acquired")
	require.EqualValues(t, 1, expAvailable(t, s), "available")
	require.NoError(t, third.Release(ctx, id))
}

// Redisson: releasing an expired permit fails, and changes nothing.
func TestExpirableReleaseExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.SetPermits(ctx, 2))
	id, err := s.Acquire(ctx, 200*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond) // not a synchronisation: the 200ms lease runs out
	require.ErrorIs(t, s.Release(ctx, id), redisync.ErrNotHeld, "release of an expired permit")
	require.EqualValues(t, 2, expAvailable(t, s), "available after releasing an expired permit")
	_, err = s.LeaseTime(ctx, id)
	require.ErrorIs(t, err, redisync.ErrNotHeld, "LeaseTime of an expired permit")
	ok, err := s.UpdateLease(ctx, id, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "UpdateLease of an expired permit")
	require.EqualValues(t, 0, expAcquired(t, s), "acquired")
}

// Redisson: UpdateLease extends a permit's lease.
func TestExpirableUpdateLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.SetPermits(ctx, 1))
	id, err := s.Acquire(ctx, time.Second)
	require.NoError(t, err)
	ok, err := s.UpdateLease(ctx, id, 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "UpdateLease")
	time.Sleep(1200 * time.Millisecond) // not a synchronisation: past the first lease
	d, err := s.LeaseTime(ctx, id)
	require.NoError(t, err)
	require.GreaterOrEqual(t, d, 2*time.Second, "LeaseTime 1.2s after UpdateLease(5s)")
	require.LessOrEqual(t, d, 4*time.Second, "LeaseTime 1.2s after UpdateLease(5s)")
	ok, err = s.UpdateLease(ctx, id, 0)
	require.NoError(t, err)
	require.True(t, ok, "UpdateLease to never")
	d, err = s.LeaseTime(ctx, id)
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), d, "LeaseTime after UpdateLease(0)")
	require.NoError(t, s.Release(ctx, id))

	unknown := hex.EncodeToString(make([]byte, 16))
	ok, err = s.UpdateLease(ctx, unknown, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "UpdateLease of an unknown permit")
	_, err = s.LeaseTime(ctx, unknown)
	require.ErrorIs(t, err, redisync.ErrNotHeld, "LeaseTime of an unknown permit")
}

// A batch release is all or nothing.
func TestExpirableReleaseAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.SetPermits(ctx, 3))
	ids, err := s.AcquireN(ctx, 2, time.Minute)
	require.NoError(t, err)
	unknown := "00112233445566778899aabbccddeeff"
	err = s.Release(ctx, ids[0], unknown, ids[1])
	require.ErrorIs(t, err, redisync.ErrNotHeld, "release with an unknown id")
	require.EqualValues(t, 1, expAvailable(t, s), "available after the failed release")
	require.EqualValues(t, 2, expAcquired(t, s), "acquired after the failed release")
	for _, id := range ids {
		_, err := s.LeaseTime(ctx, id)
		require.NoError(t, err)
	}
	require.NoError(t, s.Release(ctx, ids...))
	require.EqualValues(t, 3, expAvailable(t, s), "available after the release")
}

// SetPermits sets the total: available + acquired.
func TestExpirableSetPermits(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.SetPermits(ctx, 5))
	ids, err := s.AcquireN(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.SetPermits(ctx, 3))
	require.EqualValues(t, 1, expAvailable(t, s), "available after SetPermits(3) with 2 acquired")
	n, err := s.Permits(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "permits")
	require.NoError(t, s.SetPermits(ctx, 1))
	require.EqualValues(t, -1, expAvailable(t, s), "available after SetPermits(1) with 2 acquired")
	require.NoError(t, s.Release(ctx, ids[0]))
	require.EqualValues(t, 0, expAvailable(t, s), "available after a release")
	require.NoError(t, s.AddPermits(ctx, 2))
	require.EqualValues(t, 2, expAvailable(t, s), "available after AddPermits(2)")
	require.NoError(t, s.AddPermits(ctx, -3))
	require.EqualValues(t, -1, expAvailable(t, s), "available after AddPermits(-3)")
	ok, err := s.TrySetPermits(ctx, 10)
	require.NoError(t, err)
	require.False(t, ok, "TrySetPermits of a set semaphore")
}

// Every operation gives expired permits back first and publishes when that
// makes permits available.
func TestExpirableReclaimedByEveryOperation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	name := redistest.Key(t, "sem")
	s := NewExpirable(clienttest.Shared(t), name)
	sub := srv.Client(t).Subscribe(ctx, "redisson_sc:{"+name+"}")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

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
		require.NoError(t, s.SetPermits(ctx, 1))
		_, err := sub.ReceiveMessage(ctx) // SetPermits' message
		require.NoError(t, err)
		_, err = s.Acquire(ctx, 50*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond) // not a synchronisation: the 50ms lease runs out
		require.Equal(t, any("0"), srv.Do(t, "GET", name), what+": count before")
		require.NoError(t, op())
		require.Equal(t, any(int64(0)), srv.Do(t, "ZCARD", "{"+name+"}:timeout"), what+": permits left in the zset")
		require.Equal(t, any("1"), srv.Do(t, "GET", name), what+": count after")
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msg, err := sub.ReceiveMessage(mctx)
		cancel()
		require.NoError(t, err, "%s: no message after reclaiming", what)
		require.Equal(t, "1", msg.Payload, what+": message")
	}
}

// A request re-sent by go-redis after a lost reply is applied once.
func TestExpirableRetrySafety(t *testing.T) {
	ctx := context.Background()
	c, rdb, p := proxied(t)
	s := NewExpirable(c, redistest.Key(t, "sem"))
	_, err := s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, id))
	require.NoError(t, s.AddPermits(ctx, 0))

	drop := func(what string, op func() error) {
		t.Helper()
		require.NoError(t, rdb.Ping(ctx).Err())
		before := p.Dropped()
		p.DropNextReply()
		require.NoError(t, op())
		require.Equal(t, before+1, p.Dropped(), "replies dropped during "+what)
	}
	var ids []string
	drop("AcquireN(2)", func() (err error) { ids, err = s.AcquireN(ctx, 2, time.Minute); return err })
	require.EqualValues(t, 3, expAvailable(t, s), "available after AcquireN(2) with a lost reply")
	require.EqualValues(t, 2, expAcquired(t, s), "acquired after AcquireN(2) with a lost reply")
	drop("Release", func() error { return s.Release(ctx, ids...) })
	require.EqualValues(t, 5, expAvailable(t, s), "available after Release with a lost reply")
	require.EqualValues(t, 0, expAcquired(t, s), "acquired after Release with a lost reply")
	drop("AddPermits(2)", func() error { return s.AddPermits(ctx, 2) })
	require.EqualValues(t, 7, expAvailable(t, s), "available after AddPermits(2) with a lost reply")
	drop("SetPermits(4)", func() error { return s.SetPermits(ctx, 4) })
	require.EqualValues(t, 4, expAvailable(t, s), "available after SetPermits(4) with a lost reply")
}

// An acquisition whose reply was lost is undone: its permits released if it
// took place (expired ones already came back), cancelled if it had not.
func TestExpirableUndo(t *testing.T) {
	ctx := context.Background()
	s := NewExpirable(clienttest.Shared(t), redistest.Key(t, "sem"))
	require.NoError(t, s.SetPermits(ctx, 3))
	raw := []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"}
	run := func(reqKey string) int64 {
		t.Helper()
		rep, err := lua.SemaphorePermitAcquireArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
			Request: reqKey, LeaseMillis: 60000, Deadline: s.h.C.Requests().Deadline(ctx), Publish: "publish",
			Permits: raw}.Run(ctx, s.h.C.Direct())
		require.NoError(t, err)
		return rep.Code
	}
	took := s.requestKey()
	require.EqualValues(t, 1, run(took), "acquisition")
	require.EqualValues(t, 2, expAcquired(t, s), "acquired")
	s.undo(ctx, took, raw, time.Minute)
	require.EqualValues(t, 0, expAcquired(t, s), "acquired after the undo")
	require.EqualValues(t, 3, expAvailable(t, s), "available after the undo")
	require.EqualValues(t, -1, run(took), "late copy of the undone acquisition")
	require.EqualValues(t, 3, expAvailable(t, s), "available after the late copy")

	never := s.requestKey()
	s.undo(ctx, never, raw, 0)
	require.EqualValues(t, -1, run(never), "late acquisition after its undo")
	require.EqualValues(t, 3, expAvailable(t, s), "available after the late acquisition")

	// An undo that reaches Redis after the acquisition's record expired
	// still finds its permits by their ids (a permit that never expires
	// would otherwise stay taken for good).
	late := s.requestKey()
	require.EqualValues(t, 1, run(late), "acquisition")
	require.NoError(t, s.h.C.Redis().Del(ctx, late).Err(), "the record expires")
	s.undo(ctx, late, raw, 0)
	require.EqualValues(t, 0, expAcquired(t, s), "acquired after the undo of an acquisition whose record expired")
	require.EqualValues(t, 3, expAvailable(t, s), "available after that undo")
}

// A cancelled acquisition holds nothing: no permit, no subscription, no
// place in line.
func TestExpirableCancelledAcquire(t *testing.T) {
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	s := NewExpirable(clienttest.Shared(t), name)
	require.NoError(t, s.SetPermits(ctx, 1))
	cctx, cancel := context.WithCancel(ctx)
	var ids []string
	done := async(func() (err error) { ids, err = s.AcquireN(cctx, 2, time.Minute); return err })
	require.Eventually(t, func() bool { return waiters(s.h.C) == 1 }, 5*time.Second, redistest.Tick, "the waiter subscribes")
	cancel()
	r := await(t, done, 5*time.Second, "cancelled AcquireN")
	require.ErrorIs(t, r.err, context.Canceled, "cancelled AcquireN")
	require.Nil(t, ids, "cancelled AcquireN")
	require.EqualValues(t, 1, expAvailable(t, s), "available")
	require.EqualValues(t, 0, expAcquired(t, s), "acquired")
	require.EqualValues(t, 0, channels(s.h.C), "channels subscribed")
	require.EqualValues(t, 0, lineLen(s.h.C, name), "callers in line")

	_, ok, err := s.TryAcquireN(ctx, 2, 200*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "TryAcquireN(2) with 1 available")
	require.EqualValues(t, 0, channels(s.h.C), "channels subscribed after TryAcquireN")
}

// Expired permits reach waiters on other clients; 6 clients × 10 sections
// with 2 permits never exceed 2 holders.
func TestExpirableConcurrencyCap(t *testing.T) {
	const clients, sections, permits = 6, 10, 2
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	require.NoError(t, NewExpirable(clienttest.Shared(t), name).SetPermits(ctx, permits))

	sems := make([]*ExpirableSemaphore, clients)
	for c := range sems {
		sems[c] = NewExpirable(clienttest.Shared(t), name)
	}
	most := mostHolders(t, clients, sections, func(c int) (func() error, error) {
		id, err := sems[c].Acquire(ctx, 10*time.Second)
		if err != nil {
			return nil, err
		}
		return func() error { return sems[c].Release(ctx, id) }, nil
	})
	require.EqualValues(t, permits, most, "most holders at once")
	s := NewExpirable(clienttest.Shared(t), name)
	require.EqualValues(t, permits, expAvailable(t, s), "available after all sections")
	require.EqualValues(t, 0, expAcquired(t, s), "acquired after all sections")
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
	require.NoError(t, s.SetPermits(ctx, 2))
	require.ErrorIs(t, s.Release(ctx, good), redisync.ErrNotHeld, "release of an unknown id")
	require.EqualValues(t, 2, expAvailable(t, s), "available after releasing an unknown id")
	// Upper-case hex names the same permit.
	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, upper(id)))
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
	s := NewExpirable(clienttest.Shared(t), name)
	ok, err := s.Delete(ctx)
	require.NoError(t, err)
	require.False(t, ok, "Delete of an unset semaphore")
	require.NoError(t, s.SetPermits(ctx, 2))
	id, err := s.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	ok, err = s.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok, "Delete")
	require.Equal(t, any(int64(0)), srv.Do(t, "EXISTS", name, "{"+name+"}:timeout"), "keys after Delete")
	require.ErrorIs(t, s.Release(ctx, id), redisync.ErrNotHeld, "release after Delete")
}

func TestLeaseMillis(t *testing.T) {
	for _, tc := range []struct {
		lease time.Duration
		want  int64
	}{
		{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {time.Second, 1000}, {1<<63 - 1, 9223372036855},
	} {
		require.Equal(t, tc.want, leaseMillis(tc.lease), tc.lease.String())
	}
}
