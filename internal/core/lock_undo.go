package core

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/request"

	"github.com/redisync/redisync/internal/core/errs"
)

// undo reverts, in the background, an acquisition whose reply was lost
// (ctx ended, the connection broke): if it took place, the owner's count
// goes back to what it was; if it has not yet, it is marked cancelled so a
// late copy does nothing. An owner's undo whose own reply is lost is
// settled (request.Requests.Settle) before unlock. It calls unlock (the owner's
// lock) when done and reports whether it started, with a channel closed
// when it is done; when it did not (the client is closed), the caller
// unlocks, and the acquisition, if it took place, expires with its lease.
func (l sideCall) undo(acq Op, unlock func()) (bool, <-chan struct{}) {
	s := l.s
	// The undo is re-sent until Redis answers it, for as long as the
	// acquisition's record lives (sent before now, it ends before this).
	until := time.Now().Add(l.Lock.C.reqs.TTL() + request.RecordSlack)
	done := make(chan struct{})
	started := l.Lock.C.bg.Finish(l.Lock.C.reqs.TTL()+bg.CloseGrace, func(ctx context.Context) {
		defer close(done)
		op := acq
		op.Sync = nil
		op.Count = acq.Count - 1
		op.UndoKey = acq.ReqKey
		op.ReqKey = l.Lock.requestKey()
		op.Publish = ""
		var err error
		if op.Publish, err = l.Lock.C.PublishCommand(ctx); err == nil {
			err = l.Lock.C.reqs.ResendUntil(ctx, until, func() error {
				_, err := s.Scripts.RunRelease(ctx, &op)
				return err
			})
		}
		if err != nil {
			if errs.MayHaveRun(err) {
				l.Lock.C.ctr.undoFailed.Add(1)
			}
			l.Lock.C.log.Warn("redisync: could not undo an interrupted acquisition; it expires with its lease",
				"kind", s.Kind, "name", l.Lock.Name, "owner", op.Owner, "err", err)
		}
		// An owner's undo is a release: one whose reply was lost is
		// settled before the owner's next request (request.Requests.Settle).
		if !errs.MayHaveRun(err) || op.Fresh || op.Publish == "" || !l.Lock.C.reqs.Settle(op.ReqKey, unlock) {
			unlock()
		}
	})
	if !started {
		return false, nil
	}
	return true, done
}
