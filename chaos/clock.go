package chaos

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core"
)

// Clock faults on the netns topology's servers: each redis-server runs
// with testdata/clockshim.c preloaded (built with the C compiler when the
// topology starts), which shifts and scales its wall clock under the
// control of a file of its own (see the shim's comment; libfaketime
// cannot be used: see there). The monotonic clocks are left alone, as a
// wall-clock step leaves them. Redis reads the wall clock for every
// expiry (PX, PEXPIRE, the keys' TTLs) and for TIME, so the server's
// clock decides when a lease ends in Redis.

// serverClock is one server's control file.
type serverClock struct {
	mu     sync.Mutex
	path   string
	seq    int64
	offset time.Duration // the fake clock minus the real one, at base
	base   int64         // real UnixNano the rate counts from
	ppm    int64         // rate beyond 1, in parts per million
}

// buildClockShim compiles the shim into dir and returns its path.
func buildClockShim(dir string) (string, error) {
	src, err := filepath.Abs(filepath.Join("testdata", "clockshim.c"))
	if err != nil {
		return "", err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	out := filepath.Join(dir, "clockshim.so")
	if b, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s clockshim.c: %v: %s", cc, err, b)
	}
	return out, nil
}

// newServerClock creates a control file at path (the real clock).
func newServerClock(path string) (*serverClock, error) {
	c := &serverClock{path: path}
	return c, c.write()
}

// write writes the parameters under the seqlock: seq odd, the values,
// seq even, each a write of its own, in that order.
func (c *serverClock) write() error {
	f, err := os.OpenFile(c.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 8)
	put := func(at int64, v int64) error {
		binary.LittleEndian.PutUint64(buf, uint64(v))
		_, err := f.WriteAt(buf, at)
		return err
	}
	c.seq++
	if err := put(0, c.seq); err != nil {
		return err
	}
	vals := make([]byte, 24)
	binary.LittleEndian.PutUint64(vals[0:], uint64(c.offset))
	binary.LittleEndian.PutUint64(vals[8:], uint64(c.base))
	binary.LittleEndian.PutUint64(vals[16:], uint64(c.ppm))
	if _, err := f.WriteAt(vals, 8); err != nil {
		return err
	}
	c.seq++
	return put(0, c.seq)
}

// rebase folds the current rate's drift into the offset, so a change of
// rate from now on does not step the clock.
func (c *serverClock) rebase() {
	now := time.Now().UnixNano()
	if c.base != 0 && c.ppm != 0 {
		c.offset += time.Duration((now - c.base) / 1_000_000 * c.ppm)
	}
	c.base = now
}

// jump steps the server's wall clock by d (forward if positive).
func (c *serverClock) jump(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebase()
	c.offset += d
	return c.write()
}

// rate makes the server's wall clock run ppm parts per million faster
// (slower if negative) from now on.
func (c *serverClock) rate(ppm int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebase()
	c.ppm = ppm
	return c.write()
}

// follow sets the server's wall clock to another's: its offset now, at
// the real rate (syncClocks).
func (c *serverClock) follow(other *serverClock) error {
	d := other.skew()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.base, c.ppm = d, time.Now().UnixNano(), 0
	return c.write()
}

// skew returns how far the server's clock is ahead of the real one now.
func (c *serverClock) skew() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.offset
	if c.base != 0 && c.ppm != 0 {
		d += time.Duration((time.Now().UnixNano() - c.base) / 1_000_000 * c.ppm)
	}
	return d
}

// clockSlack is how far off the servers' clocks are, added up (0 but in
// the netns topology with clock faults): a client computes a request's
// deadline from the server clock's offset it measured (every 30s), so a
// server clock stepped back or slowed since then makes a request record
// outlive its TTL by as much.
func (r *run) clockSlack() time.Duration {
	var d time.Duration
	if r.net != nil {
		for _, c := range r.net.clocks {
			s := c.skew()
			d += max(s, -s)
		}
	}
	return d
}

// The servers' clocks with one another. A lease granted on a primary is
// replicated as an absolute expiry on that primary's clock, and a replica
// promoted later compares it with its own: a promoted replica whose clock
// is ahead of the old primary's by d ends every lease granted there d
// early, as a forward step would (no Redis lock survives it; the
// library's margin covers 2 ms of difference between servers, see
// docs/leases.md). So at each failover the suite measures how far the
// promoted server's clock is ahead of the old primary's
// (noteFailoverClocks) and, beyond the margin, counts the fault with
// those no lock survives (Fault.ClockAhead, unsurvivable). And unless
// Config.ClockForward asks for the faults no lock survives, every
// server's clock follows the primary's furthest behind before each fault
// (syncClocks), as NTP keeps the servers of one network within
// milliseconds of each other: the clock faults then move the servers'
// clocks against the clients', which is what a lease must survive, and a
// fault that puts one server ahead of the others lasts until the next
// fault.

// serverMargin is how far ahead of the old primary's a promoted server's
// clock may be without ending leases early beyond the library's margin
// (core.LeaseMargin: 1% of the lease plus 2 ms).
func (r *run) serverMargin() time.Duration {
	return core.LeaseMargin(r.cfg.Lease)
}

// clockOf returns the clock of the data server at addr; nil without clock
// faults.
func (n *netTopo) clockOf(addr string) *serverClock {
	if n.clocks == nil {
		return nil
	}
	for i, p := range n.data {
		if p.addr == addr {
			return n.clocks[i]
		}
	}
	return nil
}

// noteFailoverClocks records that promoted took over from old: how far
// promoted's clock is ahead of old's, kept (the largest) for the fault
// under way (takeClockAhead).
func (r *run) noteFailoverClocks(old, promoted string) {
	co, cp := r.net.clockOf(old), r.net.clockOf(promoted)
	if co == nil || cp == nil {
		return
	}
	d := cp.skew() - co.skew()
	r.logf("%s: %s promoted over %s, its clock %v ahead of the old primary's", r.cfg.Topology, promoted, old, d.Round(time.Millisecond))
	r.clockAheadMu.Lock()
	r.clockAhead = max(r.clockAhead, d)
	r.clockAheadMu.Unlock()
}

// takeClockAhead returns (and resets) how far ahead of the old primary's
// the clock of a server promoted since the last call was, at most.
func (r *run) takeClockAhead() time.Duration {
	r.clockAheadMu.Lock()
	defer r.clockAheadMu.Unlock()
	d := r.clockAhead
	r.clockAhead = 0
	return d
}

// syncClocks sets every server's clock to the primary's furthest
// behind (see above; in netns the one primary's), unless the run asks
// for the faults no lock survives: a primary's clock only ever steps
// back so (leases end later), a replica's either way (its clock decides
// no expiry). In netcluster the masters agree with each other too: a
// client keeps one estimate of the servers' clock, for its requests'
// deadlines, and masters tens of seconds apart refused one another's
// requests as late (the first hour-long netcluster runs' liveness
// violations).
func (in *injector) syncClocks() {
	r, n := in.r, in.r.net
	if n.clocks == nil || r.cfg.ClockForward {
		return
	}
	primaries := []string{n.master}
	if n.cluster != nil {
		primaries = n.cluster.masters
	}
	var ref *serverClock
	for _, m := range primaries {
		if c := n.clockOf(m); c != nil && (ref == nil || c.skew() < ref.skew()) {
			ref = c
		}
	}
	if ref == nil {
		return
	}
	for i, p := range n.data {
		if n.clocks[i] == ref {
			continue
		}
		if err := n.clocks[i].follow(ref); err != nil {
			in.t.Fatalf("chaos: set %s's clock to the primaries': %v", p.addr, err)
		}
	}
}
