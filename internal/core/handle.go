package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
)

// Handle is what every primitive's handle starts from: its client, its
// name, the word naming the primitive in errors, and the handle's own owner
// token. Its methods are the checks every operation makes before sending
// anything, stated once for all primitives.
type Handle struct {
	C *Client
	// Name is the name every key and channel of the primitive is derived
	// from: the name given, after the client's key prefix
	// ([Options].KeyPrefix); Given is the name as given (the handles'
	// Name methods return it).
	Name  string
	Given string
	Kind  string // "rlock", "rwlock", "semaphore", ...: names the primitive in errors
	Token uint64 // the handle's own owner token

	// OptErr is the first invalid option given to the handle's
	// constructor, reported by Check (options are applied without I/O and
	// cannot fail at construction).
	OptErr error

	// OwnSlot says that every key the primitive's scripts use shares its
	// name's cluster slot whatever braces the name holds, so Check accepts
	// names with stray braces on a Cluster too: the GCRA limiter (its key
	// and its request records) and the latch (its counter and its request
	// records; it publishes itself on a channel in another slot).
	OwnSlot bool

	// Watchdog is the lease of the handle's watchdog-renewed holds (its
	// acquisitions without a fixed lease), renewed every third of it; 0:
	// the client's watchdog timeout. Each hold is renewed on its own
	// lease, so handles of one client may set different ones (a leader
	// election's lease, a lock's WithWatchdogTimeout). The caller checks
	// it with CheckLease.
	Watchdog time.Duration
}

// NewHandle returns the state of a handle on the primitive of the given kind
// called name, on c (possibly nil). It does no I/O; a nil client or an empty
// name is reported by Check. The client's key prefix is added to name
// here, before any key or channel is derived from it.
func NewHandle(c *Client, kind, name string) Handle {
	full := name
	if c != nil && c.opts.KeyPrefix != "" && name != "" {
		full = c.opts.KeyPrefix + name
	}
	return Handle{C: c, Name: full, Given: name, Kind: kind, Token: NewToken()}
}

// Check returns the error to report before sending anything, for an
// operation called with ctx: [errs.ErrInvalidArgument] for a nil ctx
// (every operation calls Check first with its ctx, so a nil one is an
// error rather than a nil-pointer panic further on), the client's
// ([errs.ErrInvalidArgument] for a nil client or a bad option, [errs.ErrClosed] after
// Close), [errs.ErrInvalidArgument] for an empty name, or on a Cluster for a
// name whose braces form no hash tag ([keys.StrayBraces]: the keys and
// channels Redisson derives from it would land in another slot, and a
// script could fail part-way), unless OwnSlot, or the handle's invalid
// option (OptErr).
func (h *Handle) Check(ctx context.Context) error {
	if ctx == nil {
		return h.Invalid("nil context")
	}
	if err := h.C.Check(); err != nil {
		return err
	}
	if h.Given == "" {
		return fmt.Errorf("%w: %s: empty name", errs.ErrInvalidArgument, h.Kind)
	}
	if h.C.cluster && !h.OwnSlot && keys.StrayBraces(h.Name) {
		return h.Invalid("on a Cluster, braces in a name must form a hash tag (\"{tag}\" with something inside), " +
			"else the keys derived from it land in another slot")
	}
	return h.OptErr
}

// CheckWait rejects a negative wait, the argument of every TryX.
func (h *Handle) CheckWait(wait time.Duration) error {
	if wait < 0 {
		return h.Invalid("negative wait %v", wait)
	}
	return nil
}

// Invalid returns an error wrapping [errs.ErrInvalidArgument] that names the
// primitive.
func (h *Handle) Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s %q: %s", errs.ErrInvalidArgument, h.Kind, h.Name, fmt.Sprintf(format, args...))
}

// Lease returns fixed when positive, else the handle's watchdog lease
// (Watchdog, or the client's watchdog timeout): the lease of an
// acquisition with or without a fixed lease.
func (h *Handle) Lease(fixed time.Duration) time.Duration {
	if fixed > 0 {
		return fixed
	}
	if h.Watchdog > 0 {
		return h.Watchdog
	}
	return h.C.opts.WatchdogTimeout
}

// CheckPermitLease checks an expirable permit's lease: 0 means the permit
// never expires; otherwise the lease rule of CheckLease. It returns an error
// wrapping [errs.ErrInvalidArgument] that names the primitive, or nil.
func (h *Handle) CheckPermitLease(d time.Duration) error {
	if d == 0 {
		return nil
	}
	if msg := LeaseError(d); msg != "" {
		return h.Invalid("permit %s (0: never expires)", msg)
	}
	return nil
}

// The bounds of every lease (the locks' WithLease, the watchdog timeout, an
// expirable permit's lease): at least a millisecond, Redis's unit, and at
// most 2^43 ms (about 278 years), so that a lease added to the server's
// clock in epoch milliseconds stays exact in a Lua number (a double, exact
// to 2^53) and within time.Duration.
const (
	MinLease = time.Millisecond
	MaxLease = (1 << 43) * time.Millisecond
)

// LeaseError returns nil for a lease within [MinLease, MaxLease], else the
// reason it is not, for an error wrapping [errs.ErrInvalidArgument].
func LeaseError(d time.Duration) string {
	switch {
	case d < MinLease:
		return fmt.Sprintf("lease %v, must be at least 1ms", d)
	case d > MaxLease:
		return fmt.Sprintf("lease %v, must be at most 2^43 ms (about 278 years)", d)
	}
	return ""
}

// CheckLease is the one rule for a fixed lease given as an option (the
// locks' WithLease): at least MinLease and at most MaxLease. Leases are sent
// to Redis in whole milliseconds, rounded up (Millis). It returns an error
// wrapping [errs.ErrInvalidArgument] that names kind, or nil.
func CheckLease(kind string, d time.Duration) error {
	if msg := LeaseError(d); msg != "" {
		return fmt.Errorf("%w: %s %s", errs.ErrInvalidArgument, kind, msg)
	}
	return nil
}
