package main

import (
	"fmt"

	"github.com/redisync/redisync"
)

// writeClientStats prints the Client.Stats of the processes' clients,
// summed (-stats). Processes that crashed were closed, and count all the
// same.
func writeClientStats(n *narrator, clients []*redisync.Client) {
	var s redisync.Stats
	for _, c := range clients {
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
		n.printf("  %-14s %s\n", what, fmt.Sprintf(format, args...))
	}
	line("clients", "%d", len(clients))
	line("acquisitions", "%d acquired, %d busy, %d timed out, %d cancelled, %d errors",
		s.Acquired, s.Busy, s.TimedOut, s.Cancelled, s.Errors)
	line("holds", "%d lost; %d held now", s.HoldsLost, s.Holds)
	line("renewals", "%d, %d failed", s.Renewals, s.RenewalFailures)
	line("pub/sub", "%d reconnects; %d channels subscribed now", s.PubSubReconnects, s.PubSubChannels)
	line("waiting", "%d now", s.Waiting)
}
