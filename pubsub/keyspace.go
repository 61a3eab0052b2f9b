package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// Keyspace notifications: a key's deletions and expiries, which Redis
// publishes on the keyspace channel __keyspace@<db>__:<key> of the node
// that holds the key (on a Cluster only there: they are not carried over
// the cluster bus as PUBLISH is, and the channel's own slot says nothing
// of where the key lives). The Mux subscribes such a channel with
// SUBSCRIBE on the classic connection, or on a Cluster on the connection
// to the master of the key's slot, which the route loop moves when the
// slot map names another master (a migration, a failover).

// KeyspaceMode says whether Keyspace subscribes, and whether it first
// asks the key's node which notifications it publishes. A Client's option
// sets it under the name redisync.KeyspaceEventsMode, an alias of this
// type.
type KeyspaceMode int

const (
	// KeyspaceAuto reads notify-keyspace-events on the key's node (CONFIG
	// GET, its answer kept for flagsTTL per node) and subscribes only when
	// the flags it needs are on.
	KeyspaceAuto KeyspaceMode = iota
	// KeyspaceOn subscribes without asking: the operator declares the
	// flags on (for an ACL user that may not run CONFIG GET).
	KeyspaceOn
	// KeyspaceOff never subscribes: Keyspace fails with
	// redisync.ErrKeyspaceEventsOff.
	KeyspaceOff
)

// String returns "auto", "on" or "off".
func (m KeyspaceMode) String() string {
	switch m {
	case KeyspaceAuto:
		return "auto"
	case KeyspaceOn:
		return "on"
	case KeyspaceOff:
		return "off"
	}
	return "KeyspaceMode(" + strconv.Itoa(int(m)) + ")"
}

// Keyspace events the Mux passes on (Waiter.Events); every other
// notification of the key (expire, hset, ...) is dropped on arrival.
const (
	EventDel     = "del"     // DEL, UNLINK, and a MIGRATE moving the key off the node
	EventExpired = "expired" // the key's TTL ran out
	EventEvicted = "evicted" // maxmemory evicted the key (needs the e flag)
)

// maxKept bounds a waiter's events not yet taken: beyond it the oldest
// are dropped.
const maxKept = 64

// flagsTTL is how long the Mux keeps a node's answer to CONFIG GET
// notify-keyspace-events.
const flagsTTL = 5 * time.Second

// flagsSeen is a node's answer to CONFIG GET notify-keyspace-events: nil
// when the flags Keyspace needs are on, else why not (off, or the ACL
// refused the command); at is when it was read.
type flagsSeen struct {
	err error
	at  time.Time
}

// Keyspace registers a waiter on the keyspace notifications of key, the
// Redis key as stored (prefix included), and returns once Redis has
// confirmed the subscription: a deletion (DEL, UNLINK), expiry or
// eviction of key after Keyspace returns wakes the waiter, and its event
// name (EventDel, EventExpired, EventEvicted) is kept for Events. Every
// waiter of the channel is woken by each of them; the waiter is also
// woken with no event when the subscription was made again (a reconnect,
// the key's slot moved), since notifications may have been lost
// meanwhile. Close it when done.
//
// The channel is __keyspace@<db>__:<key> (db: the go-redis client's, 0 on
// a Cluster), subscribed with SUBSCRIBE on the classic connection, or on
// a Cluster on the master that serves key's slot: Redis publishes a key's
// notifications only on the node that holds it. When the slot map later
// names another master for the slot (checked every second), the channel
// is subscribed again there.
//
// Redis publishes them only with notify-keyspace-events set to include K
// and g and x (or K and A). With Options.Keyspace KeyspaceAuto (the
// default) Keyspace first reads that setting on the key's node (CONFIG
// GET; an answer is kept 5 s per node): when the flags are off it fails
// with an error wrapping redisync.ErrKeyspaceEventsOff that names the
// CONFIG SET to run; when the ACL user may not run CONFIG GET, with one
// wrapping redisync.ErrNoPermission that says to grant +config|get or to
// declare the flags (KeyspaceOn). With KeyspaceOff it always fails with
// redisync.ErrKeyspaceEventsOff. The setting is not read again when the
// subscription moves to another node. Other failures are Subscribe's; no
// registration is left behind.
func (m *Mux) Keyspace(ctx context.Context, key string) (*Waiter, error) {
	if m.opts.Keyspace == KeyspaceOff {
		return nil, fmt.Errorf("%w: turned off for this client (redisync.WithKeyspaceEvents(redisync.KeyspaceEventsOff))",
			errs.ErrKeyspaceEventsOff)
	}
	var db int
	var node *redis.Client // the master of key's slot on a Cluster
	switch c := m.rdb.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("redisync/pubsub: keyspace notifications of %q: master of its slot: %w", key, err)
		}
		node = n
	case *redis.Client:
		db = c.Options().DB
	default:
		return nil, fmt.Errorf("redisync/pubsub: keyspace notifications of %q: not supported on a %T", key, m.rdb)
	}
	if m.opts.Keyspace == KeyspaceAuto {
		if err := m.checkFlags(ctx, node); err != nil {
			return nil, err
		}
	}
	var c *conn
	if node != nil {
		var err error
		if c, err = m.nodeConn(ctx, node); err != nil {
			return nil, fmt.Errorf("redisync/pubsub: keyspace notifications of %q: %w", key, err)
		}
	}
	return m.subscribe(ctx, keyspaceChannel(db, key), key, WakeAll, c)
}

// keyspaceChannel returns the channel of key's keyspace notifications in
// database db.
func keyspaceChannel(db int, key string) string {
	return "__keyspace@" + strconv.Itoa(db) + "__:" + key
}

// slotKey returns what decides the cluster slot of channel name: the key
// of a keyspace channel, the name itself for any other.
func slotKey(name string) string {
	if strings.HasPrefix(name, "__keyspace@") {
		if i := strings.Index(name, "__:"); i >= 0 {
			return name[i+3:]
		}
	}
	return name
}

// slotKey is slotKey of ch's name.
func (ch *channel) slotKey() string {
	if ch.key != "" {
		return ch.key
	}
	return ch.name
}

// checkFlags reports whether the node (nil: the client's own node, the
// primary) publishes the keyspace notifications Keyspace needs, from its
// kept answer when fresh, else by CONFIG GET notify-keyspace-events. A
// failure to ask (the network) is returned and not kept.
func (m *Mux) checkFlags(ctx context.Context, node *redis.Client) error {
	rdb, addr := redis.UniversalClient(node), ""
	if node != nil {
		addr = node.Options().Addr
	} else {
		rdb = m.rdb
	}
	m.mu.Lock()
	seen, ok := m.flags[addr]
	m.mu.Unlock()
	if ok && time.Since(seen.at) < flagsTTL {
		return seen.err
	}
	where := "the server"
	if addr != "" {
		where = addr
	}
	res, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	switch refused := errs.Refused(err); {
	case refused != nil && errors.Is(refused, errs.ErrNoPermission):
		err = fmt.Errorf("redisync/pubsub: cannot tell whether %s publishes keyspace notifications: "+
			"CONFIG GET notify-keyspace-events was refused (%w); grant the Redis user +config|get, or declare "+
			"the flags set with redisync.WithKeyspaceEvents(redisync.KeyspaceEventsOn)", where, refused)
	case err != nil:
		return fmt.Errorf("redisync/pubsub: read notify-keyspace-events on %s: %w", where, err)
	default:
		err = flagsErr(res["notify-keyspace-events"], where)
	}
	m.mu.Lock()
	if m.flags == nil {
		m.flags = make(map[string]flagsSeen)
	}
	m.flags[addr] = flagsSeen{err: err, at: time.Now()}
	m.mu.Unlock()
	return err
}

// flagsErr returns nil when flags, a notify-keyspace-events value, has
// what Keyspace needs (K, and g and x or A), else an error wrapping
// redisync.ErrKeyspaceEventsOff that names the value to set.
func flagsErr(flags, where string) error {
	need := ""
	if !strings.Contains(flags, "K") {
		need += "K"
	}
	if !strings.Contains(flags, "A") {
		for _, f := range "gx" {
			if !strings.ContainsRune(flags, f) {
				need += string(f)
			}
		}
	}
	if need == "" {
		return nil
	}
	return fmt.Errorf("%w: notify-keyspace-events is %q on %s; redisync needs K (keyspace channels), "+
		"g (del) and x (expired), or KA: run CONFIG SET notify-keyspace-events %s (and set it in redis.conf)",
		errs.ErrKeyspaceEventsOff, flags, where, flags+need)
}

// notified hands a keyspace notification of ch's key (its event name) to
// every waiter: one that Events passes on is kept and wakes them all.
// m.mu must be held.
func (ch *channel) notified(event string) {
	switch event {
	case EventDel, EventExpired, EventEvicted:
	default:
		return
	}
	for _, w := range ch.waiters {
		if len(w.events) == maxKept {
			w.events = append(w.events[:0], w.events[1:]...)
		}
		w.events = append(w.events, event)
	}
	ch.signal(-1)
}

// Events returns, and forgets, the keyspace events (EventDel,
// EventExpired, EventEvicted) that reached a waiter made by Keyspace
// since the last call, oldest first: at most the last 64. It returns nil
// for a waiter made by Subscribe.
func (w *Waiter) Events() []string {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	ev := w.events
	w.events = nil
	return ev
}
