package main

import (
	"fmt"

	"github.com/redisync/redisync"
)

// printClientStats prints the processes' Client.Stats, summed (-stats).
// Processes that crashed were closed, and count all the same.
func (d *demo) printClientStats() {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s redisync.Stats
	for _, c := range d.clients {
		cs := c.Stats()
		s.Acquired += cs.Acquired
		s.Busy += cs.Busy
		s.TimedOut += cs.TimedOut
		s.Cancelled += cs.Cancelled
		s.Errors += cs.Errors
		s.HoldsLost += cs.HoldsLost
		s.Renewals += cs.Renewals
		s.RenewalFailures += cs.RenewalFailures
		s.PubSubReconnects += cs.PubSubReconnects
		s.Holds += cs.Holds
		s.Waiting += cs.Waiting
		s.PubSubChannels += cs.PubSubChannels
	}
	line := func(what, format string, args ...any) {
		fmt.Fprintf(d.out, "  %-14s %s\n", what, fmt.Sprintf(format, args...))
	}
	line("clients", "%d", len(d.clients))
	line("acquisitions", "%d acquired, %d busy, %d timed out, %d cancelled, %d errors",
		s.Acquired, s.Busy, s.TimedOut, s.Cancelled, s.Errors)
	line("holds", "%d lost; %d held now", s.HoldsLost, s.Holds)
	line("renewals", "%d, %d failed", s.Renewals, s.RenewalFailures)
	line("pub/sub", "%d reconnects; %d channels subscribed now", s.PubSubReconnects, s.PubSubChannels)
	line("waiting", "%d now", s.Waiting)
}
