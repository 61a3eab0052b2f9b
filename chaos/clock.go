package chaos

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
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
