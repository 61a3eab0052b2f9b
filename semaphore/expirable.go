package semaphore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// ExpirableSemaphore is a distributed semaphore whose permits expire,
// compatible with Redisson's RPermitExpirableSemaphore. Every acquired
// permit has an id (32 lowercase hex characters) and a lease: Release takes
// the ids back, and a permit not released within its lease returns to the
// semaphore by itself, so a process that dies while holding permits does not
// leak them. That makes it the semaphore to use for concurrency caps across
// processes. It caps how many permits are held at once, not how many are
// acquired per second: it is not a rate limiter.
//
// Expiry is decided by the Redis server's clock, so processes on hosts whose
// clocks differ agree on it. Expired permits are given back by whichever
// operation on the semaphore runs next, and waiters are then woken; a
// waiter with nothing else to wake it re-checks when the nearest permit
// expires.
//
// An ExpirableSemaphore is a handle: creating one does no I/O, and it is
// safe for concurrent use.
type ExpirableSemaphore struct {
	base
	// timeouts is the zset of acquired permits, which every permit script
	// takes after the count; channel is the semaphore's channel.
	timeouts, channel string
}

// NewExpirable returns a handle on the permit-expirable semaphore called
// name, whose Redis keys are name (the available count) and {name}:timeout
// (the acquired permits). It does no I/O and never fails: an empty name is
// reported, wrapping redisync.ErrInvalidArgument, by the first operation. A
// semaphore that was never set has no permits.
func NewExpirable(c *redisync.Client, name string) *ExpirableSemaphore {
	h := core.NewHandle((*core.Client)(c), "expirable semaphore", name)
	return &ExpirableSemaphore{base: base{h: h, q: newQueue(h.Name)},
		timeouts: keys.SemaphoreTimeouts(h.Name), channel: keys.SemaphoreChannel(h.Name)}
}

// Name returns the semaphore's name, which is also the Redis key of its
// available count (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (s *ExpirableSemaphore) Name() string { return s.h.Given }

// TrySetPermits sets the number of available permits to n (≥ 0) if the
// semaphore has not been set yet, and wakes waiters. It reports whether it
// set them; false means the semaphore already existed, and nothing changed.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	return s.trySet(ctx, n, true)
}

// SetPermits sets the total number of permits, available plus acquired, to
// n (≥ 0): the available count becomes n minus the permits currently
// acquired, which is negative when more than n are acquired (releases then
// bring it back). It wakes waiters when permits are available.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) SetPermits(ctx context.Context, n int64) error {
	if err := s.h.Check(ctx); err != nil {
		return err
	}
	if n < 0 || n > maxPermits {
		return s.h.Invalid("%d permits, must be between 0 and 2^53", n)
	}
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return s.fail("set permits", err)
	}
	set := lua.SemaphorePermitSetArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		N: n, Publish: pub, Deadline: s.h.C.Requests().Deadline(ctx)}
	if err := acked(s.h.C, func(run lua.Runner) error {
		_, err := set.Run(ctx, run)
		return err
	}); err != nil {
		return s.fail("set permits", err)
	}
	return nil
}

// AddPermits adds n permits to the available count, creating the semaphore
// when it was not set, and wakes waiters when permits are available. A
// negative n removes permits; the count may become negative. A call re-sent
// by go-redis after a lost reply is applied once.
//
// After a network error it may or may not have taken effect, and calling
// again may apply it twice. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) AddPermits(ctx context.Context, n int64) error {
	return s.add(ctx, n, true)
}

// Acquire takes one permit, waiting as long as ctx allows, and returns its
// id. The permit expires lease after it was taken unless released first;
// lease 0 means it never expires. Waiting works as for AcquireN.
//
// A semaphore that was never set has 0 available permits, so Acquire waits
// until someone calls TrySetPermits, SetPermits or AddPermits. Under a
// misspelled name it waits forever (until ctx ends): where the name may be
// wrong, use TryAcquire with a wait, or check AvailablePermits first.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (s *ExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	ids, err := s.AcquireN(ctx, 1, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// AcquireN takes n permits (0 < n ≤ 65536), waiting as long as ctx allows,
// and returns their ids. Each permit expires lease after it was taken unless
// released first; lease 0 means they never expire. A lease is otherwise at
// least 1ms and at most 2^43 ms (about 278 years), rounded up to whole
// milliseconds; a negative lease, or one outside those bounds, is an invalid
// argument (nothing is sent). A waiter is woken
// through pub/sub by a release that leaves permits available, re-checks when
// the nearest acquired permit expires, and in any case at least every
// redisync.WithRecheckInterval; callers of the same Client queue in arrival
// order (see the package documentation).
//
// On failure it returns an error and holds nothing: when ctx ends first,
// one wrapping ctx.Err(); an acquisition whose reply was lost is undone.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (s *ExpirableSemaphore) AcquireN(ctx context.Context, n int64, lease time.Duration) ([]string, error) {
	if err := s.checkIDs(ctx, n); err != nil {
		return nil, err
	}
	if err := s.h.CheckPermitLease(lease); err != nil {
		return nil, err
	}
	ids, _, err := s.acquire(ctx, n, true, 0, lease)
	return ids, err
}

// TryAcquire takes one permit if it can within wait, as TryAcquireN, and
// returns its id. A semaphore that was never set has 0 available permits
// until someone calls TrySetPermits, SetPermits or AddPermits, so
// TryAcquire on it, or on a misspelled name, waits the whole wait and
// returns ("", false, nil).
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the requests too: one
// still on its way when it ends is cut (a stalled read only on a go-redis
// client with ContextTimeoutEnabled) and undone, and the call reports
// false; see “Wait bounds” in [redisync].
func (s *ExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, bool, error) {
	ids, ok, err := s.TryAcquireN(ctx, 1, wait, lease)
	if !ok || err != nil {
		return "", false, err
	}
	return ids[0], true, nil
}

// TryAcquireN takes n permits (0 < n ≤ 65536) if it can within wait (0: a
// single attempt, which reports false without asking Redis when other
// callers of the same Client are already waiting for this semaphore: it does
// not overtake them), and returns their ids. The lease is as for AcquireN.
// It returns (nil, false, nil) when not enough permits became available in
// time, and an error only for a failure (a bad argument, Redis unreachable,
// ctx ended: then wrapping ctx.Err()), after which it holds nothing. A
// negative wait is an invalid argument.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the requests too: one
// still on its way when it ends is cut (a stalled read only on a go-redis
// client with ContextTimeoutEnabled) and undone, and the call reports
// false; see “Wait bounds” in [redisync].
func (s *ExpirableSemaphore) TryAcquireN(ctx context.Context, n int64, wait, lease time.Duration) ([]string, bool, error) {
	if err := s.checkIDs(ctx, n); err != nil {
		return nil, false, err
	}
	if err := s.h.CheckWait(wait); err != nil {
		return nil, false, err
	}
	if err := s.h.CheckPermitLease(lease); err != nil {
		return nil, false, err
	}
	return s.acquire(ctx, n, false, wait, lease)
}

func (s *ExpirableSemaphore) acquire(ctx context.Context, n int64, forever bool, wait, lease time.Duration) ([]string, bool, error) {
	var ids []string
	end := waitEnd(forever, wait)
	ok, err := s.waitQueued(ctx, forever, wait, s.queue(), func(ctx context.Context, join bool) (bool, time.Duration, bool, error) {
		got, retry, first, err := s.try(ctx, n, lease, end, join)
		if got != nil {
			ids = got
		}
		return got != nil, retry, first, err
	})
	if !ok || err != nil {
		return nil, false, err
	}
	return ids, true, nil
}

// try makes one acquisition attempt with fresh ids. When not enough permits
// are available, the retry hint is the time until the nearest acquired
// permit expires (0: none will). The request is cut at end (cutAt). join
// makes it an attempt of a Client in the semaphore's queue of waiting
// Clients, as the counted semaphore's (Semaphore.try): first reports that
// the Client is first in the queue.
func (s *ExpirableSemaphore) try(ctx context.Context, n int64, lease time.Duration, end time.Time, join bool) (ids []string, retry time.Duration, first bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, false, err // nothing sent, nothing to undo
	}
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return nil, 0, false, fmt.Errorf("acquire: %w", err)
	}
	ids = make([]string, n)
	raw := make([]string, n)
	for i := range ids {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		ids[i] = hex.EncodeToString(b[:])
		raw[i] = string(b[:])
	}
	reqKey := s.requestKey()
	sync := s.h.C.Pipeline().NewSync()
	rctx, cancel := cutAt(ctx, end)
	defer cancel()
	a := lua.SemaphorePermitAcquireArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		Request: reqKey, LeaseMillis: leaseMillis(lease), Deadline: s.h.C.Requests().Deadline(ctx), Publish: pub,
		Permits: raw}
	if join {
		q := s.queue()
		a.Waiters, a.WaitState, a.Client, a.WakePrefix = q.Waiters, q.State, s.h.C.ID(), q.WakePrefix
		a.AliveMillis, a.Probe = core.AliveMillis(s.h.C), core.Probe(s.h.C, pub)
	}
	rep, err := a.Run(rctx, s.h.C.Pipeline().Runner(sync))
	if err == nil && rep.Code == lua.SemaphorePermitAcquireTaken && sync.SyncErr() != nil {
		err = sync.Err // taken on the primary only: undone below
	}
	if err != nil {
		if errs.MayHaveRun(err) {
			s.undo(ctx, reqKey, raw, lease)
		}
		if wasCut(rctx, ctx) {
			return nil, 0, false, core.Cut(fmt.Errorf("acquire: %w", err)) // "busy" only if Redis answered before
		}
		return nil, 0, false, fmt.Errorf("acquire: %w", err)
	}
	switch rep.Code {
	case lua.SemaphorePermitAcquireTaken:
		return ids, 0, false, nil
	case lua.SemaphorePermitAcquireShort, lua.SemaphorePermitAcquireShortFirst:
		return nil, time.Duration(rep.ExpiryMillis) * time.Millisecond, rep.Code == lua.SemaphorePermitAcquireShortFirst, nil
	case lua.SemaphorePermitAcquireCancelled:
		return nil, 0, false, nil // cancelled by an undo: the caller has gone
	}
	return nil, 0, false, fmt.Errorf("acquire: unexpected reply %+v", rep)
}

// withQueue makes the release r wake the first Client of the semaphore's
// queue (published with pub).
func (s *ExpirableSemaphore) withQueue(r *lua.SemaphorePermitReleaseArgs, pub string) {
	q := s.queue()
	r.Waiters, r.WaitState, r.WakePrefix, r.Probe = q.Waiters, q.State, q.WakePrefix, core.Probe(s.h.C, pub)
}

// undo reverts an acquisition whose reply was lost (ctx ended, the
// connection broke): if it took place its permits are released; if it has
// not yet, it is marked cancelled so that a late copy does nothing. The
// permits are found by their ids, so the undo works however late it
// reaches Redis: it is re-sent until Redis answers and the replicas
// acknowledge it (request.Requests.UndoAnswered, acked: an undo only the primary
// has may be lost in a failover to a replica that has the acquisition),
// for as long as the permits' lease, and without a lease until it does (or
// Close's grace runs out) — a permit that never expires would otherwise
// stay taken for good.
func (s *ExpirableSemaphore) undo(ctx context.Context, acquireKey string, raw []string, lease time.Duration) {
	var until time.Time
	if lease > 0 {
		until = time.Now().Add(lease)
	}
	ctx = context.WithoutCancel(ctx)
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		pub = "publish" // only a Cluster's probe fails here; a plain publish still wakes classic subscribers
	}
	// The ids make the undo safe to repeat under a new request key: a
	// permit is taken back once, however many undos find it.
	ran := newAnswered()
	s.h.C.Requests().UndoAnswered(until, nil, ran.c, "its permits come back when their lease ends, or never without one", func(ctx context.Context) func() error {
		undo := lua.SemaphorePermitReleaseArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
			Request: s.requestKey(), UndoRequest: acquireKey, Deadline: s.h.C.Requests().Deadline(ctx), Undo: true,
			Publish: pub, Permits: raw}
		s.withQueue(&undo, pub)
		return func() error {
			return ackedAnswered(s.h.C, ran, func(run lua.Runner) error {
				_, err := undo.Run(ctx, run)
				return err
			})
		}
	}, "semaphore", s.h.Name, "permits", len(raw), "lease", lease)
}

// Release gives the permits with the given ids back, all or nothing, and
// wakes waiters: in each Client, up to as many waiting callers get through
// as permits are then available.
// If any id is unknown or its permit expired, it returns an error wrapping
// redisync.ErrNotHeld and releases none of them. Ids that are not 32 hex
// characters, an id given twice, or no id at all, are invalid arguments
// (at most 65536 ids per call).
//
// Release runs even when ctx is already cancelled (on a detached context
// with a bounded timeout), so a deferred Release after a cancelled request
// still gives the permits back. A release re-sent by go-redis after a lost
// reply is applied once. When its reply is lost for good (the connection
// broke, Redis unreachable) Release returns an error but goes on with the
// release in the background until Redis answers (then releasing every one
// of the permits still taken), so a permit without a lease does not stay
// taken for good: do not release them again. A release that could not be
// completed is logged and counted (Stats.ReleasesFailed).
//
// An error may mean the release took effect ([redisync.ErrNotReplicated]; a
// network error, after which it goes on in the background): never repeat
// it. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) Release(ctx context.Context, ids ...string) error {
	if err := s.h.Check(ctx); err != nil {
		return err
	}
	if len(ids) == 0 || len(ids) > maxIDs {
		return s.h.Invalid("release of %d permits, must be between 1 and %d", len(ids), maxIDs)
	}
	seen := make(map[string]bool, len(ids))
	raws := make([]string, 0, len(ids))
	for _, id := range ids {
		raw, ok := decodeID(id)
		if !ok {
			return s.h.Invalid("permit id %q is not 32 hex characters", id)
		}
		if seen[raw] {
			return s.h.Invalid("permit id %s given twice", id)
		}
		seen[raw] = true
		raws = append(raws, raw)
	}
	ctx, cancel := s.h.C.Background().Detached(ctx)
	defer cancel()
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return s.fail("release", err)
	}
	reqKey := s.requestKey()
	release := lua.SemaphorePermitReleaseArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		Request: reqKey, UndoRequest: reqKey, Deadline: s.h.C.Requests().Deadline(ctx), Publish: pub, Permits: raws}
	s.withQueue(&release, pub)
	var rep lua.SemaphorePermitReleaseReply
	sync := s.h.C.Pipeline().NewSync()
	err = s.h.C.Requests().Resend(ctx, func() (err error) {
		rep, err = release.Run(ctx, s.h.C.Pipeline().Runner(sync))
		return err
	})
	if err != nil {
		if errs.MayHaveRun(err) {
			(&lostRelease{s: s, release: release}).complete()
		}
		return s.fail("release", err)
	}
	if rep.Code == lua.SemaphorePermitReleaseReleased {
		if err := sync.SyncErr(); err != nil {
			// Released on the primary only, which a failover may lose:
			// re-sent until acknowledged (a permit's release applies
			// once: it names the permit).
			(&lostRelease{s: s, release: release}).complete()
			return s.fail("release", fmt.Errorf("released on the primary but not acknowledged by its replicas in time; it is re-sent in the background until they do (it applies once): %w", err))
		}
		return nil
	}
	if rep.Code == lua.SemaphorePermitReleaseUnknown && rep.Value >= 1 && rep.Value <= int64(len(ids)) {
		return fmt.Errorf("%s %q: permit %s unknown or expired, nothing released: %w",
			s.h.Kind, s.h.Name, ids[rep.Value-1], redisync.ErrNotHeld)
	}
	return s.fail("release", fmt.Errorf("unexpected reply %+v", rep))
}

// UpdateLease gives the acquired permit id a new lease, counted from now;
// lease 0 means it never expires. It returns false, and changes nothing,
// when the permit is unknown or already expired. An id that is not 32 hex
// characters, or a lease as AcquireN refuses (negative, below 1ms, above
// 2^43 ms), is an invalid argument.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) UpdateLease(ctx context.Context, id string, lease time.Duration) (bool, error) {
	if err := s.h.Check(ctx); err != nil {
		return false, err
	}
	raw, ok := decodeID(id)
	if !ok {
		return false, s.h.Invalid("permit id %q is not 32 hex characters", id)
	}
	if err := s.h.CheckPermitLease(lease); err != nil {
		return false, err
	}
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return false, s.fail("update lease", err)
	}
	update := lua.SemaphorePermitUpdateLeaseArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		Permit: raw, LeaseMillis: leaseMillis(lease), Publish: pub,
		Deadline: s.h.C.Requests().Deadline(ctx)}
	var r int64
	err = acked(s.h.C, func(run lua.Runner) (err error) {
		r, err = update.Run(ctx, run)
		return err
	})
	if err != nil {
		return false, s.fail("update lease", err)
	}
	return r == lua.SemaphorePermitUpdateLeaseSet, nil
}

// LeaseTime returns how long the acquired permit id has left before it
// expires, or -1 when it never expires. It returns an error wrapping
// redisync.ErrNotHeld when the permit is unknown or expired. An id that is
// not 32 hex characters is an invalid argument.
func (s *ExpirableSemaphore) LeaseTime(ctx context.Context, id string) (time.Duration, error) {
	if err := s.h.Check(ctx); err != nil {
		return 0, err
	}
	raw, ok := decodeID(id)
	if !ok {
		return 0, s.h.Invalid("permit id %q is not 32 hex characters", id)
	}
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return 0, s.fail("lease time", err)
	}
	ms, err := lua.SemaphorePermitLeaseTimeArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		Permit: raw, Publish: pub}.Run(ctx, s.h.C.Direct())
	switch {
	case err != nil:
		return 0, s.fail("lease time", err)
	case ms == lua.SemaphorePermitLeaseTimeUnknown:
		return 0, fmt.Errorf("%s %q: permit %s unknown or expired: %w", s.h.Kind, s.h.Name, id, redisync.ErrNotHeld)
	case ms < 0: // lua.SemaphorePermitLeaseTimeNoExpiry
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// state returns the available and acquired permits, after giving expired
// permits back.
func (s *ExpirableSemaphore) state(ctx context.Context) (available, acquired int64, err error) {
	if err := s.h.Check(ctx); err != nil {
		return 0, 0, err
	}
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return 0, 0, s.fail("permits", err)
	}
	rep, err := lua.SemaphorePermitStateArgs{Semaphore: s.h.Name, Timeouts: s.timeouts, Channel: s.channel,
		Publish: pub}.Run(ctx, s.h.C.Direct())
	if err != nil {
		return 0, 0, s.fail("permits", err)
	}
	return rep.Available, rep.Acquired, nil
}

// AvailablePermits returns the number of permits available now, after
// giving expired ones back: negative when SetPermits or AddPermits left
// fewer than are acquired, and 0 when the semaphore was never set. A
// semaphore that was never set (or a misspelled name) reads as 0, not as
// an error: Acquire on it waits until someone calls TrySetPermits,
// SetPermits or AddPermits.
func (s *ExpirableSemaphore) AvailablePermits(ctx context.Context) (int64, error) {
	available, _, err := s.state(ctx)
	return available, err
}

// AcquiredPermits returns the number of permits acquired and not expired.
func (s *ExpirableSemaphore) AcquiredPermits(ctx context.Context) (int64, error) {
	_, acquired, err := s.state(ctx)
	return acquired, err
}

// Permits returns the total number of permits: available plus acquired.
func (s *ExpirableSemaphore) Permits(ctx context.Context) (int64, error) {
	available, acquired, err := s.state(ctx)
	return available + acquired, err
}

// Delete deletes the semaphore, its available count and its acquired
// permits, and reports whether it existed. Afterwards it has no permits, as
// if never set; releasing a permit acquired before fails with
// redisync.ErrNotHeld. A key of another type than the layout (the count a
// string holding a number, the acquired permits a zset) gives an error
// wrapping redisync.ErrWrongType, and nothing is deleted.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *ExpirableSemaphore) Delete(ctx context.Context) (bool, error) {
	return s.del(ctx, s.h.Name, keys.SemaphoreTimeouts(s.h.Name))
}

// leaseMillis converts a lease to the milliseconds the scripts take: 0 for
// a permit that never expires, and at least 1 for any positive lease.
func leaseMillis(lease time.Duration) int64 { return core.Millis(lease) }
