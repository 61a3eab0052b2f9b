package core

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Observation: the counters behind redisync.Client.Stats and the hooks
// behind redisync.WithObserver.
//
// Each concept is recorded in one place: a wait (every acquisition of a
// lock, a semaphore's permits, a latch wait) from [Client.BeginWait] to
// [WaitObs.End], which the engine ([Lock.Acquire]) and the semaphore's and
// latch's waits call; a hold's end in [Hold.end] (holdEnded); a renewal
// round in [watchdog.renew] ([watchdog.renewed]). [Client.Stats] reads the
// counters (client.go); pub/sub reconnects and channels are read from the
// multiplexer's Stats. What is here knows no Client: the holds and the
// waits are given the counters and the hooks.
//
// Counters are atomics, always kept. Hooks are called only when set, so
// without an observer a wait costs two atomic adds and no allocation.

// WaitObs is one observed wait, from BeginWait to End.
type WaitObs struct {
	ctr   *counters
	hooks *Hooks
	ctx   context.Context
	info  WaitInfo
	start time.Time
}

// End ends the observation with the wait's outcome: (true, nil) acquired;
// (false, nil) busy when the wait was a single attempt, else timed out; an
// error wrapping the context's error once it ended, cancelled; any other
// error, error.
func (o WaitObs) End(ok bool, err error) {
	o.ctr.waiting.Add(-1)
	r := classify(o.ctx, o.info, ok, err)
	o.ctr.waits[r].Add(1)
	h := o.hooks
	if h == nil || h.WaitEnd == nil {
		return
	}
	e := WaitEnd{WaitInfo: o.info, Result: r, Duration: time.Since(o.start)}
	if r == WaitCancelled || r == WaitError {
		e.Err = err
	}
	h.WaitEnd(o.ctx, e)
}

func classify(ctx context.Context, info WaitInfo, ok bool, err error) WaitResult {
	switch {
	case err == nil && ok:
		return WaitAcquired
	case err == nil && !info.Forever && info.Wait == 0:
		return WaitBusy
	case err == nil:
		return WaitTimedOut
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return WaitCancelled
	}
	return WaitError
}

// primitives caches Primitive's labels: a handful of kinds and sides, so
// observed waits and holds do not build a string each time.
var primitives struct {
	mu sync.Mutex
	m  map[[2]string]string
}

// primitiveLabel returns the label of a primitive kind and engine side, as
// observers see it: the kind with spaces turned into underscores, then
// ".read" or ".write" for a side: "rlock", "fair_lock", "spin_lock",
// "rwlock.read", "rwlock.write", "semaphore", "expirable_semaphore",
// "countdown".
func primitiveLabel(kind, what string) string {
	k := [2]string{kind, what}
	primitives.mu.Lock()
	defer primitives.mu.Unlock()
	if p, ok := primitives.m[k]; ok {
		return p
	}
	p := strings.ReplaceAll(kind, " ", "_")
	if w := strings.TrimSpace(what); w != "" {
		p += "." + w
	}
	if primitives.m == nil {
		primitives.m = make(map[[2]string]string)
	}
	primitives.m[k] = p
	return p
}

// WaitResult is how an observed wait ended.
type WaitResult uint8

// The results of a wait, in the order of redisync.WaitResult.
const (
	WaitAcquired  WaitResult = iota // acquired (a latch: found open)
	WaitBusy                        // a single attempt (wait 0) did not succeed
	WaitTimedOut                    // the wait ran out
	WaitCancelled                   // ctx ended first
	WaitError                       // any other error (Redis unreachable, client closed, ...)
	numWaitResults
)

// WaitInfo describes an observed wait when it starts.
type WaitInfo struct {
	Primitive string        // "rlock", "rwlock.read", "semaphore", ... (primitiveLabel)
	Name      string        // the primitive's name
	Forever   bool          // wait until ctx ends
	Wait      time.Duration // the longest wait when not Forever (0: one attempt)
}

// WaitEnd describes an observed wait when it ends.
type WaitEnd struct {
	WaitInfo
	Result   WaitResult
	Duration time.Duration
	Err      error // nil unless Result is WaitCancelled or WaitError
}

// HoldEnd describes the end of a hold (Hold.end).
type HoldEnd struct {
	Primitive string
	Name      string // the primitive's name (its hash key)
	Owner     string // the owner's field in the hash
	Duration  time.Duration
	Lost      bool // ended with [errs.ErrLockLost], not released
	// Shutdown: released by [Shutdown] (Lost false; Err is [ErrShutdown],
	// which wraps [errs.ErrLockLost] for the owner)
	Shutdown bool
	Err      error // why it ended: [errs.ErrNotHeld] (released), [ErrShutdown] or an [errs.ErrLockLost]
}

// Hooks receive events; nil fields are skipped. They run on the goroutine
// that caused the event (a caller's, the watchdog's, a timer's) and must
// be fast and safe for concurrent use.
type Hooks struct {
	WaitStart   func(ctx context.Context, w WaitInfo) context.Context
	WaitEnd     func(ctx context.Context, w WaitEnd)
	HoldEnd     func(h HoldEnd)
	RenewalTick func(t RenewalTick)
	Eviction    func(p EvictionPolicy) // a primary's maxmemory-policy can evict (eviction.go)
}

// counters are a Client's cumulative counters and its number of waits in
// progress.
type counters struct {
	waits       [numWaitResults]atomic.Uint64
	waiting     atomic.Int64
	lost        atomic.Uint64
	shutdown    atomic.Uint64 // holds Shutdown released ([ErrShutdown])
	renewed     atomic.Uint64
	renewFailed atomic.Uint64
	undoFailed  atomic.Uint64 // undos that never got an answer ([Lock.undo], [request.Requests.Undo])
	// releaseFailed: releases whose reply was lost that could not be
	// completed ([request.Requests.CompleteRelease])
	releaseFailed atomic.Uint64
	// renewUnacked: renewals the primary's replicas did not acknowledge
	// in time ([watchdog.apply])
	renewUnacked atomic.Uint64
	// lostUnacked: holds lost because no renewal was acknowledged within
	// their lease ([Hold.endLease])
	lostUnacked atomic.Uint64

	closeMu sync.Mutex
	onClose []func()
}

// Stats is a snapshot of a Client's counters.
type Stats struct {
	Waits                 [numWaitResults]uint64 // by WaitResult
	HoldsLost             uint64
	HoldsShutdown         uint64 // holds released by Shutdown (not lost)
	Renewals              uint64
	RenewalFailures       uint64
	UndosFailed           uint64 // undos of interrupted acquisitions that never reached Redis
	ReleasesFailed        uint64 // releases whose reply was lost that could not be completed
	RenewalsNotReplicated uint64 // renewals not acknowledged by the primary's replicas in time
	HoldsLostUnreplicated uint64 // holds lost because no renewal was acknowledged within their lease
	EvictingPrimaries     uint64 // primaries whose maxmemory-policy can evict (eviction.go)
	PubSubReconnects      uint64
	Holds                 int // live holds
	Waiting               int // waits in progress
	PubSubChannels        int // channels subscribed for waiters
}

// runOnClose runs the OnClose functions; Close calls it once.
func (ctr *counters) runOnClose() {
	ctr.closeMu.Lock()
	fs := ctr.onClose
	ctr.onClose = nil
	ctr.closeMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// RenewalTick describes one watchdog round.
type RenewalTick struct {
	Renewed  int // holds renewed
	Failed   int // holds whose renewal call failed with an error; retried soon
	Lost     int // holds found gone, or not renewed within their lease: lost
	Duration time.Duration
}
