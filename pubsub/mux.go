package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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
	// defaultPingInterval is how long the connection may stay silent before
	// the multiplexer pings it; a ping unanswered for as long again means the
	// connection is dead and it is replaced.
	defaultPingInterval = 10 * time.Second
)

// Options tune a Mux. The zero value gives the defaults.
type Options struct {
	// Logger receives connection errors and reconnects. The default discards.
	Logger *slog.Logger
	// ConfirmTimeout bounds the wait for a subscription's confirmation.
	// The default is 10s.
	ConfirmTimeout time.Duration
	// PingInterval is the silence after which the connection is pinged, and
	// the time a ping may stay unanswered before the connection is replaced.
	// The default is 10s.
	PingInterval time.Duration
}

// Mux multiplexes the waiters of one redisync client over one Redis pub/sub
// connection. It is safe for concurrent use. The connection is opened by the
// first Subscribe, not by New.
type Mux struct {
	rdb  redis.UniversalClient
	log  *slog.Logger
	opts Options

	mu       sync.Mutex
	ps       *redis.PubSub       // current connection; nil until the first Subscribe
	chans    map[string]*channel // channels subscribed or being subscribed
	closed   bool
	stop     chan struct{} // closed by Close
	loopDone chan struct{} // closed when the receive loop has returned
	started  bool
	reconns  int // connections replaced after a dead ping, for Stats
}

// channel is one subscribed channel and its local waiters in arrival order.
type channel struct {
	name      string
	wake      Policy
	waiters   []*Waiter
	confirmed bool
	ready     chan struct{} // closed when Redis confirmed the subscription
	// orphaned: every waiter left before the confirmation arrived. The
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
	return &Mux{
		rdb:      rdb,
		log:      opts.Logger,
		opts:     opts,
		chans:    make(map[string]*channel),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
}

// Subscribe registers a waiter on channel and returns once Redis has
// confirmed the subscription, so that a message published after Subscribe
// returns is seen. wake decides, for each message, how many waiters wake; the
// first waiter of a channel sets it for all of them.
//
// On failure (ctx done, Mux closed, the confirmation not arriving within the
// confirm timeout, a connection error) it returns an error and leaves no
// registration behind; when ctx is done the error wraps ctx.Err().
func (m *Mux) Subscribe(ctx context.Context, name string, wake Policy) (*Waiter, error) {
	if wake == nil {
		wake = WakeOne
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if !m.started {
		m.started = true
		m.ps = m.rdb.Subscribe(context.Background())
		go m.loop()
	}
	ch := m.chans[name]
	if ch == nil {
		ch = &channel{name: name, wake: wake, ready: make(chan struct{})}
		m.chans[name] = ch
		// The SUBSCRIBE is written under m.mu so that SUBSCRIBE and
		// UNSUBSCRIBE of one channel reach Redis in the order decided here.
		if err := m.ps.Subscribe(ctx, name); err != nil {
			delete(m.chans, name)
			// go-redis tracks the channel even when the write failed; forget it
			// so that a reconnect does not subscribe it for nobody.
			_ = m.ps.Unsubscribe(context.WithoutCancel(ctx), name)
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
	if !ch.confirmed {
		ch.orphaned = true
		return
	}
	m.unsubscribeLocked(ch)
}

// unsubscribeLocked forgets ch and sends UNSUBSCRIBE. m.mu must be held.
func (m *Mux) unsubscribeLocked(ch *channel) {
	delete(m.chans, ch.name)
	if m.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
	defer cancel()
	if err := m.ps.Unsubscribe(ctx, ch.name); err != nil {
		m.log.Warn("redisync: pubsub unsubscribe failed", "channel", ch.name, "err", err)
	}
}

// signal wakes up to n waiters that are not already woken, oldest first
// (n < 0: all). It returns how many it woke. m.mu must be held.
func (ch *channel) signal(n int) int {
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
	return woken
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

// loop is the one goroutine that reads the pub/sub connection.
func (m *Mux) loop() {
	defer close(m.loopDone)
	ctx := context.Background()
	pinged := false
	backoff := 50 * time.Millisecond
	for {
		m.mu.Lock()
		ps, closed := m.ps, m.closed
		m.mu.Unlock()
		if closed {
			return
		}
		msg, err := ps.ReceiveTimeout(ctx, m.opts.PingInterval)
		if err != nil {
			m.mu.Lock()
			closed, replaced := m.closed, m.ps != ps
			m.mu.Unlock()
			if closed {
				return
			}
			if replaced {
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if pinged {
					m.log.Warn("redisync: pubsub connection unresponsive, reconnecting")
					m.replace(ps)
					pinged = false
					continue
				}
				pinged = true
				if err := ps.Ping(ctx); err != nil {
					m.log.Debug("redisync: pubsub ping failed", "err", err)
				}
				continue
			}
			m.log.Warn("redisync: pubsub receive failed", "err", err)
			select {
			case <-m.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff, pinged = 50*time.Millisecond, false
		switch msg := msg.(type) {
		case *redis.Subscription:
			if msg.Kind == "subscribe" {
				m.confirm(msg.Channel)
			}
		case *redis.Message:
			m.deliver(msg.Channel, msg.Payload)
		}
	}
}

// confirm handles Redis's acknowledgement of a SUBSCRIBE.
func (m *Mux) confirm(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[name]
	if ch == nil {
		return // the acknowledgement of a channel already left
	}
	if ch.confirmed {
		// A confirmed channel is acknowledged again only after a reconnect
		// re-subscribed it: messages may have been lost meanwhile, so every
		// waiter re-checks.
		ch.signal(-1)
		return
	}
	ch.confirmed = true
	close(ch.ready)
	if ch.orphaned && len(ch.waiters) == 0 {
		m.unsubscribeLocked(ch)
	}
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

// replace swaps a dead connection for a new one that re-subscribes every
// channel; their acknowledgements wake all waiters to re-check.
func (m *Mux) replace(old *redis.PubSub) {
	m.mu.Lock()
	if m.closed || m.ps != old {
		m.mu.Unlock()
		return
	}
	m.reconns++
	m.ps = m.rdb.Subscribe(context.Background())
	names := make([]string, 0, len(m.chans))
	for name := range m.chans {
		names = append(names, name)
	}
	if len(names) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
		if err := m.ps.Subscribe(ctx, names...); err != nil {
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
	Leaving    int
	Waiters    int // registered waiters over all channels
	Reconnects int // connections replaced after an unanswered ping
}

// Stats returns a snapshot of the multiplexer's state.
func (m *Mux) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Reconnects: m.reconns}
	for _, ch := range m.chans {
		if ch.orphaned {
			s.Leaving++
		} else {
			s.Channels++
		}
		s.Waiters += len(ch.waiters)
	}
	return s
}

// Close unsubscribes everything, closes the connection and stops the receive
// loop, waking every waiter (their Subscribe or wait then sees ErrClosed). It
// is idempotent.
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
	ps, started := m.ps, m.started
	m.mu.Unlock()
	if !started {
		return nil
	}
	err := ps.Close()
	<-m.loopDone
	return err
}
