package chaos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Outcome is how a recorded call ended.
type Outcome int

const (
	// OK means the call succeeded (an acquisition acquired, a release released,
	// a wait saw the latch open).
	OK Outcome = iota
	// Refused means the call completed without effect: a TryX that ran out of
	// time, a TrySetCount on a set latch, a TryWait that timed out.
	Refused
	// NotHeld means a release answered ErrNotHeld (the hold or permit was gone).
	NotHeld
	// Unknown means the call failed with an error, so its effect is
	// indeterminate.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case NotHeld:
		return "not-held"
	}
	return "unknown"
}

// Kind names a recorded call.
type Kind string

// The kinds of recorded calls.
const (
	LockAcquire   Kind = "lock"    // rlock TryLock; Token is the fencing token
	LockRelease   Kind = "unlock"  // rlock Unlock
	LockLoss      Kind = "lost"    // synthetic: a hold ended without a release
	ReadAcquire   Kind = "rlock"   // rwlock TryRLock
	ReadRelease   Kind = "runlock" // rwlock RUnlock
	ReadLoss      Kind = "rlost"   // synthetic: a read hold ended without a release
	WriteAcquire  Kind = "wlock"   // rwlock TryLock
	WriteRelease  Kind = "wunlock" // rwlock Unlock
	WriteLoss     Kind = "wlost"   // synthetic: a write hold ended without a release
	SemAcquire    Kind = "acquire" // Semaphore.TryAcquire; N permits
	SemRelease    Kind = "release" // Semaphore.Release; N permits
	XAcquire      Kind = "xacquire"
	XRelease      Kind = "xrelease"
	XExpire       Kind = "xexpire" // synthetic: permit IDs[0] expired
	LatchSet      Kind = "set"     // TrySetCount(N)
	LatchDown     Kind = "down"    // CountDown
	LatchWait     Kind = "wait"    // TryWait
	LatchCount    Kind = "count"   // Count; N is the count read
	RegisterWrite Kind = "write"   // a fenced register write with Token
	RateAcquire   Kind = "rate"    // ratelimit Limiter.TryAcquire of N permits
	Wiped         Kind = "wiped"   // synthetic: the object's state vanished with its server (a restart without its data, an eviction)

	ElectWin     Kind = "campaign" // election Campaign; Token is the term
	ElectResign  Kind = "resign"   // Leadership.Resign
	ElectObserve Kind = "observed" // a leader Observe delivered; Token is its term
	JobRun       Kind = "job"      // a scheduler ran the job; N is the tick, Token the lock's fencing token
	JobKill      Kind = "killed"   // a scheduler killed while running the job (its Client closed)
	FenceSet     Kind = "fset"     // fence.Value.Set with Token
	FenceGet     Kind = "fget"     // fence.Value.Get; Token is the token read
)

// Op is one recorded call. Times are nanoseconds since the run started.
type Op struct {
	Worker  int
	Object  string // the primitive's name
	Kind    Kind
	N       int64    // permits, latch count, count read
	Token   int64    // fencing token
	IDs     []string // expirable permit ids
	NoLease bool     // an expirable acquisition without a lease: its permits never expire
	Outcome Outcome
	Err     string // the error of an Unknown or unexpected outcome
	Call    int64
	Return  int64
	// AcqCall, in a release, is when the acquisition of the released hold
	// was called: the hold may have expired from then plus the lease.
	AcqCall int64
}

func (op Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%9.3fs %9.3fs] w%-2d %-14s %-8s", sec(op.Call), sec(op.Return), op.Worker, op.Object, op.Kind)
	if op.N != 0 {
		fmt.Fprintf(&b, " n=%d", op.N)
	}
	if op.Token != 0 {
		fmt.Fprintf(&b, " token=%d", op.Token)
	}
	if len(op.IDs) > 0 {
		short := make([]string, len(op.IDs))
		for i, id := range op.IDs {
			short[i] = id[:8]
		}
		fmt.Fprintf(&b, " ids=%s", strings.Join(short, ","))
	}
	if op.NoLease {
		b.WriteString(" no-lease")
	}
	fmt.Fprintf(&b, " -> %s", op.Outcome)
	if op.Err != "" {
		fmt.Fprintf(&b, " (%s)", op.Err)
	}
	return b.String()
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }

// History records calls from many goroutines.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory starts a history whose times count from now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now returns the current time in the history's clock.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// At converts a wall-clock time to the history's clock.
func (h *History) At(t time.Time) int64 { return int64(t.Sub(h.start)) }

// Add records op.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns the recorded calls ordered by call time.
func (h *History) Ops() []Op {
	h.mu.Lock()
	ops := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}
