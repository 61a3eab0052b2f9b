package election

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Observe returns a channel that receives the election's leaders: the
// current one first, if any, then each new leader once, in term order,
// and a leader again after each Proclaim with its new value: every leader
// elected after Observe returns (it reads the current record first, one
// round trip bounded by ctx). The channel
// is closed when ctx ends or the Client closes (or at once for an invalid
// election).
//
// Observers are woken through pub/sub, never by polling: each new record
// is published on the election's channel. A message may be lost (a
// reconnect, a failover), so an observer also re-reads at the Client's
// re-check interval (WithRecheckInterval), and an observer that finds it
// missed records reads them from the election's log (the latest 64), so it
// still delivers every leader in order. A slow receiver delays only its
// own observer. A leader whose term ended before the observer read it is
// still delivered: it led.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	if e.h.Check(ctx) != nil || !e.h.C.Background().Track() {
		close(out)
		return out
	}
	o := &observer{e: e, out: out}
	// The current record is read before Observe returns, so that every
	// leader elected after it returns is delivered (from the log when its
	// message comes before the subscription); a failed read is made again
	// by the observer's first check.
	if rep, err := e.read(ctx); err == nil {
		o.start(rep)
	}
	go func() {
		defer e.h.C.Background().Untrack()
		defer close(out)
		o.run(ctx)
	}()
	return out
}

// observer is one Observe: the last record it delivered.
type observer struct {
	e       *Election
	out     chan<- Leader
	seq     int64 // the last record read
	last    Leader
	started bool // seq is set (start)
}

// start sets where the observer starts from the first record it read:
// just before it when its leader leads (so that check delivers it
// first, and the records after it in order), after it otherwise.
func (o *observer) start(rep lua.ElectionLeaderReply) {
	o.started, o.seq = true, rep.Seq
	if rep.Live == lua.ElectionLeaderLive {
		o.seq--
	}
}

// run subscribes, reads the current leader, then waits for messages (or
// the re-check interval) and delivers what changed, until ctx ends or the
// Client closes.
func (o *observer) run(ctx context.Context) {
	c := o.e.h.C
	closing := c.Background().Closing()
	recheck := core.Recheck(c)
	var w *pubsub.Waiter
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var wake <-chan struct{}
		if w == nil {
			var err error
			if w, err = c.Mux().Subscribe(ctx, keys.ElectionChannel(o.e.h.Name), pubsub.WakeAll); err != nil {
				w = nil
				if ctx.Err() != nil || errors.Is(err, pubsub.ErrClosed) {
					return
				}
				c.Logger().Warn("redisync: election observer could not subscribe; re-reading on its timer", "name", o.e.h.Name, "err", err)
			}
		}
		if w != nil {
			wake = w.C()
		}
		if !o.check(ctx) {
			return
		}
		timer.Reset(recheck)
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return
		case <-closing:
			return
		}
	}
}

// check reads the election's record and delivers what the observer has
// not delivered yet. It returns false when ctx ended or the Client closed
// while delivering.
func (o *observer) check(ctx context.Context) bool {
	rep, err := o.e.read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.e.h.C.Logger().Debug("redisync: election observer could not read", "name", o.e.h.Name, "err", err)
		}
		return ctx.Err() == nil
	}
	if !o.started {
		o.start(rep)
	}
	if rep.Seq < o.seq {
		// The records were deleted (Delete) or lost with their server,
		// and began again below the observer's sequence number
		// (election_proclaim.lua numbers a new sequence from the server's
		// clock, so it runs above the one before unless that clock was
		// set back): the log is all new.
		o.seq = 0
	}
	switch {
	case rep.Seq <= o.seq:
		return true
	case rep.Seq == o.seq+1:
		o.seq = rep.Seq
		return o.deliver(ctx, newLeader(rep.Value, rep.Term, rep.Since))
	}
	// Missed records: read them from the log.
	missed, err := o.missed(ctx, rep.Seq)
	if err != nil {
		return ctx.Err() == nil
	}
	o.seq = rep.Seq
	for _, l := range missed {
		if !o.deliver(ctx, l) {
			return false
		}
	}
	return true
}

// missed reads from the log the records after the last one read, up to
// upTo, oldest first.
func (o *observer) missed(ctx context.Context, upTo int64) ([]Leader, error) {
	recs, err := o.e.h.C.Redis().LRange(ctx, keys.ElectionLog(o.e.h.Name), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	var missed []Leader
	for _, r := range slices.Backward(recs) { // newest first in the log
		parts := strings.SplitN(r, ":", 4)
		if len(parts) != 4 {
			continue
		}
		seq, err1 := strconv.ParseInt(parts[0], 10, 64)
		term, err2 := strconv.ParseInt(parts[1], 10, 64)
		since, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || seq <= o.seq || seq > upTo {
			continue
		}
		missed = append(missed, newLeader(parts[3], term, since))
	}
	return missed, nil
}

// deliver sends l unless it repeats the last leader delivered (a
// re-sent Proclaim of the same value, or an older term).
func (o *observer) deliver(ctx context.Context, l Leader) bool {
	if l.Term < o.last.Term || l.Term == o.last.Term && l.Value == o.last.Value {
		return true
	}
	select {
	case o.out <- l:
		o.last = l
		return true
	case <-ctx.Done():
		return false
	case <-o.e.h.C.Background().Closing():
		return false
	}
}
