package pubsub

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// The receive loop: one goroutine per connection reads its messages and
// subscription events, pings it when it is silent and replaces it when
// the ping goes unanswered.

// receiver is the goroutine that reads one connection (see run), with the
// state it keeps between receives.
type receiver struct {
	m *Mux
	c *conn
	// pinged: the connection was silent for a ping interval and pinged;
	// silent for another, it is replaced.
	pinged bool
	// broken: the classic connection failed; go-redis dials it again and
	// re-subscribes its channels on the next receive, and the first one
	// that succeeds counts as a reconnect.
	broken  bool
	backoff time.Duration // the pause after the next failed receive
}

// receive starts the receive loop of c. m.mu must be held.
func (m *Mux) receive(c *conn) {
	m.loops.Add(1)
	r := &receiver{m: m, c: c, backoff: minBackoff}
	go r.run()
}

// run reads the connection until the Mux is closed or, in sharded mode,
// the connection is retired.
func (r *receiver) run() {
	m, c := r.m, r.c
	defer m.loops.Done()
	rctx := context.Background()
	if !c.sharded {
		rctx = m.dialCtx(rctx) // a reconnect dials the classic connection
	}
	for {
		m.mu.Lock()
		ps, done := c.ps, m.closed || c.retired
		m.mu.Unlock()
		if done {
			return
		}
		msg, err := ps.ReceiveTimeout(rctx, m.opts.PingInterval)
		if err != nil {
			if !r.failed(ps, err) {
				return
			}
			continue
		}
		r.received()
		r.dispatch(msg)
	}
}

// failed handles a failed receive on ps, and reports whether the loop
// goes on.
func (r *receiver) failed(ps *redis.PubSub, err error) bool {
	m, c := r.m, r.c
	m.mu.Lock()
	done, replaced := m.closed || c.retired, c.ps != ps
	m.mu.Unlock()
	if done {
		return false
	}
	if replaced {
		return true
	}
	var ne net.Error
	var re redis.Error
	switch {
	case errs.Refused(err) != nil:
		// Redis refused a command on the connection, which stays up: a
		// subscription the ACL user may not make (NOPERM).
		m.refuse(c, err)
		return true
	case errors.As(err, &ne) && ne.Timeout():
		r.silent(ps, err)
		return true
	case errors.As(err, &re) && c.sharded:
		// The reply to an SSUBSCRIBE or SUNSUBSCRIBE: the slot is not
		// (or no longer) served there, or the cluster is down.
		m.refused(c, err)
		return true
	case c.sharded:
		// The node is gone or the connection broke: go-redis would
		// re-subscribe all its channels in one command, which fails
		// for channels of several slots, and the slots may have a
		// new master by now. Route them again instead.
		m.log.Warn("redisync: sharded pubsub connection lost, re-subscribing its channels", "addr", c.addr, "err", err)
		m.mu.Lock()
		m.retireLocked(c, err)
		m.mu.Unlock()
		return false
	}
	m.log.Warn("redisync: pubsub receive failed", "err", err)
	if !errors.As(err, &re) {
		r.broken = true
	}
	return r.pause()
}

// silent handles a receive on ps that timed out (err): the first time the
// connection is pinged; when it stays silent through the next one too, it
// is replaced.
func (r *receiver) silent(ps *redis.PubSub, err error) {
	if r.pinged {
		r.m.log.Warn("redisync: pubsub connection unresponsive, reconnecting", "addr", r.c.addr)
		r.m.replace(r.c, ps, err)
		r.pinged = false
		return
	}
	r.pinged = true
	ctx := context.Background()
	if !r.c.sharded {
		ctx = r.m.dialCtx(ctx)
	}
	if err := ps.Ping(ctx); err != nil {
		r.m.log.Debug("redisync: pubsub ping failed", "err", err)
	}
}

// pause waits out the back-off after a failed receive and doubles it, up
// to maxBackoff. It reports false when the Mux is closed meanwhile.
func (r *receiver) pause() bool {
	select {
	case <-r.m.stop:
		return false
	case <-time.After(r.backoff):
	}
	r.backoff = min(r.backoff*2, maxBackoff)
	return true
}

// received resets the back-off and the ping after a successful receive,
// and counts a broken classic connection that works again as a reconnect.
func (r *receiver) received() {
	r.backoff, r.pinged = minBackoff, false
	if r.broken {
		r.broken = false
		r.m.mu.Lock()
		r.m.reconns++
		r.m.mu.Unlock()
	}
}

// dispatch hands a received subscription event or message to the Mux.
func (r *receiver) dispatch(msg any) {
	switch msg := msg.(type) {
	case *redis.Subscription:
		switch msg.Kind {
		case "subscribe", "ssubscribe":
			r.m.confirm(r.c, msg.Channel)
		case "sunsubscribe":
			r.m.ended(r.c, msg.Channel)
		}
	case *redis.Message:
		r.m.deliver(msg.Channel, msg.Payload)
	}
}

// confirm handles Redis's acknowledgement of a (S)SUBSCRIBE on c.
func (m *Mux) confirm(c *conn, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.acknowledged(name)
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

// acknowledged drops the channel name from c's pending subscriptions (the
// first one of that name: Redis acknowledges in the order written). m.mu
// must be held.
func (c *conn) acknowledged(name string) {
	for i, ch := range c.pending {
		if ch.name == name {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return
		}
	}
}

// refuse handles an error reply on c by which Redis refused a command
// (errs.Refused: NOPERM, NOAUTH): the first subscription written on c and
// not yet acknowledged is the one refused. A channel no waiter has seen
// confirmed yet fails: its waiters' Subscribe returns err at once, and it
// is forgotten (here and by go-redis, which would subscribe it again
// after a reconnect). A refusal of a re-subscription (the user's rights
// changed since) leaves its waiters to their re-checks; so does a refusal
// of anything else (a PING).
func (m *Mux) refuse(c *conn, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log.Warn("redisync: pubsub command refused by Redis", "addr", c.addr, "err", err)
	for len(c.pending) > 0 {
		ch := c.pending[0]
		c.pending = c.pending[1:]
		if ch.conn != c || ch.acked || m.chans[ch.name] != ch {
			continue // moved, acknowledged or forgotten since
		}
		if ch.readied {
			return
		}
		ch.err = errs.Refused(err)
		ch.conn, ch.readied = nil, true
		close(ch.ready)
		delete(m.chans, ch.name)
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.ConfirmTimeout)
		_ = m.unsubscribeFrom(ctx, c, ch)
		cancel()
		return
	}
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
		if err := c.ps.Subscribe(m.dialCtx(ctx), names...); err != nil {
			// go-redis keeps the channels and re-subscribes them when the
			// receive loop reconnects.
			m.log.Warn("redisync: pubsub re-subscribe failed", "err", err)
		}
		cancel()
	}
	m.mu.Unlock()
	_ = old.Close()
}
