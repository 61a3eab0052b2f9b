package redistest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a server, for injecting
// network faults into real connections: lost replies, cut connections and
// partitions. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every pipe goroutine

	mu        sync.Mutex
	conns     map[*proxyConn]struct{}
	closed    bool
	blocked   bool
	unblocked chan struct{} // closed while not blocked
	dropArmed bool
	dropped   int
}

// proxyConn is one proxied connection: the client's side and ours to the
// target.
type proxyConn struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close
}

func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		_ = pc.client.Close()
		_ = pc.server.Close()
	})
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

// CutAll closes every current proxied connection on both sides, as a
// network failure or server restart would. New connections are still
// accepted.
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

// close stops accepting, closes every connection and waits for all proxy
// goroutines to end.
func (p *Proxy) close() {
	p.mu.Lock()
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

// pipe copies src to dst chunk by chunk, honouring Block and, for the
// server-to-client direction, DropNextReply. When either side ends, it
// closes the whole connection.
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
