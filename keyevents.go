package redisync

import (
	"strconv"
	"time"

	"github.com/redisync/redisync/pubsub"
)

// KeyEvent is a deletion, expiry or eviction of a lock's key in Redis,
// whoever caused it, as Redis reported it through a keyspace notification
// (Redisson 3.43's lock listeners: deleted-object and expired-object
// listeners). The lock kinds' Events methods (rlock's Lock, FairLock,
// SpinLock; rwlock's RWLock) deliver them.
//
// Notifications are hints, as every Redis pub/sub message: one published
// while the Client's pub/sub connection was down or moving to another node
// is lost, and Redis publishes none for FLUSHDB or FLUSHALL. They tell
// that the key went, not who held it: a lock released by its holder's
// Unlock is deleted too. On a Cluster, a slot migration deletes the key on
// the master it leaves (MIGRATE), which reports a KeyDeleted although the
// lock lives on at its new master: read the lock (IsLocked, Inspect) when
// it matters.
type KeyEvent struct {
	// Key is the Redis key, with the Client's key prefix (WithKeyPrefix).
	Key string
	// Kind is what happened to it.
	Kind KeyEventKind
	// Time is when the Client received the notification, by its clock.
	Time time.Time
}

// KeyEventKind is what happened to a key.
type KeyEventKind int

const (
	// KeyDeleted means the key was deleted (DEL or UNLINK: an Unlock that
	// released the last hold, a ForceUnlock, redisync unlock -force, a
	// Redisson forceUnlock, an operator; and MIGRATE on a Cluster).
	KeyDeleted KeyEventKind = iota + 1
	// KeyExpired means the key's lease ran out (its holder died or stopped
	// renewing).
	KeyExpired
	// KeyEvicted means Redis evicted the key under maxmemory. Reported only
	// when notify-keyspace-events also has e (or A).
	KeyEvicted
)

// String returns "deleted", "expired" or "evicted".
func (k KeyEventKind) String() string {
	switch k {
	case KeyDeleted:
		return "deleted"
	case KeyExpired:
		return "expired"
	case KeyEvicted:
		return "evicted"
	}
	return "KeyEventKind(" + strconv.Itoa(int(k)) + ")"
}

// KeyspaceEventsMode says whether a Client uses Redis keyspace
// notifications of its locks' keys: for the Events of the lock kinds, and
// so that a hold's Done closes within a round trip when its key is
// deleted or expires (see docs/lock-events.md). It is the mode of the
// Client's pub/sub multiplexer (pubsub.KeyspaceMode), under the name the
// Client's option takes; its String is "auto", "on" or "off".
//
// Redis publishes them only when the node that holds the key has
// notify-keyspace-events with K (keyspace channels), g (del) and x
// (expired), or K and A: for example CONFIG SET notify-keyspace-events
// Kgx. (Redisson's lock listeners use the keyevent channels, E: KEgx
// serves both.)
type KeyspaceEventsMode = pubsub.KeyspaceMode

const (
	// KeyspaceEventsAuto reads notify-keyspace-events (CONFIG GET) on the
	// node that holds the key before subscribing, at most every 5 s per
	// node. When the flags are off, Events returns an error wrapping
	// ErrKeyspaceEventsOff, and holds rely on the watchdog's re-check
	// alone; when the ACL user may not run CONFIG GET, Events returns an
	// error wrapping ErrNoPermission that says so.
	KeyspaceEventsAuto KeyspaceEventsMode = pubsub.KeyspaceAuto
	// KeyspaceEventsOn declares the flags set: the Client subscribes
	// without reading them (for an ACL user without +config|get). With
	// the flags off no notification comes: Events never fires, and holds
	// rely on the watchdog's re-check.
	KeyspaceEventsOn KeyspaceEventsMode = pubsub.KeyspaceOn
	// KeyspaceEventsOff never subscribes to keyspace notifications:
	// Events returns an error wrapping ErrKeyspaceEventsOff, and holds
	// rely on the watchdog's re-check alone, as before redisync had them.
	KeyspaceEventsOff KeyspaceEventsMode = pubsub.KeyspaceOff
)

// WithKeyspaceEvents sets whether the Client uses Redis keyspace
// notifications of its locks' keys (see KeyspaceEventsMode). When they
// are on, a watchdog-renewed hold whose Done (or Context) is watched
// subscribes to its key's notifications: a deletion or expiry of the key
// by anyone (a DEL, a ForceUnlock or redisync unlock -force elsewhere, an
// expiry after a pause) makes the watchdog re-check that hold at once,
// with the renewal script, which tells whether the hold is still this
// owner's; a hold found gone ends with ErrLockLost within a round trip
// instead of at the next renewal (up to a third of the watchdog timeout).
// The periodic renewal stays as the fallback, since notifications can be
// lost. A value other than KeyspaceEventsAuto, KeyspaceEventsOn and
// KeyspaceEventsOff is an invalid argument. The default is
// KeyspaceEventsAuto.
func WithKeyspaceEvents(m KeyspaceEventsMode) Option {
	return func(o *options) {
		if m < KeyspaceEventsAuto || m > KeyspaceEventsOff {
			o.invalid("keyspace events mode %d, must be KeyspaceEventsAuto, KeyspaceEventsOn or KeyspaceEventsOff", m)
			return
		}
		o.keyspace = m
	}
}
