package redistest

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a server, for injecting
// network faults into real connections: lost replies, cut connections,
// partitions, latency and stalled requests delivered late. Its methods are
// safe for concurrent use.
type Proxy struct {
	target  string
	ln      net.Listener
	wg      sync.WaitGroup // the accept loop and every pipe goroutine
	closing chan struct{}  // closed when the proxy closes

	mu        sync.Mutex
	conns     map[*proxyConn]struct{}
	closed    bool
	blocked   bool
	unblocked chan struct{} // closed while not blocked
	dropArmed bool
	dropped   int
	latency   time.Duration
	held      int // chunks a stall held
	late      int // held chunks delivered after the client had closed its side
}

// lateCloseGrace is how long a connection whose client has gone stays open
// toward the server after a stall delivered its held bytes, so the server
// reads them before the connection closes.
const lateCloseGrace = 200 * time.Millisecond

// proxyConn is one proxied connection: the client's side and ours to the
// target.
type proxyConn struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close

	mu         sync.Mutex
	stallUntil time.Time // client bytes read before then are held until then
	holding    bool      // a stall holds bytes for the server
	closeLater bool      // close ran while holding: the holder closes the server side
}

// close closes the client's side at once and the server's side as soon as
// no stall holds bytes for it.
func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		_ = pc.client.Close()
		pc.mu.Lock()
		later := pc.holding
		pc.closeLater = later
		pc.mu.Unlock()
		if !later {
			_ = pc.server.Close()
		}
	})
}

// clientGone reports whether close has run.
func (pc *proxyConn) clientGone() bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}

// NewProxy starts a proxy on a free 127.0.0.1 port that forwards every
// accepted connection to target ("host:port"), dialled when the
// connection is accepted. The proxy and all its connections are closed
// when the test finishes. NewProxy fails the test if it cannot listen.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	unblocked := make(chan struct{})
	close(unblocked)
	p := &Proxy{
		target:    target,
		ln:        ln,
		closing:   make(chan struct{}),
		conns:     make(map[*proxyConn]struct{}),
		unblocked: unblocked,
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's "127.0.0.1:port"; point clients here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropNextReply arms the proxy: the next chunk of bytes the server sends
// on any proxied connection is not forwarded; instead that connection is
// closed on both sides. The server has executed the command, but the
// client sees EOF instead of the reply (go-redis then retries the command
// on a new connection, so it runs twice). The proxy disarms after firing
// once; arming twice drops one reply. Make sure the client's connection is
// set up (send a PING) before arming, or the reply dropped is the one to
// the connection handshake.
func (p *Proxy) DropNextReply() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropArmed = true
}

// Dropped returns how many replies DropNextReply has dropped so far.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// LoseReplyOf runs call with the next reply through the proxy dropped,
// until the dropped reply is call's own, and returns call's error (which
// a lost reply makes non-nil). The client's background reads go through
// the proxy too, and one of them may take the dropped reply instead: then
// call succeeds, undo releases what it took, and it is tried again (at
// most five times). before, if not nil, runs before each try.
func (p *Proxy) LoseReplyOf(t testing.TB, before, call, undo func() error) error {
	t.Helper()
	for try := 0; ; try++ {
		if before != nil {
			if err := before(); err != nil {
				t.Fatalf("redistest: before a try: %v", err)
			}
		}
		dropped := p.Dropped()
		p.DropNextReply()
		err := call()
		if err != nil {
			return err
		}
		if p.Dropped() == dropped {
			t.Fatalf("redistest: the call whose reply was lost reported success")
		}
		if try == 4 {
			t.Fatalf("redistest: the dropped reply was never the call's, in 5 tries")
		}
		if err := undo(); err != nil {
			t.Fatalf("redistest: undoing a try: %v", err)
		}
	}
}

// CutAll closes every current proxied connection on both sides, as a
// network failure or server restart would. New connections are still
// accepted. Bytes a Stall holds are still delivered to the server when the
// stall ends (they are in flight), and the server's side of their
// connection is closed after that.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close()
	}
}

// Block partitions the network: until Unblock, connections (current and
// new ones, which are still accepted) forward no bytes in either
// direction. Bytes read meanwhile are held and delivered in order after
// Unblock, as TCP retransmission would after a short partition; clients
// with read timeouts see them time out. Blocking twice is the same as once.
func (p *Proxy) Block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.blocked {
		p.blocked = true
		p.unblocked = make(chan struct{})
	}
}

// Unblock ends a partition started by Block. Unblocking an unblocked proxy
// does nothing.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked {
		p.blocked = false
		close(p.unblocked)
	}
}

// SetLatency delays every chunk of bytes forwarded in either direction, on
// current and new connections, by d before it is forwarded; 0 ends the
// latency. Chunks already waiting keep the delay they started with. The
// default is no latency.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// Stall holds the requests of the connections open now: bytes their
// clients send from now until d has passed are not forwarded until then,
// and are then delivered to the server even if the client closed its side
// meanwhile (a client that timed out and retried on a new connection finds
// its first copy delivered late, as a network that delays segments would
// do). The server's side of such a connection stays open until the held
// bytes are written, then closes shortly after. Connections accepted later
// are not stalled; a connection stalled again keeps the later deadline.
// Block holds bytes before Stall does. Stall returns the number of
// connections stalled. Held bytes are dropped only when the proxy closes.
func (p *Proxy) Stall(d time.Duration) int {
	until := time.Now().Add(d)
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.mu.Lock()
		if until.After(pc.stallUntil) {
			pc.stallUntil = until
		}
		pc.mu.Unlock()
	}
	return len(conns)
}

// Held returns how many times a stall has held bytes of a connection.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// LateDelivered returns how many times a stall delivered held bytes to the
// server after their client had closed its side of the connection.
func (p *Proxy) LateDelivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.late
}

// close stops accepting, closes every connection, drops bytes held by
// stalls and waits for all proxy goroutines to end.
func (p *Proxy) close() {
	p.mu.Lock()
	if !p.closed {
		close(p.closing)
	}
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.CutAll()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			// Only close makes Accept fail on a loopback listener (short of
			// running out of file descriptors, which would fail the test
			// through its own dials anyway).
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the target for client and starts the two pipes.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	pc := &proxyConn{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.close()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()

	p.wg.Add(2)
	go p.pipe(pc, pc.client, pc.server, false)
	go p.pipe(pc, pc.server, pc.client, true)
}

// pipe copies src to dst chunk by chunk, honouring Block and SetLatency,
// for the client-to-server direction Stall, and for the server-to-client
// direction DropNextReply. When either side ends, it closes the whole
// connection.
func (p *Proxy) pipe(pc *proxyConn, src, dst net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer func() {
		pc.close()
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitUnblocked(pc) {
				return
			}
			if !p.delay(pc) {
				return
			}
			if !fromServer {
				if until, ok := pc.stalled(); ok {
					if !p.hold(pc, buf[:n], until) {
						return
					}
					if err != nil {
						return
					}
					continue
				}
			}
			if fromServer && p.takeDrop() {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// delay waits for the latency set by SetLatency; it returns false if the
// connection or the proxy was closed meanwhile.
func (p *Proxy) delay(pc *proxyConn) bool {
	p.mu.Lock()
	d := p.latency
	p.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-pc.done:
		return false
	case <-p.closing:
		return false
	}
}

// stalled returns the end of the stall of pc, if one is in force now, and
// marks pc as holding bytes.
func (pc *proxyConn) stalled() (time.Time, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !time.Now().Before(pc.stallUntil) {
		return time.Time{}, false
	}
	pc.holding = true
	return pc.stallUntil, true
}

// hold keeps b, and whatever else the client sends, until until, then
// writes it all to the server, whether or not the client closed its side
// meanwhile (its close is noticed at once, and the server's side is closed
// only after the held bytes were written). It returns false if the pipe
// must end: the proxy closed, the write failed, or the connection closed.
func (p *Proxy) hold(pc *proxyConn, b []byte, until time.Time) bool {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	held := pc.readUntil(b, until)
	ok := p.writeHeld(pc, held, until)
	return pc.endHold(ok, p.closing)
}

// readUntil returns b and whatever else the client sends until until. A
// client that closes its side meanwhile closes pc at once; the server's
// side waits for the held bytes.
func (pc *proxyConn) readUntil(b []byte, until time.Time) []byte {
	held := append([]byte(nil), b...)
	buf := make([]byte, 32<<10)
	for time.Now().Before(until) {
		if err := pc.client.SetReadDeadline(until); err != nil {
			break // closed: wait below
		}
		n, err := pc.client.Read(buf)
		held = append(held, buf[:n]...)
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			pc.close() // the client has gone: the server's side waits for us
			break
		}
	}
	_ = pc.client.SetReadDeadline(time.Time{})
	return held
}

// writeHeld waits until until, then writes held to the server, counting
// it as late when the client has gone meanwhile. It returns false if the
// proxy closed first or the write failed.
func (p *Proxy) writeHeld(pc *proxyConn, held []byte, until time.Time) bool {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.closing:
		return false
	}
	if _, err := pc.server.Write(held); err != nil {
		return false
	}
	if pc.clientGone() {
		p.mu.Lock()
		p.late++
		p.mu.Unlock()
	}
	return true
}

// endHold ends a hold whose bytes were written (ok) or not. When the
// connection was closed during the hold, the server's side is closed now
// (when the bytes were written, after lateCloseGrace, so the server reads
// them first, or when the proxy closes: closing) and the pipe ends: it
// returns false. Otherwise it returns ok.
func (pc *proxyConn) endHold(ok bool, closing <-chan struct{}) bool {
	pc.mu.Lock()
	pc.holding = false
	later := pc.closeLater
	pc.mu.Unlock()
	if !later {
		return ok
	}
	if ok {
		select {
		case <-time.After(lateCloseGrace):
		case <-closing:
		}
	}
	_ = pc.server.Close()
	return false
}

// waitUnblocked waits until the proxy is not blocked; it returns false if
// the connection was closed meanwhile.
func (p *Proxy) waitUnblocked(pc *proxyConn) bool {
	p.mu.Lock()
	ch := p.unblocked
	p.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-pc.done:
		return false
	}
}

// takeDrop disarms DropNextReply and reports whether it was armed.
func (p *Proxy) takeDrop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropArmed {
		return false
	}
	p.dropArmed = false
	p.dropped++
	return true
}
