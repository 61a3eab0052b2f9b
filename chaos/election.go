package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/redisync/redisync/election"
)

// The election (package election) in the workload: workers campaign now
// and then (a Campaign bounded by 0.1 to 1.5 s), lead for a hold time and
// resign; an observer on client 0 follows it with Observe for the whole
// run. Each leadership is a belief (beliefs.go) from Campaign's return to
// the Resign call or to the moment its Done closed, so the belief check
// finds two live leaderships at once; the terms, like fencing tokens,
// must be unique and increase in real-time order; and Observe must
// deliver the leaders in term order, every term won at least once.

// electionName is the workload's election.
const electionName = "chaos:election"

// electionWaiterTimeout is the election's fair lock's waiter timeout
// (rlock's default): a candidate's queue entry whose leave was lost is
// dropped within it.
const electionWaiterTimeout = 5 * time.Second

// observerWorker is the history's worker number of the observer.
const observerWorker = 2000

// observer follows the election with Observe for the whole run.
type observer struct {
	start  int64 // when Observe returned
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	got    []Op // ElectObserve ops, in delivery order
}

// startObserver starts following the election on client 0.
func (r *run) startObserver() {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel, done: make(chan struct{})}
	r.parts.obs = o
	ch := election.New(r.clients[0], electionName).Observe(ctx)
	o.start = r.h.Now()
	go func() {
		defer close(o.done)
		for l := range ch {
			at := r.h.Now()
			op := Op{Worker: observerWorker, Object: electionName, Kind: ElectObserve, Token: l.Term, Err: l.Value, Call: at, Return: at}
			r.h.Add(op)
			o.mu.Lock()
			o.got = append(o.got, op)
			o.mu.Unlock()
		}
	}()
}

// stopObserver ends the observer.
func (r *run) stopObserver() {
	if o := r.parts.obs; o != nil {
		o.cancel()
		<-o.done
	}
}

// electionOp campaigns (bounded by a wait of 0.1 to 1.5 s), leads for a
// hold time (cut short if the leadership ends) and resigns.
func (w *worker) electionOp() {
	ctx, cancel := context.WithTimeout(context.Background(), between(w.rng, 100*time.Millisecond, 1500*time.Millisecond))
	defer cancel()
	call := w.run.h.Now()
	l, err := w.election.Campaign(ctx, fmt.Sprintf("w%d", w.id))
	ret := w.run.h.Now()
	op := Op{Worker: w.id, Object: electionName, Kind: ElectWin, Call: call, Return: ret}
	switch {
	case err == nil:
		op.Outcome, op.Token = OK, l.Term()
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		op.Outcome = Refused // not won within its wait
	default:
		op.Outcome, op.Err = Unknown, err.Error()
	}
	w.run.h.Add(op)
	if err != nil {
		return
	}
	lostAt := w.keep(l, w.holdTime())
	rc := w.run.h.Now()
	w.believed(belief{object: electionName, mode: beliefExclusive, from: ret, token: op.Token, acqCall: call}, rc, lostAt, l)
	rctx, rcancel := context.WithTimeout(context.Background(), opTimeout)
	err = l.Resign(rctx)
	rcancel()
	w.run.h.Add(Op{Worker: w.id, Object: electionName, Kind: ElectResign, Token: op.Token, Outcome: outcome(true, err), Err: errText(err),
		Call: rc, Return: w.run.h.Now(), AcqCall: call})
}

// twoPrimaries names a fault that gave two primaries at once (a split
// brain) between from and to ("" if none). Observe reads the election's
// record on whichever primary its connection reaches, and after a split
// brain heals a Sentinel client's connections opened before it reach
// the old primary until it is demoted: a term won meanwhile on the new
// one that the observer missed is counted apart, naming the fault.
func (r *run) twoPrimaries(from, to int64) string {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	for _, f := range r.faults {
		if slices.Contains(splitBrainKinds, f.Kind) && f.Start <= to && f.End >= from {
			return fmt.Sprintf("won during %s [%.3fs, %.3fs]: two primaries, and Observe reads whichever its connection reaches", f.Kind, sec(f.Start), sec(f.End))
		}
	}
	return ""
}

// checkElection checks the terms and what the observer delivered, and
// returns the summary line. Two live leaderships at once are the belief
// check's.
func (hc historyCheck) checkElection(ops []Op) string {
	r := hc.r
	var wins []Op
	won := map[int64]Op{}
	for _, op := range ops {
		if op.Object == electionName && op.Kind == ElectWin && op.Outcome == OK {
			wins = append(wins, op)
			won[op.Token] = op
		}
	}
	bad := hc.tokens(electionName, "election terms", wins)
	var got []Op
	start := int64(1 << 62)
	if o := r.parts.obs; o != nil {
		o.mu.Lock()
		got = append(got, o.got...)
		o.mu.Unlock()
		start = o.start
	}
	// Observe: in term order (a term again only with another value).
	seen := map[int64]bool{}
	for i, op := range got {
		seen[op.Token] = true
		if i > 0 && op.Token < got[i-1].Token {
			bad++
			r.violate(Violation{At: op.Call, Check: "election observe", Detail: fmt.Sprintf(
				"Observe delivered term %d after term %d", op.Token, got[i-1].Token), Excerpt: []string{got[i-1].String(), op.String()}})
		}
	}
	// Every term won since the observer started is delivered, across
	// restarts without data too (the records' sequence starts again below
	// the observer's, which then reads the log anew).
	var missing []Op
	for _, op := range wins {
		if !seen[op.Token] && op.Call > start {
			missing = append(missing, op)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Call < missing[j].Call })
	for _, op := range missing {
		r.violate(Violation{At: op.Return, Check: "election observe", Detail: fmt.Sprintf(
			"term %d (w%d, won at %.3fs) never delivered by Observe", op.Token, op.Worker, sec(op.Return)),
			Apart: r.twoPrimaries(op.Call, op.Return)})
	}
	return fmt.Sprintf("election: %d leaderships won (terms unique and increasing in real-time order: %v), %d leaders delivered by Observe in term order, %d terms won not delivered",
		len(wins), bad == 0, len(got), len(missing))
}
