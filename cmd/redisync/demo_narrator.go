package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// narrator prints the demo's story, one whole line at a time from any
// goroutine: the events of the simulated processes, narration, section
// titles, what inspect shows and the summary.
type narrator struct {
	out   io.Writer
	mu    sync.Mutex // serialises output and guards names
	start time.Time
	names map[string]string // client id → process name
}

// since is the time since the demo started, as printed.
func (n *narrator) since() string {
	return fmt.Sprintf("+%.3fs", time.Since(n.start).Seconds())
}

// logf prints one event of process who.
func (n *narrator) logf(who, format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "%-9s %-8s %s\n", n.since(), who, fmt.Sprintf(format, args...))
}

// banner prints a line of narration that belongs to no process.
func (n *narrator) banner(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "%-9s %s\n", n.since(), fmt.Sprintf(format, args...))
}

// section prints the title of a section of the demo.
func (n *narrator) section(title string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "\n== %s\n", title)
}

// printf prints text formatted as fmt.Fprintf does.
func (n *narrator) printf(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, format, args...)
}

// name records the process name of a client, for quote.
func (n *narrator) name(clientID, process string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[clientID] = process
}

// quote prints text (inspect's output) indented, each client followed by
// its process's name.
func (n *narrator) quote(text string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, name := range n.names {
		text = strings.ReplaceAll(text, "client "+id, "client "+id+" ("+name+")")
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(n.out, "%-9s   | %s\n", "", line)
	}
}

// write prints the figures of the run, the summary.
func (s demoStats) write(n *narrator) {
	line := func(what, format string, args ...any) {
		n.printf("  %-12s %s\n", what, fmt.Sprintf(format, args...))
	}
	line("lock", "%d acquisitions by 3 workers, never two holders at once; %d watchdog renewals seen", s.lockAcquisitions, s.renewals)
	line("crash", "the crashed holder's lock was taken over %s after the crash, when its lease ran out", secs(s.crashExpiry))
	line("rwlock", "%d read holds, up to %d readers at once; the writer always wrote alone", s.rwReaders, s.rwMaxReaders)
	line("semaphore", "%d jobs, at most %d running at once with %d permits", s.semJobs, s.semMax, s.semPermits)
	line("expirable", "the crashed holder's permit came back by itself %s after the crash", secs(s.expiryReturn))
	line("latch", "released %d waiters, all within %s of the last count-down", s.latchWaiters, secs(s.latchSpread))
	free := "the free account stayed usable meanwhile"
	if !s.multiFree {
		free = "the free account was briefly busy when another process tried it"
	}
	line("multilock", "the transfer held both accounts after %s of waiting for the busy one; %s", secs(s.multiWaited), free)
	n.printf("\ndemo finished in %s\n", secs(time.Since(n.start)))
}
