package core

import (
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Handle is what every primitive's handle starts from: its client, its
// name, the word naming the primitive in errors, and the handle's own owner
// token. Its methods are the checks every operation makes before sending
// anything, stated once for all primitives.
type Handle struct {
	C     *Client
	Name  string
	Kind  string // "rlock", "rwlock", "semaphore", ...: names the primitive in errors
	Token uint64 // the handle's own owner token

	// OptErr is the first invalid option given to the handle's
	// constructor, reported by Check (options are applied without I/O and
	// cannot fail at construction).
	OptErr error
}

// NewHandle returns the state of a handle on the primitive of the given kind
// called name, on c (possibly nil). It does no I/O; a nil client or an empty
// name is reported by Check.
func NewHandle(c *Client, kind, name string) Handle {
	return Handle{C: c, Name: name, Kind: kind, Token: NewToken()}
}

// Check returns the error to report before sending anything: the client's
// (errs.ErrInvalidArgument for a nil client or a bad option, errs.ErrClosed after
// Close), errs.ErrInvalidArgument for an empty name, or the handle's invalid
// option (OptErr).
func (h *Handle) Check() error {
	if err := h.C.Check(); err != nil {
		return err
	}
	if h.Name == "" {
		return fmt.Errorf("%w: %s: empty name", errs.ErrInvalidArgument, h.Kind)
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

// Invalid returns an error wrapping errs.ErrInvalidArgument that names the
// primitive.
func (h *Handle) Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s %q: %s", errs.ErrInvalidArgument, h.Kind, h.Name, fmt.Sprintf(format, args...))
}

// Lease returns fixed when positive, else the client's watchdog timeout:
// the lease of an acquisition with or without a fixed lease.
func (h *Handle) Lease(fixed time.Duration) time.Duration {
	if fixed > 0 {
		return fixed
	}
	return h.C.opts.WatchdogTimeout
}

// CheckPermitLease checks an expirable permit's lease: 0 means the permit
// never expires; otherwise the lease rule of CheckLease. It returns an error
// wrapping errs.ErrInvalidArgument that names the primitive, or nil.
func (h *Handle) CheckPermitLease(d time.Duration) error {
	if d == 0 {
		return nil
	}
	if msg := LeaseError(d); msg != "" {
		return h.Invalid("permit %s (0: never expires)", msg)
	}
	return nil
}
