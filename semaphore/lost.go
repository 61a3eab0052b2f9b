package semaphore

import (
	"context"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/lua"
)

// lostRelease is a release whose reply was lost, or that the replicas
// did not acknowledge in time, going on in the background (request.Requests.CompleteRelease): first the request sent (it may
// still be on its way), then new ones until Redis answers. Releasing a
// permit by its id twice gives nothing back twice (the second finds it
// gone), so a new request may be made whenever the last one got no answer;
// a permit with a lease comes back by itself when it ends, one without only
// by this.
type lostRelease struct {
	s       *ExpirableSemaphore
	release lua.SemaphorePermitReleaseArgs
	sent    bool // the first request, the caller's, was made
}

// complete starts the completion.
func (l *lostRelease) complete() {
	l.s.h.C.Requests().CompleteRelease(time.Time{}, true, "its permits may stay taken until their lease ends, or for good without one",
		l.next, "semaphore", l.s.h.Name, "permits", len(l.release.Permits))
}

// next makes the next request: the caller's first, then a new one.
func (l *lostRelease) next(ctx context.Context) (func() error, time.Time) {
	if l.sent {
		l.renew(ctx, &l.release)
	}
	l.sent = true
	r := l.release
	return func() error {
		return l.releaseKnown(ctx, r)
	}, l.s.h.C.Requests().RecordEnd(r.Deadline)
}

// renew gives the release r a request key and a deadline of its own.
func (l *lostRelease) renew(ctx context.Context, r *lua.SemaphorePermitReleaseArgs) {
	r.Request = l.s.requestKey()
	r.UndoRequest = r.Request
	r.Deadline = l.s.h.C.Requests().Deadline(ctx)
}

// releaseKnown runs release and, while it names a permit that is unknown
// (released by an earlier copy, or expired), runs it again without that
// one: a completion gives back every permit still taken, where Release
// itself is all or nothing.
func (l *lostRelease) releaseKnown(ctx context.Context, release lua.SemaphorePermitReleaseArgs) error {
	for {
		var rep lua.SemaphorePermitReleaseReply
		err := acked(l.s.h.C, func(r lua.Runner) (err error) {
			rep, err = release.Run(ctx, r)
			return err
		})
		if err != nil || rep.Code != lua.SemaphorePermitReleaseUnknown ||
			rep.Value < 1 || rep.Value > int64(len(release.Permits)) {
			return err
		}
		i := rep.Value - 1
		release.Permits = append(release.Permits[:i:i], release.Permits[i+1:]...)
		if len(release.Permits) == 0 {
			return nil
		}
		l.renew(ctx, &release)
	}
}

// acked runs send through a runner that waits for c's replicas (when
// replica acknowledgement is on) and returns the replicas' error when
// they did not acknowledge it in time: a release that only the primary
// has is not done, since a failover may lose it and its permits with it
// (a counted permit for good). The error is not a reply of Redis
// (errs.MayHaveRun): a completion re-sends the release, which applies
// once (the ledger, or the permit's id).
func acked(c *core.Client, send func(lua.Runner) error) error {
	return ackedAnswered(c, nil, send)
}

// ackedAnswered is acked for an undo: it closes ran (once, when not nil)
// as soon as the primary has run send, acknowledged or not, so that the
// caller of the failed acquisition can return while the undo waits for
// the replicas in the background (request.Requests.UndoAnswered). A reply
// that waits for the replicas comes only after their wait (its batch's
// WAIT, up to the timeout, as long as the caller's own wait), so the undo
// is first sent without it, and ran closes on that reply; then it is sent
// again through the replicas' wait. The second run changes nothing (the
// undo applies once: the ledger, or the permits' ids) but is a write (a
// replay rewrites its record), so the WAIT after it covers the first.
func ackedAnswered(c *core.Client, ran *answered, send func(lua.Runner) error) error {
	ws := c.Pipeline().NewSync()
	if ws != nil && ran != nil && !ran.closed() {
		if err := send(c.Pipeline().Runner(nil)); err != nil {
			return err
		}
		ran.close()
	}
	if err := send(c.Pipeline().Runner(ws)); err != nil {
		return err
	}
	ran.close()
	return ws.SyncErr()
}

// answered is closed once, the first time the primary ran an undo.
type answered struct {
	once sync.Once
	c    chan struct{}
}

func newAnswered() *answered { return &answered{c: make(chan struct{})} }

// closed reports whether a.c is closed.
func (a *answered) closed() bool {
	select {
	case <-a.c:
		return true
	default:
		return false
	}
}

// close closes a.c; a nil a does nothing.
func (a *answered) close() {
	if a != nil {
		a.once.Do(func() { close(a.c) })
	}
}
