package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/core/hold"
)

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
	Lost      bool  // ended with errs.ErrLockLost
	Err       error // why it ended: errs.ErrNotHeld (released) or an errs.ErrLockLost
}

// Hooks receive events; nil fields are skipped. They run on the goroutine
// that caused the event (a caller's, the watchdog's, a timer's) and must
// be fast and safe for concurrent use.
type Hooks struct {
	WaitStart   func(ctx context.Context, w WaitInfo) context.Context
	WaitEnd     func(ctx context.Context, w WaitEnd)
	HoldEnd     func(h HoldEnd)
	RenewalTick func(t RenewalTick)
}

// counters are a Client's cumulative counters and its number of waits in
// progress.
type counters struct {
	waits       [numWaitResults]atomic.Uint64
	waiting     atomic.Int64
	lost        atomic.Uint64
	renewed     atomic.Uint64
	renewFailed atomic.Uint64
	undoFailed  atomic.Uint64 // undos that never got an answer (undo.go)
	// releaseFailed: releases whose reply was lost that could not be
	// completed (release.go)
	releaseFailed atomic.Uint64
	// renewUnacked: renewals the primary's replicas did not acknowledge
	// in time (watchdog.go, ackWait)
	renewUnacked atomic.Uint64

	closeMu sync.Mutex
	onClose []func()
}

// Stats is a snapshot of a Client's counters.
type Stats struct {
	Waits                 [numWaitResults]uint64 // by WaitResult
	HoldsLost             uint64
	Renewals              uint64
	RenewalFailures       uint64
	UndosFailed           uint64 // undos of interrupted acquisitions that never reached Redis
	ReleasesFailed        uint64 // releases whose reply was lost that could not be completed
	RenewalsNotReplicated uint64 // renewals not acknowledged by the primary's replicas in time
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

// RenewalTick describes one watchdog round (hold.RenewalTick), one of the
// payloads of Hooks.
type RenewalTick = hold.RenewalTick
