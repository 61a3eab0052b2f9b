package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redisync/redisync/internal/keys"
)

// writeText prints the report for people.
func (r *Report) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label+":", fmt.Sprintf(format, args...))
	}
	line("name", "%s", r.Name)
	if r.Type == kindNone {
		line("type", "nothing stored (%s)", r.Reason)
		return tw.Flush()
	}
	if r.Guessed {
		line("type", "%s (guessed: %s)", r.Type.title(), r.Reason)
	} else {
		line("type", "%s (%s)", r.Type.title(), r.Reason)
	}
	if r.writeOwn(tw, line) {
		return tw.Flush()
	}
	switch r.Type {
	case kindLock, kindFair, kindRWLock:
		r.writeHolders(tw)
		if r.Type == kindFair {
			r.writeQueue(tw)
		}
		if r.FenceToken != nil {
			line("fencing", "last fencing token issued %d (%s)", *r.FenceToken, keys.FenceCounter(r.Name))
		}
	case kindSemaphore, kindExpirable:
		r.writePermits(tw)
	case kindRateLimiter:
		switch {
		case !r.Exists:
		case *r.TTLMillis < 0:
			line("expiry", "none: the config stays until deleted")
		default:
			line("expiry", "in %s unless the limiter is used (keepAliveTime)", msText(*r.TTLMillis))
		}
	case kindLatch, kindCounter:
		r.writeCount(line)
	}
	r.writeWaiters(line)
	return tw.Flush()
}

// writeWaiters prints the waiters line: a lock's queued processes and
// the other subscribers of its channel, a fair lock's queued owners, or
// the subscribers of the primitive's channel.
func (r *Report) writeWaiters(line func(label, format string, args ...any)) {
	switch {
	case r.Type == kindLock && len(r.WaitingClients) > 0:
		line("waiters", "%s: %d queued (woken one per release, first first: %s), the others subscribed to %s",
			clients(r.Waiters), len(r.WaitingClients), r.WaitingClients[0].text(), r.Channel)
	case r.Type == kindFair:
		line("waiters", "%s subscribed to the queued owners' channels %s:<owner>", clients(r.Waiters), r.Channel)
	case r.Channel != "":
		line("waiters", "%s subscribed to %s", clients(r.Waiters), r.Channel)
	}
}

// writeCount prints a latch's count, or the value of a latch or semaphore
// and the waiters on both channels.
func (r *Report) writeCount(line func(label, format string, args ...any)) {
	if r.Type == kindCounter {
		line("value", "%d: a latch's count or a semaphore's available permits", *r.Count)
		line("waiters", "%s subscribed to %s or %s", clients(r.Waiters), keys.LatchChannel(r.Name), keys.SemaphoreChannel(r.Name))
		return
	}
	state := "open"
	if *r.Count > 0 {
		state = "closed"
	}
	line("count", "%d (%s)", *r.Count, state)
}

// writeOwn prints the state of the kinds that have a text of their own,
// rate limiters and elections, and reports whether r is one.
func (r *Report) writeOwn(w io.Writer, line func(label, format string, args ...any)) bool {
	switch {
	case r.RateLimit != nil:
		r.writeRateLimit(line)
	case r.Election != nil:
		r.writeElection(w)
	default:
		return false
	}
	return true
}

// writeHolders prints a lock's, fair lock's or read-write lock's state and
// holders.
func (r *Report) writeHolders(w io.Writer) {
	state := "free"
	if r.Exists {
		state = fmt.Sprintf("held by %s", plural(owners(r.Holders), "owner"))
		if r.Mode != "" {
			state = fmt.Sprintf("%s-locked, %s", r.Mode, state)
		}
		state += ", " + leaseText(*r.TTLMillis)
	}
	fmt.Fprintf(w, "state:\t%s\n", state)
	for _, h := range r.Holders {
		label := "holder"
		if h.Side != "" {
			label = map[string]string{"read": "reader", "write": "writer"}[h.Side]
		}
		extra := ""
		if len(h.HoldTTLsMillis) > 0 {
			leases := make([]string, len(h.HoldTTLsMillis))
			for i, ms := range h.HoldTTLsMillis {
				leases[i] = msText(ms)
			}
			extra = "\thold leases " + strings.Join(leases, ", ")
		}
		fmt.Fprintf(w, "%s:\tclient %s\towner token %s\tcount %d%s\n", label, h.ClientID, tokenText(h.OwnerToken), h.Count, extra)
	}
}

// tokenText is an owner token as printed: "-" when there is none.
func tokenText(token string) string {
	if token == "" {
		return "-"
	}
	return token
}

// writeQueue prints a fair lock's waiting line, head first, with each
// entry's deadline. The scripts drop dead entries from the head of the
// queue only, so a dead entry behind a live one stays until it is at the
// head.
func (r *Report) writeQueue(w io.Writer) {
	r.writeWaiting(w, waitingText{label: "queue", entry: "queued", noun: "owner",
		empty: "empty: no owner waits its turn", order: "head first"})
}

// waitingText is how a fair queue is printed: for a fair lock's waiting
// owners, or an election's candidates.
type waitingText struct{ label, entry, noun, empty, order string }

// writeWaiting prints a fair queue (r.Queue), head first, with each
// entry's deadline and how many entries are dead.
func (r *Report) writeWaiting(w io.Writer, t waitingText) {
	dead := 0
	for _, e := range r.Queue {
		if e.Dead {
			dead++
		}
	}
	switch {
	case len(r.Queue) == 0:
		fmt.Fprintf(w, "%s:\t%s\n", t.label, t.empty)
	case dead == 0:
		fmt.Fprintf(w, "%s:\t%s waiting, %s\n", t.label, plural(len(r.Queue), t.noun), t.order)
	default:
		fmt.Fprintf(w, "%s:\t%s waiting, %s, %d of them dead\n", t.label, plural(len(r.Queue), t.noun), t.order, dead)
	}
	atHead := true // no live entry before this one
	for i, e := range r.Queue {
		atHead = atHead && e.Dead
		fmt.Fprintf(w, "%s:\t#%d\tclient %s\towner token %s\t%s\n", t.entry, i+1, e.ClientID, tokenText(e.OwnerToken), e.deadlineText(atHead))
	}
}

// deadlineText says how long the entry has left, or that it is dead and
// when it goes: atHead is true when only dead entries are before it.
func (e QueueEntry) deadlineText(atHead bool) string {
	if !e.Dead {
		return "deadline in " + msText(e.DeadlineMillisLeft)
	}
	text := "dead: deadline passed " + msText(-e.DeadlineMillisLeft) + " ago"
	if e.noDeadline {
		text = "dead: no deadline"
	}
	if atHead {
		return text + "; the next operation drops it"
	}
	return text + "; dropped once it is at the head"
}

// writePermits prints a semaphore's permits and an expirable semaphore's
// acquired ones.
func (r *Report) writePermits(w io.Writer) {
	avail := fmt.Sprintf("%d available", *r.Permits)
	if r.Type == kindExpirable {
		avail += fmt.Sprintf(", %d acquired", len(r.Acquired))
	}
	fmt.Fprintf(w, "permits:\t%s\n", avail)
	for _, p := range r.Acquired {
		switch {
		case p.ExpiresAt == nil:
			fmt.Fprintf(w, "permit:\t%s\tnever expires\n", p.ID)
		case p.TTLMillis > 0:
			fmt.Fprintf(w, "permit:\t%s\texpires in %s (%s)\n", p.ID, msText(p.TTLMillis), p.ExpiresAt.Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(w, "permit:\t%s\texpired %s ago; returns with the next operation\n", p.ID, msText(-p.TTLMillis))
		}
	}
}

// leaseText describes a key's PTTL.
func leaseText(ms int64) string {
	if ms < 0 {
		return "no expiry"
	}
	return "lease " + msText(ms) + " left"
}

// msText prints milliseconds as a duration; -2 (a missing key) as "gone".
func msText(ms int64) string {
	switch {
	case ms == -2:
		return "gone"
	case ms == -1:
		return "no expiry"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func clients(n int64) string { return plural(int(n), "client") }

// waitText says how many clients wait: "1 client waits", "2 clients wait".
func waitText(n int64) string {
	if n == 1 {
		return "1 client waits"
	}
	return clients(n) + " wait"
}

// owners counts the distinct owners among holders (a writer that also
// holds the read side is one owner).
func owners(hs []Holder) int {
	seen := make(map[string]bool, len(hs))
	for _, h := range hs {
		seen[h.Owner] = true
	}
	return len(seen)
}

// truncate shortens s, a value quoted in a message, to 40 bytes.
func truncate(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// text describes a queued Client in a line.
func (w WaitingClient) text() string {
	state := "listening"
	if !w.Listening {
		state = "not listening: passed over at the next release"
	}
	return fmt.Sprintf("client %s, queued %s ago, %s", w.ClientID, msText(w.JoinedMillis), state)
}
