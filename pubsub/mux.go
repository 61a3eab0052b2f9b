package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("redisync/pubsub: closed")

// Policy decides how many of a channel's local waiters one message wakes.
// It gets the message payload and the number of waiters not already woken,
// and returns how many of them to wake, first come first woken; a negative
// result or one above waiters wakes them all.
type Policy func(payload string, waiters int) int

// WakeOne wakes the longest-waiting waiter: the right policy when one
// message frees room for one (a lock release).
func WakeOne(string, int) int { return 1 }

// WakeAll wakes every waiter: the right policy when a message may let all of
// them proceed (a write release, a latch reaching zero).
func WakeAll(string, int) int { return -1 }

const (
	// defaultConfirmTimeout bounds how long Subscribe waits for Redis to
	// confirm a new subscription when ctx has no earlier deadline.
	defaultConfirmTimeout = 10 * time.Second
	// defaultPingInterval is how long a connection may stay silent before
	// the multiplexer pings it; a ping unanswered for as long again means the
	// connection is dead and it is replaced.
	defaultPingInterval = 10 * time.Second
	// minBackoff and maxBackoff bound the pause before a failed receive or
	// a failed re-subscription is tried again.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
	// routeCheckInterval is how often the route loop compares each sharded
	// channel's connection with the master go-redis's slot map names for
	// its slot; every reloadEvery-th check first asks go-redis to reload the
	// map. A master demoted by a failover keeps its sharded subscribers
	// (Redis 7.0 ends them only when a slot is migrated away), so this is
	// how they move to the new master.
	routeCheckInterval = time.Second
	reloadEvery        = 5
)

// Options tune a Mux. The zero value gives the defaults.
type Options struct {
	// Logger receives connection errors and reconnects. The default discards.
	Logger *slog.Logger
	// ConfirmTimeout bounds the wait for a subscription's confirmation.
	// The default is 10s.
	ConfirmTimeout time.Duration
	// PingInterval is the silence after which a connection is pinged, and
	// the time a ping may stay unanswered before the connection is replaced.
	// The default is 10s.
	PingInterval time.Duration
	// Sharded is asked, before a channel is subscribed, whether to use
	// sharded pub/sub (SSUBSCRIBE on the master of the channel's slot); an
	// error fails that Subscribe. It matters only when the client is a
	// *redis.ClusterClient: other clients always subscribe classically. The
	// default (nil) is classic pub/sub.
	Sharded func(ctx context.Context) (bool, error)
}

// Mux multiplexes the waiters of one redisync client over Redis pub/sub
// connections: one connection in classic mode, one per cluster master that
// serves a subscribed channel's slot in sharded mode. It is safe for
// concurrent use. Connections are opened by Subscribe, not by New.
type Mux struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb when it is one, else nil
	log     *slog.Logger
	opts    Options

	mu      sync.Mutex
	conns   map[string]*conn    // open connections: "" classic, else by node address
	chans   map[string]*channel // channels subscribed or being subscribed
	closed  bool
	stop    chan struct{} // closed by Close
	loops   sync.WaitGroup
	routing bool          // the route loop runs (sharded mode)
	kick    chan struct{} // wakes the route loop; buffered 1
	reconns int           // reconnects, for Stats (see Stats.Reconnects)
}

// conn is one pub/sub connection and its receive loop.
type conn struct {
	addr    string // node address in sharded mode; "" for the classic connection
	sharded bool
	ps      *redis.PubSub // replaced in place for the classic connection
	retired bool          // closed; its channels were moved off it
}

// channel is one subscribed channel and its local waiters in arrival order.
type channel struct {
	name    string
	wake    Policy
	waiters []*Waiter
	// conn is the connection the channel's (S)SUBSCRIBE was sent on; nil
	// while a sharded channel waits for the route loop to subscribe it
	// again (its slot moved, its node failed).
	conn  *conn
	acked bool // Redis acknowledged the subscription on conn
	ready chan struct{}
	// readied: ready was closed, by the first acknowledgement. A later one
	// (after a reconnect or a move) wakes every waiter instead, since
	// messages may have been lost meanwhile.
	readied bool
	// orphaned: every waiter left before the acknowledgement arrived. The
	// UNSUBSCRIBE is sent when it does, so that an acknowledgement of an old
	// SUBSCRIBE is never taken for the confirmation of a newer one.
	orphaned bool
}

// Waiter is one caller's registration on a channel. It receives on C when a
// message (or a reconnect) wakes it. Close it when done waiting.
type Waiter struct {
	m      *Mux
	ch     *channel
	c      chan struct{}
	closed bool
}

// New returns a multiplexer over rdb. It does no I/O.
func New(rdb redis.UniversalClient, opts Options) *Mux {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = defaultConfirmTimeout
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = defaultPingInterval
	}
	cluster, _ := rdb.(*redis.ClusterClient)
	return &Mux{
		rdb:     rdb,
		cluster: cluster,
		log:     opts.Logger,
		opts:    opts,
		conns:   make(map[string]*conn),
		chans:   make(map[string]*channel),
		stop:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
	}
}

// Subscribe registers a waiter on channel and returns once Redis has
// confirmed the subscription, so that a message published after Subscribe
// returns is seen. wake decides, for each message, how many waiters wake; the
// first waiter of a channel sets it for all of them.
//
// In sharded mode the channel is subscribed with SSUBSCRIBE on the master
// that serves its slot (the slot of its hash tag, as for a key), over that
// master's one connection.
//
// On failure (ctx done, Mux closed, the confirmation not arriving within the
// confirm timeout, a connection error) it returns an error and leaves no
// registration behind; when ctx is done the error wraps ctx.Err().
func (m *Mux) Subscribe(ctx context.Context, name string, wake Policy) (*Waiter, error) {
	if wake == nil {
		wake = WakeOne
	}
	var node *conn // the connection to the master of the channel's slot, in sharded mode
	if m.cluster != nil && m.opts.Sharded != nil {
		sharded, err := m.opts.Sharded(ctx)
		if err != nil {
			return nil, fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, err)
		}
		if sharded {
			// Found, and dialled if new, before taking m.mu: it may load the
			// slot map and connect.
			if node, err = m.shardConn(ctx, name); err != nil {
				return nil, fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, err)
			}
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	ch := m.chans[name]
	if ch == nil {
		ch = &channel{name: name, wake: wake, ready: make(chan struct{})}
		m.chans[name] = ch
		// The SUBSCRIBE is written under m.mu so that SUBSCRIBE and
		// UNSUBSCRIBE of one channel reach Redis in the order decided here.
		if err := m.subscribeLocked(ctx, ch, node); err != nil {
			delete(m.chans, name)
			m.mu.Unlock()
			return nil, fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, err)
		}
	}
	ch.orphaned = false
	w := &Waiter{m: m, ch: ch, c: make(chan struct{}, 1)}
	ch.waiters = append(ch.waiters, w)
	ready := ch.ready
	m.mu.Unlock()

	timer := time.NewTimer(m.opts.ConfirmTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return w, nil
	case <-ctx.Done():
		w.Close()
		return nil, fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, ctx.Err())
	case <-m.stop:
		w.Close()
		return nil, ErrClosed
	case <-timer.C:
		w.Close()
		return nil, fmt.Errorf("redisync/pubsub: subscribe %q: not confirmed within %v", name, m.opts.ConfirmTimeout)
	}
}

// subscribeLocked sends ch's SUBSCRIBE on the classic connection (opened
// if needed) when node is nil, or its SSUBSCRIBE on the sharded connection
// node. A retired node leaves ch to the route loop. On failure ch is left
// unrouted (conn nil). m.mu must be held.
func (m *Mux) subscribeLocked(ctx context.Context, ch *channel, node *conn) error {
	if node != nil && node.retired {
		ch.conn, ch.acked = nil, false
		m.reroute()
		return nil
	}
	c := node
	if c == nil {
		c = m.classicLocked()
	}
	ch.conn, ch.acked = c, false
	var err error
	if c.sharded {
		err = c.ps.SSubscribe(ctx, ch.name)
	} else {
		err = c.ps.Subscribe(ctx, ch.name)
	}
	if err == nil {
		return nil
	}
	ch.conn = nil
	if c.sharded {
		// go-redis may have reconnected and re-subscribed on its own, which
		// for channels of several slots fails; start this node afresh.
		m.retireLocked(c, err)
	} else {
		// go-redis tracks the channel even when the write failed; forget it
		// so that a reconnect does not subscribe it for nobody.
		_ = c.ps.Unsubscribe(context.WithoutCancel(ctx), ch.name)
	}
	return err
}

// classicLocked returns the classic connection, creating it and starting
// its receive loop if needed. It does no I/O: the connection is dialled by
// its first use. m.mu must be held.
func (m *Mux) classicLocked() *conn {
	if c := m.conns[""]; c != nil {
		return c
	}
	c := &conn{ps: m.rdb.Subscribe(context.Background())}
	m.conns[""] = c
	m.loops.Add(1)
	go m.loop(c)
	return c
}

// shardConn returns the sharded connection to the master that serves the
// slot of channel name, opening it (a dial and a PING, without holding m.mu)
// and starting its receive loop if needed.
func (m *Mux) shardConn(ctx context.Context, name string) (*conn, error) {
	node, err := m.cluster.MasterForKey(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("master of its slot: %w", err)
	}
	return m.nodeConn(ctx, node)
}

// nodeConn returns the sharded connection to node, opening it if needed.
func (m *Mux) nodeConn(ctx context.Context, node *redis.Client) (*conn, error) {
	addr := node.Options().Addr
	m.mu.Lock()
	c, closed := m.conns[addr], m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if c != nil {
		return c, nil
	}
	// The node's own client: its pub/sub connection stays on that node,
	// whatever go-redis later learns about the slots.
	ps := node.SSubscribe(context.Background())
	if err := ps.Ping(ctx); err != nil { // dials; the receive loop reads the PONG
		_ = ps.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = ps.Close()
		return nil, ErrClosed
	}
	if c := m.conns[addr]; c != nil {
		_ = ps.Close() // another caller opened it meanwhile
		return c, nil
	}
	c = &conn{addr: addr, sharded: true, ps: ps}
	m.conns[addr] = c
	m.loops.Add(1)
	go m.loop(c)
	if !m.routing {
		m.routing = true
		m.loops.Add(1)
		go m.routeLoop()
	}
	return c, nil
}

// C receives a value each time the waiter is woken. One wake-up is buffered.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Close removes the waiter. A wake-up it received but did not consume is
// passed on to the next waiter, so leaving never swallows one. When the last
// waiter of a channel leaves, the channel is unsubscribed. Close is
// idempotent.
func (w *Waiter) Close() {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	ch := w.ch
	for i, o := range ch.waiters {
		if o == w {
			ch.waiters = append(ch.waiters[:i], ch.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.c:
		ch.signal(1)
	default:
	}
	if len(ch.waiters) > 0 || m.chans[ch.name] != ch {
		return
	}
	if ch.conn == nil {
		delete(m.chans, ch.name) // not subscribed anywhere
		return
	}
	if !ch.acked {
		ch.orphaned = true
		return
	}
	m.unsubscribeLocked(ch)
}

// unsubscribeLocked forgets ch and sends (S)UNSUBSCRIBE. m.mu must be held.
func (m *Mux) unsubscribeLocked(ch *channel) {
	delete(m.chans, ch.name)
	c := ch.conn
	if m.closed || c == nil || c.retired {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
	defer cancel()
	var err error
	if c.sharded {
		err = c.ps.SUnsubscribe(ctx, ch.name)
	} else {
		err = c.ps.Unsubscribe(ctx, ch.name)
	}
	if err != nil {
		m.log.Warn("redisync: pubsub unsubscribe failed", "channel", ch.name, "err", err)
	}
}

// signal wakes up to n waiters that are not already woken, oldest first
// (n < 0: all). m.mu must be held.
func (ch *channel) signal(n int) {
	woken := 0
	for _, w := range ch.waiters {
		if n >= 0 && woken >= n {
			break
		}
		select {
		case w.c <- struct{}{}:
			woken++
		default: // already woken and not yet awake: leave it be
		}
	}
}

// idle counts the waiters not already woken. m.mu must be held.
func (ch *channel) idle() int {
	n := 0
	for _, w := range ch.waiters {
		if len(w.c) == 0 {
			n++
		}
	}
	return n
}

// loop is the goroutine that reads one connection. It returns when the
// Mux is closed or, in sharded mode, when the connection is retired.
func (m *Mux) loop(c *conn) {
	defer m.loops.Done()
	ctx := context.Background()
	pinged := false
	// broken: the classic connection failed; go-redis dials it again and
	// re-subscribes its channels on the next receive, and the first one
	// that succeeds counts as a reconnect.
	broken := false
	backoff := minBackoff
	for {
		m.mu.Lock()
		ps, done := c.ps, m.closed || c.retired
		m.mu.Unlock()
		if done {
			return
		}
		msg, err := ps.ReceiveTimeout(ctx, m.opts.PingInterval)
		if err != nil {
			m.mu.Lock()
			done, replaced := m.closed || c.retired, c.ps != ps
			m.mu.Unlock()
			if done {
				return
			}
			if replaced {
				continue
			}
			var ne net.Error
			var re redis.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				if pinged {
					m.log.Warn("redisync: pubsub connection unresponsive, reconnecting", "addr", c.addr)
					m.replace(c, ps, err)
					pinged = false
					continue
				}
				pinged = true
				if err := ps.Ping(ctx); err != nil {
					m.log.Debug("redisync: pubsub ping failed", "err", err)
				}
				continue
			case errors.As(err, &re) && c.sharded:
				// The reply to an SSUBSCRIBE or SUNSUBSCRIBE: the slot is not
				// (or no longer) served there, or the cluster is down.
				m.refused(c, err)
				continue
			case c.sharded:
				// The node is gone or the connection broke: go-redis would
				// re-subscribe all its channels in one command, which fails
				// for channels of several slots, and the slots may have a
				// new master by now. Route them again instead.
				m.log.Warn("redisync: sharded pubsub connection lost, re-subscribing its channels", "addr", c.addr, "err", err)
				m.mu.Lock()
				m.retireLocked(c, err)
				m.mu.Unlock()
				return
			}
			m.log.Warn("redisync: pubsub receive failed", "err", err)
			if !errors.As(err, &re) {
				broken = true
			}
			select {
			case <-m.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff, pinged = minBackoff, false
		if broken {
			broken = false
			m.mu.Lock()
			m.reconns++
			m.mu.Unlock()
		}
		switch msg := msg.(type) {
		case *redis.Subscription:
			switch msg.Kind {
			case "subscribe", "ssubscribe":
				m.confirm(c, msg.Channel)
			case "sunsubscribe":
				m.ended(c, msg.Channel)
			}
		case *redis.Message:
			m.deliver(msg.Channel, msg.Payload)
		}
	}
}

// confirm handles Redis's acknowledgement of a (S)SUBSCRIBE on c.
func (m *Mux) confirm(c *conn, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[name]
	if ch == nil || ch.conn != c {
		return // the acknowledgement of a channel already left or moved
	}
	if ch.acked || ch.readied {
		// Acknowledged again after a reconnect, or subscribed again after
		// its slot moved or its node failed: messages may have been lost
		// meanwhile, so every waiter re-checks.
		ch.acked = true
		ch.signal(-1)
	} else {
		ch.acked, ch.readied = true, true
		close(ch.ready)
	}
	if ch.orphaned && len(ch.waiters) == 0 {
		m.unsubscribeLocked(ch)
	}
}

// ended handles an sunsubscribe on c. For a channel subscribed there and
// acknowledged, it is Redis ending the subscription because the slot left
// the node (a migration, a failover): the channel is subscribed again on
// its slot's new master. Any other one acknowledges an SUNSUBSCRIBE the Mux
// sent, and is ignored (an SSUBSCRIBE sent after it is acknowledged after
// it, so the channel is not acknowledged yet).
func (m *Mux) ended(c *conn, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[name]
	if ch == nil || ch.conn != c || !ch.acked {
		return
	}
	m.log.Info("redisync: sharded subscription ended by Redis (slot moved), re-subscribing", "channel", name, "addr", c.addr)
	m.unrouteLocked(ch)
	m.reroute()
}

// refused handles an error reply on the sharded connection c. A MOVED or
// ASK names the slot whose SSUBSCRIBE was refused: the channels of that
// slot not yet acknowledged on c are routed again. Any other error (the
// cluster is down; go-redis re-subscribed channels of several slots in one
// command) leaves the connection's state unknown: it is replaced and all
// its channels are routed again.
func (m *Mux) refused(c *conn, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.retired {
		return
	}
	slot, ok := redirectSlot(err.Error())
	if !ok {
		m.log.Warn("redisync: sharded pubsub error, re-subscribing the connection's channels", "addr", c.addr, "err", err)
		m.retireLocked(c, err)
		return
	}
	m.log.Debug("redisync: sharded subscription redirected, re-subscribing", "slot", slot, "addr", c.addr, "err", err)
	for _, ch := range m.chans {
		if ch.conn == c && !ch.acked && keys.Slot(ch.name) == slot {
			m.unrouteLocked(ch)
		}
	}
	m.reroute()
}

// redirectSlot returns the slot of a "MOVED <slot> <addr>" or
// "ASK <slot> <addr>" error.
func redirectSlot(msg string) (int, bool) {
	f := strings.Fields(msg)
	if len(f) < 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return 0, false
	}
	slot, err := strconv.Atoi(f[1])
	return slot, err == nil
}

// unrouteLocked detaches ch from its connection, for the route loop to
// subscribe it again; a channel nobody waits on is forgotten. m.mu must be
// held.
func (m *Mux) unrouteLocked(ch *channel) {
	ch.conn, ch.acked = nil, false
	if len(ch.waiters) == 0 {
		delete(m.chans, ch.name)
	}
}

// retireLocked closes the sharded connection c and hands its channels to
// the route loop. m.mu must be held.
func (m *Mux) retireLocked(c *conn, reason error) {
	if c.retired {
		return
	}
	c.retired = true
	m.reconns++
	if m.conns[c.addr] == c {
		delete(m.conns, c.addr)
	}
	for _, ch := range m.chans {
		if ch.conn == c {
			m.unrouteLocked(ch)
		}
	}
	_ = c.ps.Close()
	m.log.Debug("redisync: sharded pubsub connection closed", "addr", c.addr, "reason", reason)
	m.reroute()
}

// reroute asks go-redis for a fresh slot map and wakes the route loop.
func (m *Mux) reroute() {
	if m.cluster != nil {
		m.cluster.ReloadState(context.Background())
	}
	m.kickLocked()
}

// kickLocked wakes the route loop.
func (m *Mux) kickLocked() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// routeLoop subscribes sharded channels that lost their subscription again,
// on their slot's current master, retrying with a growing pause (go-redis
// may need a moment to learn the new slot map, a failover some seconds)
// until none is left. It runs from the first sharded subscription until
// Close.
func (m *Mux) routeLoop() {
	defer m.loops.Done()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	check := time.NewTicker(routeCheckInterval)
	defer check.Stop()
	backoff := minBackoff
	for ticks := 1; ; ticks++ {
		select {
		case <-m.stop:
			return
		case <-m.kick:
		case <-retry.C:
		case <-check.C:
			if ticks%reloadEvery == 0 {
				m.cluster.ReloadState(context.Background())
			}
			m.checkRoutes()
		}
		if left := m.routeOnce(); left > 0 {
			retry.Reset(backoff)
			backoff = min(backoff*2, maxBackoff)
		} else {
			backoff = minBackoff
		}
	}
}

// checkRoutes moves every sharded channel whose connection is not to the
// master go-redis now names for its slot off that connection (for routeOnce
// to subscribe it on the right one), and closes connections left without
// channels by such moves.
func (m *Mux) checkRoutes() {
	m.mu.Lock()
	routed := make(map[string]*conn)
	for name, ch := range m.chans {
		if ch.conn != nil && ch.conn.sharded {
			routed[name] = ch.conn
		}
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
	defer cancel()
	moved := make(map[string]bool)
	for name, c := range routed {
		node, err := m.cluster.MasterForKey(ctx, name)
		if err == nil && node.Options().Addr != c.addr {
			moved[name] = true
		}
	}
	if len(moved) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	left := make(map[*conn]bool)
	for name := range moved {
		ch := m.chans[name]
		if ch == nil || ch.conn != routed[name] || ch.conn.retired {
			continue
		}
		c := ch.conn
		m.log.Info("redisync: slot of a sharded channel has a new master, re-subscribing", "channel", name, "from", c.addr)
		m.unrouteLocked(ch)
		left[c] = true
		uctx, ucancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
		_ = c.ps.SUnsubscribe(uctx, name) // a demoted master may answer MOVED: refused ignores it
		ucancel()
	}
	for c := range left {
		idle := true
		for _, ch := range m.chans {
			if ch.conn == c {
				idle = false
				break
			}
		}
		if idle {
			m.retireLocked(c, errors.New("no channel left after its slots moved"))
		}
	}
	m.kickLocked()
}

// routeOnce tries once to subscribe every unrouted channel on its slot's
// master, and returns how many are still unrouted.
func (m *Mux) routeOnce() int {
	m.mu.Lock()
	var names []string
	for name, ch := range m.chans {
		if ch.conn == nil {
			names = append(names, name)
		}
	}
	m.mu.Unlock()
	if len(names) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
	defer cancel()
	// Find (and dial) each node once, without holding m.mu.
	conns := make(map[string]*conn, len(names))
	byAddr := make(map[string]*conn)
	failed := make(map[string]bool)
	for _, name := range names {
		node, err := m.cluster.MasterForKey(ctx, name)
		if err != nil {
			m.log.Debug("redisync: no master for a sharded channel yet", "channel", name, "err", err)
			continue
		}
		addr := node.Options().Addr
		if failed[addr] {
			continue
		}
		c := byAddr[addr]
		if c == nil {
			if c, err = m.nodeConn(ctx, node); err != nil {
				m.log.Debug("redisync: sharded re-subscribe: node unreachable", "addr", addr, "err", err)
				failed[addr] = true
				continue
			}
			byAddr[addr] = c
		}
		conns[name] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0
	}
	for name, c := range conns {
		ch := m.chans[name]
		if ch == nil || ch.conn != nil || c.retired {
			continue
		}
		if err := m.subscribeLocked(ctx, ch, c); err != nil {
			m.log.Debug("redisync: sharded re-subscribe failed", "channel", name, "err", err)
		}
	}
	left := 0
	for _, ch := range m.chans {
		if ch.conn == nil {
			left++
		}
	}
	if left > 0 {
		m.cluster.ReloadState(ctx)
	}
	return left
}

// deliver wakes the waiters a message is for.
func (m *Mux) deliver(name, payload string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[name]
	if ch == nil || len(ch.waiters) == 0 {
		return
	}
	idle := ch.idle()
	if idle == 0 {
		return
	}
	ch.signal(ch.wake(payload, idle))
}

// replace handles a connection whose ping went unanswered. The classic
// connection is swapped for a new one that re-subscribes every channel
// (their acknowledgements wake all waiters to re-check); a sharded one is
// retired and its channels routed again.
func (m *Mux) replace(c *conn, old *redis.PubSub, reason error) {
	m.mu.Lock()
	if m.closed || c.retired || c.ps != old {
		m.mu.Unlock()
		return
	}
	if c.sharded {
		m.retireLocked(c, reason)
		m.mu.Unlock()
		return
	}
	m.reconns++
	c.ps = m.rdb.Subscribe(context.Background())
	names := make([]string, 0, len(m.chans))
	for name, ch := range m.chans {
		if ch.conn == c {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
		if err := c.ps.Subscribe(ctx, names...); err != nil {
			// go-redis keeps the channels and re-subscribes them when the
			// receive loop reconnects.
			m.log.Warn("redisync: pubsub re-subscribe failed", "err", err)
		}
		cancel()
	}
	m.mu.Unlock()
	_ = old.Close()
}

// Stats describes the multiplexer's state, for tests and inspection.
type Stats struct {
	Channels int // channels subscribed or being subscribed for waiters
	// Leaving counts channels every waiter left before Redis confirmed the
	// subscription: their UNSUBSCRIBE is sent when the confirmation
	// arrives, and then they are gone. They are not in Channels.
	Leaving int
	Waiters int // registered waiters over all channels
	// Reconnects counts connections replaced after an unanswered ping, in
	// sharded mode after a lost connection or an error reply, and classic
	// connections back after a failure (go-redis dials them again and
	// re-subscribes their channels).
	Reconnects int
	// Conns is the number of pub/sub connections open: at most one in
	// classic mode, at most one per cluster node in sharded mode.
	Conns int
	// Unrouted counts sharded channels waiting to be subscribed again on
	// their slot's master (after a slot move or a node failure); they are
	// also in Channels or Leaving.
	Unrouted int
}

// Stats returns a snapshot of the multiplexer's state.
func (m *Mux) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Reconnects: m.reconns, Conns: len(m.conns)}
	for _, ch := range m.chans {
		if ch.orphaned {
			s.Leaving++
		} else {
			s.Channels++
		}
		if ch.conn == nil {
			s.Unrouted++
		}
		s.Waiters += len(ch.waiters)
	}
	return s
}

// Close unsubscribes everything, closes the connections and stops the
// receive loops, waking every waiter (their Subscribe or wait then sees
// ErrClosed). It is idempotent.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	for _, ch := range m.chans {
		ch.signal(-1)
	}
	var errs []error
	for _, c := range m.conns {
		if err := c.ps.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	m.mu.Unlock()
	m.loops.Wait()
	return errors.Join(errs...)
}
