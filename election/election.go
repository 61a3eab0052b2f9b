package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/rlock"
)

// ErrNoLeader is returned by Leader when nobody leads the election: no
// candidate ever won it, the last leader resigned or lost its lease, or
// the lock is held by an owner that is no candidate (a Redisson RLock on
// the same name).
var ErrNoLeader = errors.New("redisync: no leader")

// logKeep is how many leader records the log keeps: an observer that
// missed more changes than this between two reads delivers the latest
// logKeep of them.
const logKeep = 64

// Election is a leader election on one name, for any number of
// candidates in any number of processes. It is a handle: creating one
// does no I/O, and one handle may serve any number of goroutines.
type Election struct {
	h    core.Handle
	lock *rlock.FairLock
	opts options
}

// Leader is one leadership as followers see it.
type Leader struct {
	// Value is what the leader proclaimed (Campaign's value, or its
	// latest Proclaim).
	Value string
	// Term is the leadership's fencing token: larger than every earlier
	// leader's.
	Term int64
	// Since is when the term began (its first record), by the Redis
	// server's clock, to the millisecond.
	Since time.Time
}

// New returns a handle on the election called name. It does no I/O and
// never fails: an empty name or an invalid option is reported, wrapping
// redisync.ErrInvalidArgument, by the first operation.
func New(c *redisync.Client, name string, opts ...Option) *Election {
	o := newOptions(opts)
	e := &Election{h: core.NewHandle((*core.Client)(c), "election", name), opts: o}
	e.h.OptErr = o.err
	e.lock = rlock.NewFair(c, name, o.lockOptions()...)
	return e
}

// Name returns the election's name, as given to New. It is also the key
// of its lock, after the Client's key prefix (redisync.WithKeyPrefix).
func (e *Election) Name() string { return e.h.Given }

// Campaign blocks until the caller leads the election, or ctx ends.
// Candidates are served in the order they campaigned, across processes:
// each waits in the fair lock's queue and is woken through pub/sub when
// its turn comes (a resignation hands over at once; a leader that died is
// replaced when its lease runs out). value is what Leader and Observe
// report while it leads.
//
// The leadership it returns has a term larger than every earlier
// leader's, and lasts until Resign, its loss (the lease not renewed, the
// lock deleted) or the Client's Close; its Context ends at that moment.
// With replica acknowledgement on (the default), a candidate whose win
// its replicas did not acknowledge in time does not lead: it gives the
// lock back and campaigns again.
//
// When ctx ends first Campaign returns an error wrapping ctx.Err() and
// leaves nothing behind: no hold, no place in the queue.
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	if err := e.h.Check(ctx); err != nil {
		return nil, err
	}
	for {
		l, err := e.campaign(ctx, value)
		if err == nil || !errors.Is(err, redisync.ErrNotReplicated) || ctx.Err() != nil {
			return l, err
		}
		// Not acknowledged: not a leader. Campaign again, after a pause
		// that lets the replicas catch up.
		e.h.C.Logger().Warn("redisync: election win not acknowledged by the replicas; campaigning again", "name", e.h.Name, "err", err)
		t := time.NewTimer(core.Recheck(e.h.C) / 10)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("election %q: campaign: %w", e.h.Name, ctx.Err())
		}
	}
}

// campaign is one campaign: the lock taken for a new owner, then the
// leader's record written.
func (e *Election) campaign(ctx context.Context, value string) (*Leadership, error) {
	lctx := redisync.WithOwner(ctx) // every campaign is a candidate of its own
	if err := e.lock.Lock(lctx); err != nil {
		return nil, fmt.Errorf("election %q: campaign: %w", e.h.Name, err)
	}
	token, _ := redisync.OwnerToken(lctx)
	l := &Leadership{e: e, token: token, field: e.h.C.ID() + ":" + strconv.FormatUint(token, 10)}
	hold := e.lock.Hold(lctx)
	if hold == nil { // lost already
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		l.cancel(fmt.Errorf("%w: lost as it was won", redisync.ErrLockLost))
	} else {
		// A child of the hold's context: the hold's end cancels it at
		// once, with the hold's cause. The engine ends the hold by the
		// one rule of every watchdog-renewed hold: when its lease, from
		// the last write Redis (and, with acknowledgement on, its
		// replicas) acknowledged, less a margin for the clocks, has run
		// out on this process's clock, whether or not a renewal is still
		// on its way. Redis keeps the lock at least that long, so the
		// leadership ends before another candidate can win.
		l.ctx, l.cancel = context.WithCancelCause(hold.Context())
		l.term = hold.FencingToken()
		go l.follow()
	}
	if err := l.Proclaim(ctx, value); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		// A Proclaim refused has ended the leadership already: end
		// sends its release once.
		_, _ = l.end(ctx, fmt.Errorf("%w: campaign failed", redisync.ErrNotHeld))
		return nil, fmt.Errorf("election %q: campaign: %w", e.h.Name, err)
	}
	return l, nil
}

// Leader returns the current leader: its value, term and since when it
// leads. It returns an error wrapping ErrNoLeader when nobody leads.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.h.Check(ctx); err != nil {
		return Leader{}, err
	}
	rep, err := e.read(ctx)
	if err != nil {
		return Leader{}, err
	}
	if rep.Live != lua.ElectionLeaderLive {
		return Leader{}, fmt.Errorf("election %q: %w", e.h.Name, ErrNoLeader)
	}
	return newLeader(rep.Value, rep.Term, rep.Since), nil
}

// newLeader is the leader of a record: its value, term and start in
// epoch milliseconds by the server's clock.
func newLeader(value string, term, sinceMillis int64) Leader {
	return Leader{Value: value, Term: term, Since: time.UnixMilli(sinceMillis)}
}

// read runs election_leader.
func (e *Election) read(ctx context.Context) (lua.ElectionLeaderReply, error) {
	rep, err := lua.ElectionLeaderArgs{Lock: e.h.Name, Leader: keys.ElectionLeader(e.h.Name)}.Run(ctx, e.h.C.Direct())
	if err != nil {
		return rep, fmt.Errorf("election %q: %w", e.h.Name, errs.ReplyError(err))
	}
	return rep, nil
}

// Leadership is one candidate's leadership of an election, from the
// Campaign that won it to its end: Resign, a loss, or the Client's Close.
type Leadership struct {
	e      *Election
	token  uint64 // the candidate's owner token
	field  string // its owner "<client id>:<token>", its field in the lock hash
	term   int64
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	ended  bool // end has run: the leadership's one release is sent (under mu)
}

// follow waits for the leadership's end and, when it ended with its hold
// (a loss the watchdog found, the hold's lease run out on this process's
// clock, the Client's Close) rather than by end, sends its release all
// the same: a renewal that reached Redis late may have kept the lock,
// which the release clears, waking the next candidate at once. The
// release then finds nothing to do otherwise.
func (l *Leadership) follow() {
	<-l.ctx.Done()
	_, _ = l.end(context.Background(), context.Cause(l.ctx))
}

// end ends the leadership with cause, first in this process (its Context
// is done before anything is sent), then in Redis: the lock is released,
// which wakes the next candidate. Only the first call releases (first is
// true); a later one changes nothing, whatever its cause. It returns the
// release's error.
func (l *Leadership) end(ctx context.Context, cause error) (first bool, err error) {
	l.mu.Lock()
	first, l.ended = !l.ended, true
	l.cancel(cause) // under mu: a later call finds the leadership ended
	l.mu.Unlock()
	if !first {
		return false, nil
	}
	return true, l.e.lock.Unlock(redisync.WithOwnerToken(ctx, l.token)) // Unlock runs detached
}

// Term returns the leadership's term: the fencing token its acquisition
// of the lock took, larger than every earlier leader's. Pass it to the
// resources the leader writes to, and have them refuse a write with a
// term lower than one they have seen.
func (l *Leadership) Term() int64 { return l.term }

// Context returns a context that is cancelled the moment the leadership
// ends; context.Cause then says why (see Err). Run the leader's work
// under it.
func (l *Leadership) Context() context.Context { return l.ctx }

// Done returns a channel closed when the leadership ends.
func (l *Leadership) Done() <-chan struct{} { return l.ctx.Done() }

// Err returns nil while the caller leads; after a loss an error wrapping
// redisync.ErrLockLost (also after the Client's Close, then wrapping
// redisync.ErrClosed as well); after Resign one wrapping
// redisync.ErrNotHeld.
func (l *Leadership) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Proclaim sets the value followers read (Leader) and sends it to the
// observers (Observe), keeping the term. It is written only while the
// caller leads: after the leadership ended (even if this process has not
// noticed yet: its lease ran out in Redis) it returns an error wrapping
// redisync.ErrNotHeld and changes nothing, so a stale leader never
// overwrites a newer one's value. With replica acknowledgement on, a
// value not acknowledged in time returns an error wrapping
// redisync.ErrNotReplicated: it took effect on the primary.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	e := l.e
	if ctx == nil {
		return fmt.Errorf("%w: election %q: proclaim: nil context", redisync.ErrInvalidArgument, e.h.Name)
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("election %q: proclaim: %w (%w)", e.h.Name, redisync.ErrNotHeld, err)
	}
	pub, err := e.h.C.PublishCommand(ctx)
	if err != nil {
		return fmt.Errorf("election %q: proclaim: %w", e.h.Name, errs.ReplyError(err))
	}
	sync := e.h.C.Pipeline().NewSync()
	rep, err := lua.ElectionProclaimArgs{Lock: e.h.Name, Leader: keys.ElectionLeader(e.h.Name),
		Log: keys.ElectionLog(e.h.Name), Channel: keys.ElectionChannel(e.h.Name), Field: l.field,
		Term: l.term, Value: value, Publish: pub, Keep: logKeep}.Run(ctx, e.h.C.Pipeline().Runner(sync))
	switch {
	case err != nil:
		return fmt.Errorf("election %q: proclaim: %w", e.h.Name, errs.ReplyError(err))
	case rep.Code == lua.ElectionProclaimNotLeader, rep.Code == lua.ElectionProclaimStale:
		lost := fmt.Errorf("%w: the lock was no longer held at proclaim", redisync.ErrLockLost)
		_, _ = l.end(ctx, lost) // stop leading here too; the lock is someone else's or nobody's
		return fmt.Errorf("election %q: proclaim: not the leader (%w): %w", e.h.Name, lost, redisync.ErrNotHeld)
	case sync.SyncErr() != nil:
		return fmt.Errorf("election %q: proclaim took effect on the primary: %w", e.h.Name, sync.Err)
	}
	return nil
}

// Resign ends the leadership: its Context is cancelled first (cause
// redisync.ErrNotHeld), then the lock is released, which wakes the next
// candidate at once. It runs even when ctx is already cancelled. It
// returns an error wrapping redisync.ErrNotHeld when the leadership had
// ended already (a loss, an earlier Resign), and the release's error when
// that failed (the lease then frees the lock).
func (l *Leadership) Resign(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: election %q: resign: nil context", redisync.ErrInvalidArgument, l.e.h.Name)
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("election %q: resign: %w (%w)", l.e.h.Name, redisync.ErrNotHeld, err)
	}
	first, err := l.end(ctx, fmt.Errorf("%w: resigned", redisync.ErrNotHeld))
	switch {
	case !first: // ended meanwhile (a loss, a Resign of another goroutine)
		return fmt.Errorf("election %q: resign: %w (%w)", l.e.h.Name, redisync.ErrNotHeld, context.Cause(l.ctx))
	case err != nil:
		return fmt.Errorf("election %q: resign: %w", l.e.h.Name, err)
	}
	return nil
}
