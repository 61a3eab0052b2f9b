package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// Semaphore is a counted distributed semaphore on Redis, compatible with
// Redisson's RSemaphore: a number of permits, shared by every process using
// the same Redis and name, that Acquire takes and Release gives back. It has
// no owners and no expiry: Release may be called by anyone, and permits
// held by a process that dies without releasing them are lost until someone
// adds them back (ExpirableSemaphore gives them back by itself).
//
// A Semaphore is a handle: creating one does no I/O, and it is safe for
// concurrent use.
type Semaphore struct {
	base
}

// New returns a handle on the semaphore called name, whose Redis key is
// name. It does no I/O and never fails: an empty name is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation. A semaphore that was
// never set has no permits.
func New(c *redisync.Client, name string) *Semaphore {
	h := core.NewHandle((*core.Client)(c), "semaphore", name)
	return &Semaphore{base: base{h: h, q: newQueue(h.Name)}}
}

// Name returns the semaphore's name, which is also its Redis key (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (s *Semaphore) Name() string { return s.h.Given }

// TrySetPermits sets the number of available permits to n (≥ 0) if the
// semaphore has not been set yet, and wakes waiters. It reports whether it
// set them; false means the semaphore already existed, and nothing changed.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	return s.trySet(ctx, n, false)
}

// AddPermits adds n permits to the available count, creating the semaphore
// when it was not set, and wakes waiters when permits are available. A
// negative n removes permits; the count may become negative, and then
// Acquire waits until releases bring it back above what it asks for. A
// call re-sent by go-redis after a lost reply is applied once.
//
// After a network error it may or may not have taken effect, and calling
// again may apply it twice. See “Errors and retries” in [redisync].
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	return s.add(ctx, n, false)
}

// Acquire takes n permits (n > 0), waiting as long as ctx allows. A waiter
// is woken through pub/sub by a release that leaves enough permits, and
// re-checks at least every redisync.WithRecheckInterval in case a message
// was lost; callers of the same Client queue in arrival order (see the
// package documentation).
//
// A semaphore that was never set has 0 available permits, so Acquire waits
// until someone calls TrySetPermits, AddPermits or Release. Under a
// misspelled name it waits forever (until ctx ends): where the name may be
// wrong, use TryAcquire with a wait, or check AvailablePermits first.
//
// On failure it returns an error and holds nothing: when ctx ends first,
// one wrapping ctx.Err(); an acquisition whose reply was lost is undone.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if err := s.checkN(ctx, n); err != nil {
		return err
	}
	_, err := s.acquire(ctx, n, true, 0)
	return err
}

// TryAcquire takes n permits (n > 0) if it can within wait (0: a single
// attempt, which reports false without asking Redis when other callers of
// the same Client are already waiting for this semaphore: it does not
// overtake them). It returns (false, nil) when not enough permits became
// available in time, and an error only for a failure (a bad argument, Redis
// unreachable, ctx ended: then wrapping ctx.Err()), after which it holds
// nothing. A negative wait is an invalid argument.
//
// A semaphore that was never set has 0 available permits until someone
// calls TrySetPermits, AddPermits or Release, so TryAcquire on it, or on a
// misspelled name, waits the whole wait and returns (false, nil).
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync]. A wait above 0 bounds the requests too: one
// still on its way when it ends is cut (a stalled read only on a go-redis
// client with ContextTimeoutEnabled) and undone, and the call reports
// false; see “Wait bounds” in [redisync].
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, wait time.Duration) (bool, error) {
	if err := s.checkN(ctx, n); err != nil {
		return false, err
	}
	if err := s.h.CheckWait(wait); err != nil {
		return false, err
	}
	return s.acquire(ctx, n, false, wait)
}

func (s *Semaphore) acquire(ctx context.Context, n int64, forever bool, wait time.Duration) (bool, error) {
	end := waitEnd(forever, wait)
	return s.waitQueued(ctx, forever, wait, s.queue(), func(ctx context.Context, join bool) (bool, time.Duration, bool, error) {
		return s.try(ctx, n, end, join)
	})
}

// try makes one acquisition attempt. The counted semaphore cannot tell when
// permits will come back, so it gives no retry hint.
//
// Its requests are numbered in the client's ledger (request.Ledger,
// lua/prelude_ledger.lua), which keeps their outcome in Redis for as long
// as the client may ask: an acquisition whose reply was lost can be undone,
// and a release completed, after an outage of any length up to an hour.
// The request is cut at end (cutAt).
//
// join makes the attempt one of a Client in the semaphore's queue of
// waiting Clients (queue.go): it joins the queue when too few permits are
// available, and reports whether the Client is first in it (foreign: it
// listens on the semaphore's channel too).
func (s *Semaphore) try(ctx context.Context, n int64, end time.Time, join bool) (ok bool, retry time.Duration, foreign bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, 0, false, err // nothing sent, nothing to undo
	}
	a := lua.SemaphoreAcquireArgs{Semaphore: s.h.Name, N: n, Deadline: s.h.C.Requests().Deadline(ctx)}
	if join {
		q := s.queue()
		pub, err := s.h.C.PublishCommand(ctx)
		if err != nil {
			return false, 0, false, fmt.Errorf("acquire: %w", err)
		}
		a.Waiters, a.WaitState, a.Client, a.WakePrefix, a.Publish = q.Waiters, q.State, s.h.C.ID(), q.WakePrefix, pub
		a.AliveMillis, a.Probe = strconv.FormatInt(core.AliveMillis(s.h.C), 10), probeArg(s.h.C, pub)
	}
	led := s.h.C.Requests().Ledger()
	seq, low := led.Begin(s.h.Name)
	a.Ledger, a.Seq, a.Low = led.Key(s.h.Name), seq, low
	sync := s.h.C.Pipeline().NewSync()
	rctx, cancel := cutAt(ctx, end)
	defer cancel()
	r, err := a.Run(rctx, s.h.C.Pipeline().Runner(sync))
	if err == nil && r == lua.SemaphoreAcquireTaken && sync.SyncErr() != nil {
		err = sync.Err // taken on the primary only: undone below
	}
	if err != nil {
		if errs.MayHaveRun(err) {
			s.undo(ctx, n, seq) // ends seq in the ledger when done
		} else {
			led.End(s.h.Name, seq)
		}
		if wasCut(rctx, ctx) {
			return false, 0, false, core.Cut(fmt.Errorf("acquire: %w", err)) // "busy" only if Redis answered before
		}
		return false, 0, false, fmt.Errorf("acquire: %w", err)
	}
	led.End(s.h.Name, seq)
	switch r {
	case lua.SemaphoreAcquireTaken:
		return true, 0, false, nil
	case lua.SemaphoreAcquireShortFirst:
		return false, 0, true, nil
	case lua.SemaphoreAcquireShort, lua.SemaphoreAcquireCancelled: // cancelled by an undo: the caller has gone
		return false, 0, false, nil
	}
	return false, 0, false, fmt.Errorf("acquire: unexpected reply %d", r)
}

// undo reverts the acquisition acq whose reply was lost (ctx ended, the
// connection broke): if it took place its permits are given back; if it has
// not yet, it is marked cancelled so that a late copy does nothing. It is
// re-sent until Redis answers and the replicas acknowledge it
// (request.Requests.UndoAnswered, acked): the ledger keeps the acquisition's
// outcome while the client asks. An undo that only the primary has is not
// done: the acquisition may have reached a replica that had not yet
// acknowledged it when its wait ended, and a failover to that replica
// would keep the permits taken and lose their undo, for good. Then both
// requests end in the ledger.
func (s *Semaphore) undo(ctx context.Context, n, acq int64) {
	ctx = context.WithoutCancel(ctx)
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		pub = "publish" // only a Cluster's probe fails here; a plain publish still wakes classic subscribers
	}
	led := s.h.C.Requests().Ledger()
	seq, low := led.Begin(s.h.Name)
	undo := lua.SemaphoreReleaseArgs{Semaphore: s.h.Name, Channel: keys.SemaphoreChannel(s.h.Name),
		Ledger: led.Key(s.h.Name), N: n, Undo: true, Publish: pub, Seq: seq, Low: low, UndoSeq: acq}
	undo.Waiters, undo.WaitState, undo.WakePrefix, undo.Probe = s.wakeArgs(pub)
	end := func() { led.End(s.h.Name, acq, seq) }
	ran := newAnswered()
	s.h.C.Requests().UndoAnswered(time.Time{}, end, ran.c, "its permits may be lost", func(ctx context.Context) func() error {
		r := undo
		r.Deadline = s.h.C.Requests().Deadline(ctx) // the same request, with a deadline of its own
		return func() error {
			return ackedAnswered(s.h.C, ran, func(run lua.Runner) error {
				_, err := r.Run(ctx, run)
				return err
			})
		}
	}, "semaphore", s.h.Name, "permits", n)
}

// Release gives n permits (n > 0) back and wakes waiters: in each Client,
// up to as many waiting callers get through as permits are then available. It needs no prior Acquire
// (a release of a semaphore that was never set leaves n permits), so it
// never fails with ErrNotHeld. It runs even when ctx is already cancelled
// (on a detached context with a bounded timeout), so a deferred Release
// after a cancelled request still gives the permits back. A release re-sent
// by go-redis after a lost reply is applied once. When its reply is lost
// for good (the connection broke, Redis unreachable) Release returns an
// error but goes on with the release in the background until Redis
// answers, so the permits come back once Redis is reachable again: do not
// release them again. Only an outage longer than an hour, or the Client's
// Close meanwhile, can leave them lost, which is logged and counted
// (Stats.ReleasesFailed).
//
// An error may mean the release took effect ([redisync.ErrNotReplicated]; a
// network error, after which it goes on in the background): never repeat
// it. See “Errors and retries” in [redisync].
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := s.checkN(ctx, n); err != nil {
		return err
	}
	ctx, cancel := s.h.C.Background().Detached(ctx)
	defer cancel()
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return s.fail("release", err)
	}
	led := s.h.C.Requests().Ledger()
	seq, low := led.Begin(s.h.Name)
	sync := s.h.C.Pipeline().NewSync()
	release := lua.SemaphoreReleaseArgs{Semaphore: s.h.Name, Channel: keys.SemaphoreChannel(s.h.Name),
		Ledger: led.Key(s.h.Name), N: n, Deadline: s.h.C.Requests().Deadline(ctx), Publish: pub, Seq: seq, Low: low}
	release.Waiters, release.WaitState, release.WakePrefix, release.Probe = s.wakeArgs(pub)
	err = s.h.C.Requests().Resend(ctx, func() error {
		_, err := release.Run(ctx, s.h.C.Pipeline().Runner(sync))
		return err
	})
	if err == nil && sync.SyncErr() != nil {
		// Released on the primary, which a failover may lose, and the
		// permits with it: re-sent until the replicas acknowledge it.
		err = fmt.Errorf("released on the primary but not acknowledged by its replicas in time; it is re-sent in the background until they do (it applies once): %w", sync.SyncErr())
	}
	if errs.MayHaveRun(err) {
		s.complete(release) // ends seq in the ledger when done
	} else {
		led.End(s.h.Name, seq)
	}
	if err != nil {
		return s.fail("release", err)
	}
	return nil
}

// ReleaseIfExists gives n permits (n > 0) back only when the semaphore
// exists (Redisson 4.0's releaseIfExists), as Release does: the same key
// and channel, waiters woken the same way, a copy re-sent by go-redis
// after a lost reply applied once. It reports whether the permits were
// released. When the semaphore does not exist (never set, deleted, or
// expired) it returns false and changes and creates nothing, where Release
// would create it with n permits: a late release, after the semaphore was
// deleted on purpose, then does not bring it back.
//
// It runs even when ctx is already cancelled, as Release. When its reply
// is lost for good it returns an error and goes on in the background until
// Redis answers, as Release: do not release again; whether the semaphore
// existed when the request ran is then not known to the caller. See
// “Errors and retries” in [redisync].
func (s *Semaphore) ReleaseIfExists(ctx context.Context, n int64) (bool, error) {
	if err := s.checkN(ctx, n); err != nil {
		return false, err
	}
	ctx, cancel := s.h.C.Background().Detached(ctx)
	defer cancel()
	pub, err := s.h.C.PublishCommand(ctx)
	if err != nil {
		return false, s.fail("release if exists", err)
	}
	led := s.h.C.Requests().Ledger()
	seq, low := led.Begin(s.h.Name)
	sync := s.h.C.Pipeline().NewSync()
	release := lua.SemaphoreReleaseIfExistsArgs{Semaphore: s.h.Name, Channel: keys.SemaphoreChannel(s.h.Name),
		Ledger: led.Key(s.h.Name), N: n, Deadline: s.h.C.Requests().Deadline(ctx), Publish: pub, Seq: seq, Low: low}
	release.Waiters, release.WaitState, release.WakePrefix, release.Probe = s.wakeArgs(pub)
	var r lua.SemaphoreReleaseIfExistsReply
	err = s.h.C.Requests().Resend(ctx, func() (err error) {
		r, err = release.Run(ctx, s.h.C.Pipeline().Runner(sync))
		return err
	})
	if err == nil && r.Code == lua.SemaphoreReleaseIfExistsReleased && sync.SyncErr() != nil {
		// Released on the primary only: re-sent until acknowledged, as
		// Release.
		err = fmt.Errorf("released on the primary but not acknowledged by its replicas in time; it is re-sent in the background until they do (it applies once): %w", sync.SyncErr())
	}
	if errs.MayHaveRun(err) {
		s.completeIfExists(release) // ends seq in the ledger when done
	} else {
		led.End(s.h.Name, seq)
	}
	if err != nil {
		return false, s.fail("release if exists", err)
	}
	switch r.Code {
	case lua.SemaphoreReleaseIfExistsReleased:
		return true, nil
	case lua.SemaphoreReleaseIfExistsAbsent:
		return false, nil
	}
	return false, s.fail("release if exists", fmt.Errorf("unexpected reply %d", r.Code))
}

// completeIfExists is complete for ReleaseIfExists.
func (s *Semaphore) completeIfExists(release lua.SemaphoreReleaseIfExistsArgs) {
	s.completeLost(release.Seq, release.N, &release.Deadline, func(ctx context.Context, r lua.Runner) error {
		_, err := release.Run(ctx, r)
		return err
	})
}

// complete goes on in the background with a release whose reply was lost,
// or that the replicas did not acknowledge in time
// (request.Requests.CompleteRelease): the same request, re-sent until
// Redis answers and the replicas acknowledge it (acked), with a new
// deadline each time Redis refuses it as late (the ledger, not the
// deadline, says whether it ran). Then it ends in the ledger.
func (s *Semaphore) complete(release lua.SemaphoreReleaseArgs) {
	s.completeLost(release.Seq, release.N, &release.Deadline, func(ctx context.Context, r lua.Runner) error {
		_, err := release.Run(ctx, r)
		return err
	})
}

// completeLost is complete for a release of n permits numbered seq in the
// ledger, whose request run sends, through the runner it is given (one
// that waits for the replicas: acked), with the deadline in *deadline: the
// first send keeps the request's own, every later one gets a new one.
func (s *Semaphore) completeLost(seq, n int64, deadline *int64, run func(context.Context, lua.Runner) error) {
	first := true
	end := func() { s.h.C.Requests().Ledger().End(s.h.Name, seq) }
	s.h.C.Requests().CompleteReleaseThen(time.Time{}, true, end, "its permits may be lost",
		func(ctx context.Context) (func() error, time.Time) {
			if !first {
				*deadline = s.h.C.Requests().Deadline(ctx)
			}
			first = false
			return func() error {
				return acked(s.h.C, func(r lua.Runner) error { return run(ctx, r) })
			}, time.Time{}
		}, "semaphore", s.h.Name, "permits", n)
}

// AvailablePermits returns the number of permits available now: negative
// after AddPermits removed more than were available, and 0 when the
// semaphore was never set. A semaphore that was never set (or a misspelled
// name) reads as 0, not as an error: Acquire on it waits until someone
// calls TrySetPermits, AddPermits or Release.
func (s *Semaphore) AvailablePermits(ctx context.Context) (int64, error) {
	if err := s.h.Check(ctx); err != nil {
		return 0, err
	}
	n, err := s.h.C.Redis().Get(ctx, s.h.Name).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.fail("available permits", err)
	}
	return n, nil
}

// DrainPermits takes every available permit: it sets the count to 0 and
// returns how many were available (a negative count is reset to 0 as
// well, and returned). A semaphore that was never set stays unset and
// DrainPermits returns 0. A call re-sent by go-redis after a lost reply
// returns the first run's count.
//
// After a network error it may or may not have taken effect, and calling
// again may apply it twice. See “Errors and retries” in [redisync].
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	if err := s.h.Check(ctx); err != nil {
		return 0, err
	}
	drain := lua.SemaphoreDrainArgs{Semaphore: s.h.Name, Request: s.requestKey(),
		Deadline: s.h.C.Requests().Deadline(ctx)}
	var n int64
	err := acked(s.h.C, func(run lua.Runner) (err error) {
		n, err = drain.Run(ctx, run)
		return err
	})
	if err != nil {
		return 0, s.fail("drain", err)
	}
	return n, nil
}

// Delete deletes the semaphore and reports whether it existed. Afterwards it
// has no permits, as if never set; waiters keep waiting. A key of another
// type (not a string holding a count) gives an error wrapping
// redisync.ErrWrongType and is not deleted.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (s *Semaphore) Delete(ctx context.Context) (bool, error) {
	return s.del(ctx, s.h.Name)
}
