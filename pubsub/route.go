package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keys"
)

// Sharded mode on a Cluster: one connection per slot master, channels
// subscribed on their slot's master, and routed again when Redis ends a
// subscription, refuses one, loses a connection or the slot map names
// another master.

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
	m.receive(c)
	if !m.routing {
		m.routing = true
		m.loops.Add(1)
		go router{m: m}.run()
	}
	return c, nil
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
		if ch.conn == c && !ch.acked && keys.Slot(ch.slotKey()) == slot {
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

// router is the route goroutine of sharded mode (see run): it subscribes
// sharded channels that lost their subscription again, and moves those
// whose slot has a new master.
type router struct {
	m *Mux
}

// run subscribes sharded channels that lost their subscription again,
// on their slot's current master, retrying with a growing pause (go-redis
// may need a moment to learn the new slot map, a failover some seconds)
// until none is left. It runs from the first sharded subscription until
// Close.
func (rt router) run() {
	m := rt.m
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
			rt.check()
		}
		if left := rt.once(); left > 0 {
			retry.Reset(backoff)
			backoff = min(backoff*2, maxBackoff)
		} else {
			backoff = minBackoff
		}
	}
}

// check moves every sharded channel whose connection is not to the
// master go-redis now names for its slot off that connection (for once
// to subscribe it on the right one), and closes connections left without
// channels by such moves.
func (rt router) check() {
	m := rt.m
	routed := rt.routed()
	moved := rt.moved(routed)
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
		_ = m.unsubscribeFrom(uctx, c, ch) // a demoted master may answer MOVED: refused ignores it
		ucancel()
	}
	for c := range left {
		if !m.servesLocked(c) {
			m.retireLocked(c, errors.New("no channel left after its slots moved"))
		}
	}
	m.kickLocked()
}

// routed returns the channels subscribed on a node's connection, by name.
func (rt router) routed() map[string]*conn {
	m := rt.m
	m.mu.Lock()
	defer m.mu.Unlock()
	routed := make(map[string]*conn)
	for name, ch := range m.chans {
		if ch.conn != nil && ch.conn.sharded {
			routed[name] = ch.conn
		}
	}
	return routed
}

// moved returns the channels of routed whose slot go-redis's slot map
// gives to another master than their connection's. It asks go-redis
// without holding m.mu.
func (rt router) moved(routed map[string]*conn) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), rt.m.opts.ConfirmTimeout)
	defer cancel()
	moved := make(map[string]bool)
	for name, c := range routed {
		node, err := rt.m.cluster.MasterForKey(ctx, slotKey(name))
		if err == nil && node.Options().Addr != c.addr {
			moved[name] = true
		}
	}
	return moved
}

// servesLocked reports whether a channel is subscribed on c. m.mu must be
// held.
func (m *Mux) servesLocked(c *conn) bool {
	for _, ch := range m.chans {
		if ch.conn == c {
			return true
		}
	}
	return false
}

// once tries once to subscribe every unrouted channel on its slot's
// master, and returns how many are still unrouted.
func (rt router) once() int {
	m := rt.m
	names := rt.unrouted()
	if len(names) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
	defer cancel()
	conns := rt.masters(ctx, names)
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
	left := len(rt.unroutedLocked())
	if left > 0 {
		m.cluster.ReloadState(ctx)
	}
	return left
}

// unrouted returns the names of the channels not subscribed on any
// connection.
func (rt router) unrouted() []string {
	rt.m.mu.Lock()
	defer rt.m.mu.Unlock()
	return rt.unroutedLocked()
}

// unroutedLocked is unrouted with m.mu held.
func (rt router) unroutedLocked() []string {
	var names []string
	for name, ch := range rt.m.chans {
		if ch.conn == nil {
			names = append(names, name)
		}
	}
	return names
}

// masters returns the connection to the master of each named channel's
// slot, leaving out channels whose master is not known yet or cannot be
// reached. Find (and dial) each node once, without holding m.mu.
func (rt router) masters(ctx context.Context, names []string) map[string]*conn {
	m := rt.m
	conns := make(map[string]*conn, len(names))
	byAddr := make(map[string]*conn)
	failed := make(map[string]bool)
	for _, name := range names {
		node, err := m.cluster.MasterForKey(ctx, slotKey(name))
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
	return conns
}
