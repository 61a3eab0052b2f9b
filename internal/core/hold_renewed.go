package core

import "time"

// Renewed returns when the last write that set the hold's lease in Redis
// was sent (its acquisition, a re-entry or a renewal that succeeded) and
// the lease it set: Redis keeps the hold at least until last + lease, and
// no longer unless a later write extends it. A holder that must stop
// before another owner can take the lock (an election's leader) ends its
// work by then on its own clock, whether or not the watchdog has noticed.
func (h *Hold) Renewed() (last time.Time, lease time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastOK, h.lease
}
