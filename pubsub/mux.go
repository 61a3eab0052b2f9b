package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
	// Keyspace says whether Keyspace subscribes, and whether it first
	// checks the node's notify-keyspace-events. The default is
	// KeyspaceAuto.
	Keyspace KeyspaceMode
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
	routing bool          // the route loop (router) runs (sharded mode)
	kick    chan struct{} // wakes the route loop; buffered 1
	reconns int           // reconnects, for Stats (see Stats.Reconnects)
	// follow records where go-redis dials, on a failover client
	// (Sentinel), so that the classic connection follows the primary (see
	// followLoop); nil on other clients.
	follow *follower
	// flags caches what each node said of its notify-keyspace-events,
	// by address ("" for a client that is not a Cluster's; see Keyspace).
	flags map[string]flagsSeen
}

// conn is one pub/sub connection and its receive loop.
type conn struct {
	addr string // node address in sharded mode; "" for the classic connection
	// sharded: a Cluster node's connection, which carries the sharded
	// channels of the node's slots and the keyspace channels of its keys
	// (Keyspace), and which the route loop replaces instead of go-redis.
	sharded bool
	ps      *redis.PubSub // replaced in place for the classic connection
	retired bool          // closed; its channels were moved off it
	// pending lists the channels whose (S)SUBSCRIBE was written on the
	// connection and not yet acknowledged, in the order written: Redis
	// answers in that order, so an error reply refusing a subscription
	// (NOPERM) is the first one's (see refuse).
	pending []*channel
}

// channel is one subscribed channel and its local waiters in arrival order.
type channel struct {
	name string
	// key is, for a keyspace channel (Keyspace), the key whose
	// notifications it carries: on a Cluster it is subscribed on the
	// master of key's slot, with SUBSCRIBE; "" for any other channel.
	key     string
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
	// err is Redis's refusal of the subscription (NOPERM: the ACL user may
	// not subscribe to it), set before ready is closed: the waiters'
	// Subscribe returns it.
	err error
}

// Waiter is one caller's registration on a channel. It receives on C when a
// message (or a reconnect) wakes it. Close it when done waiting.
type Waiter struct {
	m      *Mux
	ch     *channel
	c      chan struct{}
	closed bool
	// also is the waiter's registration on a second channel (Also), which
	// shares c; nil when none. secondary marks such a registration.
	also      *Waiter
	secondary bool
	// onClose runs once, after Close (OnClose).
	onClose func()
	// events are a keyspace channel's notifications not yet taken
	// (Events), at most maxKept, the oldest dropped first.
	events []string
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
		follow:  followerOf(rdb),
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
// registration behind; when ctx is done the error wraps ctx.Err(). A
// subscription Redis refuses (an ACL user without SUBSCRIBE or SSUBSCRIBE,
// or without the channel: NOPERM) fails as soon as the refusal arrives,
// with an error wrapping Redis's reply and redisync.ErrNoPermission.
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
	return m.subscribe(ctx, name, "", wake, node)
}

// subscribe registers a waiter on channel name, as Subscribe says, once
// its connection is known: node for a channel of a Cluster node (sharded,
// or a keyspace channel of key), nil for the classic connection.
func (m *Mux) subscribe(ctx context.Context, name, key string, wake Policy, node *conn) (*Waiter, error) {
	return m.subscribeInto(ctx, name, key, wake, node, nil)
}

// subscribeInto is subscribe; with into, the new waiter is into's
// registration on a second channel (Also): it wakes into's C.
func (m *Mux) subscribeInto(ctx context.Context, name, key string, wake Policy, node *conn, into *Waiter) (*Waiter, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	ch := m.chans[name]
	if ch == nil {
		ch = &channel{name: name, key: key, wake: wake, ready: make(chan struct{})}
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
	w := &Waiter{m: m, ch: ch}
	if into != nil {
		w.c, w.secondary = into.c, true
	} else {
		w.c = make(chan struct{}, 1)
	}
	ch.waiters = append(ch.waiters, w)
	ready := ch.ready
	m.mu.Unlock()

	timer := time.NewTimer(m.opts.ConfirmTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		if ch.err != nil { // set before ready was closed
			w.Close()
			return nil, fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, ch.err)
		}
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
	switch {
	case c.sharded && ch.key != "":
		err = c.ps.Subscribe(ctx, ch.name) // a keyspace channel on its node
	case c.sharded:
		err = c.ps.SSubscribe(ctx, ch.name)
	default:
		err = c.ps.Subscribe(m.dialCtx(ctx), ch.name)
	}
	if err == nil {
		c.pending = append(c.pending, ch)
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
		_ = c.ps.Unsubscribe(m.dialCtx(context.WithoutCancel(ctx)), ch.name)
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
	m.receive(c)
	if m.follow != nil {
		m.loops.Add(1)
		go m.followLoop()
	}
	return c
}

// C receives a value each time the waiter is woken. One wake-up is buffered.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Also registers w on a second channel, name, subscribed as Subscribe
// does: a message there wakes w as one on its own channel does (on the
// same C). A waiter has at most one second channel: Also on a waiter that
// has one (Along) does nothing. Close ends both registrations; Drop ends
// the second one alone.
func (w *Waiter) Also(ctx context.Context, name string, wake Policy) error {
	if w.Along() {
		return nil
	}
	m := w.m
	var node *conn
	if m.cluster != nil && m.opts.Sharded != nil {
		sharded, err := m.opts.Sharded(ctx)
		if err != nil {
			return fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, err)
		}
		if sharded {
			if node, err = m.shardConn(ctx, name); err != nil {
				return fmt.Errorf("redisync/pubsub: subscribe %q: %w", name, err)
			}
		}
	}
	sec, err := m.subscribeInto(ctx, name, "", wake, node, w)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if w.closed || w.also != nil {
		m.mu.Unlock()
		sec.Close()
		return nil
	}
	w.also = sec
	m.mu.Unlock()
	return nil
}

// Along reports whether w is registered on a second channel (Also).
func (w *Waiter) Along() bool {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.also != nil
}

// Drop ends w's registration on its second channel (Also), if any.
func (w *Waiter) Drop() {
	w.m.mu.Lock()
	sec := w.also
	w.also = nil
	w.m.mu.Unlock()
	if sec != nil {
		sec.Close()
	}
}

// OnClose sets f to run once w is closed (after Close, outside the
// multiplexer's lock); on a closed waiter it runs f at once.
func (w *Waiter) OnClose(f func()) {
	w.m.mu.Lock()
	if !w.closed {
		w.onClose = f
		w.m.mu.Unlock()
		return
	}
	w.m.mu.Unlock()
	f()
}

// Close removes the waiter. A wake-up it received but did not consume is
// passed on to the next waiter, so leaving never swallows one. When the last
// waiter of a channel leaves, the channel is unsubscribed. Close is
// idempotent.
func (w *Waiter) Close() {
	m := w.m
	m.mu.Lock()
	if w.closed {
		m.mu.Unlock()
		return
	}
	sec, done := w.also, w.onClose
	w.also, w.onClose = nil, nil
	w.closeLocked()
	m.mu.Unlock()
	if sec != nil {
		sec.Close()
	}
	if done != nil {
		done()
	}
}

// closeLocked is Close under m.mu, for w's own registration.
func (w *Waiter) closeLocked() {
	m := w.m
	w.closed = true
	ch := w.ch
	for i, o := range ch.waiters {
		if o == w {
			ch.waiters = append(ch.waiters[:i], ch.waiters[i+1:]...)
			break
		}
	}
	if !w.secondary { // a second channel's registration shares its waiter's wake-ups
		select {
		case <-w.c:
			ch.signal(1)
		default:
		}
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
	if err := m.unsubscribeFrom(ctx, c, ch); err != nil {
		m.log.Warn("redisync: pubsub unsubscribe failed", "channel", ch.name, "err", err)
	}
}

// unsubscribeFrom sends ch's (S)UNSUBSCRIBE on c: SUNSUBSCRIBE for a
// sharded channel, UNSUBSCRIBE for a classic or keyspace one.
func (m *Mux) unsubscribeFrom(ctx context.Context, c *conn, ch *channel) error {
	switch {
	case c.sharded && ch.key != "":
		return c.ps.Unsubscribe(ctx, ch.name)
	case c.sharded:
		return c.ps.SUnsubscribe(ctx, ch.name)
	}
	return c.ps.Unsubscribe(m.dialCtx(ctx), ch.name)
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

// deliver wakes the waiters a message is for.
func (m *Mux) deliver(name, payload string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[name]
	if ch == nil || len(ch.waiters) == 0 {
		return
	}
	if ch.key != "" {
		ch.notified(payload)
		return
	}
	idle := ch.idle()
	if idle == 0 {
		return
	}
	ch.signal(ch.wake(payload, idle))
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
	// re-subscribes their channels) or moved to a new primary after a
	// Sentinel failover.
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
		for _, w := range ch.waiters {
			if !w.secondary { // a waiter's second channel (Also) is the same waiter
				s.Waiters++
			}
		}
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
