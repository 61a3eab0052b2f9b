package redisync

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/core/pipeline"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core"
)

// Client is the entry point of redisync: it holds the go-redis client, the
// client id that names this process's owners, the one pub/sub connection
// its waiters share and the one watchdog that renews its holds. Create one
// per process (or per Redis deployment) and share it; it is safe for
// concurrent use.
//
// Client is defined on the library's internal client state, so the
// primitives' packages reach that state with a conversion the compiler
// checks; none of it is exported.
type Client core.Client

// inner returns the client state.
func (c *Client) inner() *core.Client { return (*core.Client)(c) }

// New returns a Client over rdb, which may be a single-node client, a
// Sentinel failover client or a Cluster client. New does no I/O and never
// fails: an invalid option or a nil rdb is reported, wrapping
// ErrInvalidArgument, by the first operation of any primitive built on the
// Client.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	o := options{}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	c := (*Client)(core.NewClient(rdb, core.Options{
		WatchdogTimeout: o.watchdogTimeout,
		ID:              o.id,
		Logger:          o.logger,
		Recheck:         o.recheck,
		Err:             o.err,
		Sharded:         o.sharded.core(),
		Hooks:           hooks(o.observers),
		ReplicaSync:     o.replicaSync,
		KeyPrefix:       o.keyPrefix,
		Keyspace:        o.keyspace,
	}))
	attach(c, o.observers)
	return c
}

// ID returns the client id: the first part of every owner
// ("<client id>:<token>") this client acquires for. It is a random UUID unless
// set with WithID.
func (c *Client) ID() string { return c.inner().ID() }

// Redis returns the go-redis client the Client was built on.
func (c *Client) Redis() redis.UniversalClient { return c.inner().Redis() }

// Close stops the watchdog and the pub/sub connection. Locks held through
// the Client are not released: they expire after their lease, and their
// Done channels close with ErrLockLost. Every call on the Client or on a
// primitive built on it after Close returns ErrClosed, and waits in progress
// return ErrClosed.
//
// Before it returns, Close lets the clean-up under way finish, so that a
// process may exit right after it: the undos of interrupted acquisitions
// and the settles of lost releases (given at most 5 s after Close starts;
// an undo that could not be made is logged and counted in
// Stats.UndosFailed), and the fair-lock queue entries of waiters that the
// Close ended (each leave within its own bound of 10 s). A Client given an
// id with WithID frees it at once. Close is idempotent.
func (c *Client) Close() error { return c.inner().Close() }

// Shutdown releases every hold of the Client in Redis, then closes it
// (Close), so that a process on its way out (a rolling deploy) frees its
// locks at once instead of leaving them to expire with their leases: a
// waiter of another process gets them within a round trip.
//
// It releases every live hold of every lock kind (Lock, FairLock,
// SpinLock, both sides of an RWLock, MultiLock and RedLock members), of
// callers without a context owner and of context owners (WithOwner)
// alike, whatever its hold count, in parallel, for at most as long as ctx
// lasts. From the moment it starts, every new operation on the Client
// fails with ErrClosed (an Unlock racing with it included: Shutdown
// releases that hold), and waits under way end with ErrClosed when it
// closes the Client; an acquisition already sent to Redis when it starts
// is waited for (within ctx), and the hold it takes is released too. Semaphore permits and latches are not
// holds: they are left as they are.
//
// Holds of other owners' contexts are ended for them: code still working
// under such a hold sees its Hold's Done close, and Err (and the cause of
// its Context) is an error wrapping both ErrLockLost and ErrClosed
// ("released by Client.Shutdown"), as after a loss: the lock is no longer
// theirs, and another process may hold it already. So call Shutdown once
// the work that holds locks has stopped, or has been told to stop, as with
// http.Server.Shutdown. A release that fails or that ctx cuts leaves its
// hold to expire with its lease, as Close does, and its error is returned
// (joined with Close's). A Client closed already returns nil.
//
// Stats counts the holds Shutdown released in HoldsReleasedAtShutdown, not
// in HoldsLost (their HoldEnd has Shutdown set, Lost not), so that an alert
// on lost holds does not fire at every deploy; the holds it could not
// release are counted in HoldsLost, as Close's are.
func (c *Client) Shutdown(ctx context.Context) error { return core.Shutdown(ctx, c.inner()) }

// Option configures a Client.
type Option func(*options)

type options struct {
	watchdogTimeout time.Duration
	id              string
	logger          *slog.Logger
	recheck         time.Duration
	sharded         ShardedMode
	observers       []Observer // observe.go
	replicaSync     *pipeline.Settings
	keyPrefix       string
	keyspace        KeyspaceEventsMode // keyevents.go
	err             error
}

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
	}
}

// WithWatchdogTimeout sets the lease of holds acquired without a fixed lease.
// While such a hold lasts the watchdog renews it every d/3; if the process
// dies, the hold expires within d. d must be at least 30ms (the lease rule's
// 1 ms leaves no time to renew) and at most 2^43 ms (about 278 years, the
// longest lease; see the package documentation); it is sent to Redis in
// whole milliseconds, rounded up. The default is 30s.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 30*time.Millisecond {
			o.invalid("watchdog timeout %v, must be ≥ 30ms", d)
			return
		}
		if d > core.MaxLease {
			o.invalid("watchdog timeout %v, must be at most 2^43 ms (about 278 years)", d)
			return
		}
		o.watchdogTimeout = d
	}
}

// WithID sets the client id used in owner names ("<id>:<token>"). Ids must
// be unique among the live clients using the same Redis (Redisson uses a
// UUID per client, as does the default), and redisync checks it: a Client
// given an id with WithID registers it in Redis at its first operation (one
// round trip, then none: the key redisync:client:{<id>}, renewed every
// third of the watchdog timeout while the Client lives, with that timeout
// as its TTL). While another live Client holds the registration, every
// operation fails with ErrDuplicateID and changes nothing, rather than act
// for the other's owners. Close deletes the registration at once; a process
// that dies without Close frees it within its watchdog timeout, so a
// process restarted with the same id at once may be refused for that long.
// Random UUID ids cannot collide and are not registered. The id must not be
// empty. The default is a random UUID.
func WithID(id string) Option {
	return func(o *options) {
		if id == "" {
			o.invalid("empty client id")
			return
		}
		o.id = id
	}
}

// WithKeyPrefix puts prefix before the name of every primitive built on the
// Client, before any key or channel is derived from it, as a Redisson
// NameMapper that adds a prefix does: rlock.New(c, "x") uses the hash
// "<prefix>x", the channel "redisson_lock__channel:{<prefix>x}", the
// fencing counter "redisson_lock_token:{<prefix>x}", and so on for every
// primitive (rwlock timeout keys, fair-lock queues, semaphore, latch and
// rate-limiter keys, request records); the registration of an id given
// with WithID becomes "redisync:client:{<prefix><id>}". Name() still
// returns the name as given ("x"). Handles of Clients with different
// prefixes never meet: one without the prefix does not see the prefixed
// lock.
//
// Every key and channel of the Client then contains prefix, so one ACL key
// pattern and one channel pattern cover them all (SECURITY.md, "A
// least-privilege Redis user"). A Redisson (Java) service shares the
// primitives when it maps names the same way: in Redisson 3.x/4.x,
// Config.setNameMapper (or the nameMapper of the single-server, cluster or
// sentinel configuration) with a NameMapper whose map(name) returns
// prefix + name and whose unmap(name) strips it; see docs/operations.md.
//
// prefix must not contain '{' or '}' (they would change the hash tags the
// derived keys share on a Cluster) nor be longer than 256 bytes; an invalid
// prefix is reported, wrapping ErrInvalidArgument, by every operation. The
// default is no prefix.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) {
		switch {
		case strings.ContainsAny(prefix, "{}"):
			o.invalid("key prefix %q contains a brace: the keys derived from a name would hash to other Cluster slots", prefix)
			return
		case len(prefix) > maxKeyPrefix:
			o.invalid("key prefix of %d bytes, must be at most %d", len(prefix), maxKeyPrefix)
			return
		}
		o.keyPrefix = prefix
	}
}

// maxKeyPrefix is the longest prefix WithKeyPrefix takes.
const maxKeyPrefix = 256

// WithLogger sets the logger for events no call can report: renewal
// failures, lost holds, pub/sub reconnects, a primary whose
// maxmemory-policy can evict locks. Without it, Warn records and above go
// to slog.Default() (Debug and Info records are dropped); pass a logger
// with a discarding handler (slog.New(slog.DiscardHandler)) to silence
// them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// ReplicasAll is the replica count of WithReplicaSync that waits for
// every replica connected to the primary at the time.
const ReplicasAll = pipeline.All

// WithReplicaSync sets how acquisitions and releases wait for replicas to
// have their write, as Redisson's checkLockSyncedSlaves and
// slavesSyncTimeout do. Redis replicates asynchronously: without this, a
// lock that Lock returned, or permits that Acquire returned, can vanish
// when the primary dies before a replica has the write, and another
// process then takes them on the promoted replica.
//
// After every acquisition and release of a lock, fair lock, spin lock,
// read-write lock, semaphore and expirable semaphore, every in-process
// handoff (a release of this Client handing the lock to a waiter of the
// same Client, in one script) and every latch count-down, the Client waits
// until replicas replicas of the primary that ran it have the write (WAIT,
// in the same round trip as the script and on the same connection; on a
// Cluster, to the master of the lock's slot), at most timeout from the
// call. A Client's concurrent calls to one primary go in one pipeline,
// which one WAIT ends. ReplicasAll waits for every replica online on that
// primary. An acquisition not acknowledged in time is undone and returns
// an error wrapping ErrNotReplicated; a release or a count-down not
// acknowledged has taken effect on the primary and returns an error
// wrapping ErrNotReplicated that says so (do not retry it); a handoff not
// acknowledged is logged. When the primary has no replica online nothing
// is waited for and nothing extra is sent; the number of replicas follows
// the primary the scripts ran on: it is read (INFO replication) in the first batch of
// scripts sent to a primary, which therefore waits for none, then after a
// WAIT once a second or after an error that may mean a failover, and for
// a primary without replica in the background every second. A replica count larger than the replicas online waits for
// the timeout and fails the acquisition. Latch settings and deletions
// (as in Redisson) and reads do not wait. A watchdog renewal waits in
// the background, and extends a hold only when acknowledged: a hold's
// lease runs from its last acknowledged write (acquisition or renewal),
// and when it runs out the hold ends as lost (Done closes, the cause
// wraps ErrNotReplicated, Stats.HoldsLostUnreplicated) before a promoted
// replica could let another owner in (docs/leases.md).
//
// WAIT makes a write survive a failover to a replica that acknowledged it;
// it does not make Redis strongly consistent (that replica can fail too),
// and with appendonly on it does not wait for the disk (WAITAOF is not
// sent). replicas must be ReplicasAll or ≥ 0 and timeout ≥ 0, with both
// positive or both 0; WithReplicaSync(0, 0) turns acknowledgement off.
// The default is WithReplicaSync(ReplicasAll, time.Second).
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		switch {
		case replicas < ReplicasAll:
			o.invalid("replica count %d, must be ReplicasAll or ≥ 0", replicas)
			return
		case timeout < 0:
			o.invalid("replica sync timeout %v, must be ≥ 0", timeout)
			return
		case (replicas == 0) != (timeout == 0):
			o.invalid("replica sync (%d, %v): replicas and timeout must both be set, or both 0 (off)", replicas, timeout)
			return
		case timeout > 0 && timeout < time.Millisecond:
			o.invalid("replica sync timeout %v, must be ≥ 1ms", timeout)
			return
		}
		o.replicaSync = &pipeline.Settings{Replicas: replicas, Timeout: timeout}
	}
}

// WithRecheckInterval sets the longest a waiter sleeps before re-checking in
// Redis when no pub/sub message wakes it. Messages can be lost (a
// reconnect, a failover), so every wait re-checks at least this often, and
// sooner when it knows when the condition may change by itself (the holder's
// remaining lease, the next permit expiry). d must be positive. The default
// is 5s.
func WithRecheckInterval(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("recheck interval %v, must be positive", d)
			return
		}
		o.recheck = d
	}
}

// WithOwner returns a context that carries a new owner. Every redisync
// handle used with that context, or with one derived from it, acts for that
// owner instead of its own: the call chain that carries the context
// re-enters the locks it already holds, as a Java thread does with Redisson.
// The owner's token is a random 63-bit number (never 0, never repeated
// within the process), so owners of different processes do not meet even
// under the same client id.
func WithOwner(ctx context.Context) context.Context {
	return core.WithOwnerToken(ctx, core.NewToken())
}

// WithOwnerToken returns a context that carries the owner with the given
// token, to hand a hold over to another goroutine (pass the token along) or
// to act again for an owner after a restart of the call chain. The owner is
// "<client id>:<token>" for the Client a handle belongs to. token must be
// positive; a context carrying 0 makes every operation fail with
// ErrInvalidArgument.
func WithOwnerToken(ctx context.Context, token uint64) context.Context {
	return core.WithOwnerToken(ctx, token)
}

// OwnerToken returns the owner token ctx carries (from WithOwner or
// WithOwnerToken), and whether it carries one.
func OwnerToken(ctx context.Context) (uint64, bool) { return core.OwnerToken(ctx) }
