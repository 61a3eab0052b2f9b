package core

import (
	"sync"
	"time"

	"github.com/redisync/redisync/pubsub"
)

// Lingering subscriptions (docs/wake.md, "The subscription lingers").
//
// A queued wait ([PubSub].Queue) listens on its Client's own channel. When
// it ends with what it waited for taken, nobody of the Client waits any
// more, and the subscription would be closed: an UNSUBSCRIBE now, and a
// SUBSCRIBE, plus an attempt made once it is confirmed, at the Client's
// next wait for the same lock. Under contention that is every
// acquisition. So the subscription is kept instead, parked, for
// lingerFor: the next wait of the Client for that lock takes it back
// ([parking.unpark]) and joins the queue with its very first attempt, which it may,
// as it listens already. A parked subscription is the Client's alone and
// hears nothing: the Client left the queue (park takes it out when it is
// still in: [parking.park]), and releases wake only the Clients queued.

// lingerFor is how long a queued wait's subscription is kept after the
// wait took what it waited for (parked), for the Client's next wait.
const lingerFor = time.Second

// parking is a Client's parked subscriptions, by channel.
type parking struct {
	mu     sync.Mutex
	m      map[string]*parked
	closed bool
}

// parked is one parked subscription and the timer that closes it.
type parked struct {
	w *pubsub.Waiter
	t *time.Timer
}

// park keeps w, a queued wait's subscription to channel (the Client's
// own) for lingerFor, once the wait took what it waited for: first ended
// runs (the Client leaves the queue if it is still in it: its wait ended
// in a handoff), and w leaves the primitive's channel; a wake-up w
// received is dropped. A subscription parked already for channel is
// kept, and w closed.
func (p *parking) park(channel string, w *pubsub.Waiter, ended func()) {
	ended()
	w.Drop()
	drain(w)
	p.mu.Lock()
	if p.closed || p.m[channel] != nil {
		p.mu.Unlock()
		w.Close()
		return
	}
	if p.m == nil {
		p.m = make(map[string]*parked)
	}
	e := &parked{w: w}
	e.t = time.AfterFunc(lingerFor, func() {
		p.mu.Lock()
		mine := p.m[channel] == e
		if mine {
			delete(p.m, channel)
		}
		p.mu.Unlock()
		if mine {
			w.Close()
		}
	})
	p.m[channel] = e
	p.mu.Unlock()
}

// unpark returns the subscription parked for the channel prefix+id, nil
// if none; the caller owns it from then on. (The channel's name is made
// only when something is parked: the uncontended lock's path allocates
// nothing here.)
func (p *parking) unpark(prefix, id string) *pubsub.Waiter {
	p.mu.Lock()
	if len(p.m) == 0 {
		p.mu.Unlock()
		return nil
	}
	channel := prefix + id
	e := p.m[channel]
	if e == nil {
		p.mu.Unlock()
		return nil
	}
	delete(p.m, channel)
	p.mu.Unlock()
	e.t.Stop()
	drain(e.w)
	return e.w
}

// close closes every parked subscription, and each one parked from now
// on: the Client is closing.
func (p *parking) close() {
	p.mu.Lock()
	m := p.m
	p.m, p.closed = nil, true
	p.mu.Unlock()
	for _, e := range m {
		e.t.Stop()
		e.w.Close()
	}
}

// drain drops a wake-up w received and did not consume.
func drain(w *pubsub.Waiter) {
	select {
	case <-w.C():
	default:
	}
}
