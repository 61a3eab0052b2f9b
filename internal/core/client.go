package core

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/pipeline"
	"github.com/redisync/redisync/internal/core/request"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Defaults, set here only.
const (
	DefaultWatchdogTimeout = 30 * time.Second
	DefaultRecheck         = 5 * time.Second
)

// Options configure a Client. The root package's functional options fill it.
type Options struct {
	WatchdogTimeout time.Duration // lease of watchdog-renewed holds; renewed every third of it
	ID              string        // client id; a random UUID when empty
	Logger          *slog.Logger  // nil: Warn records and above to slog.Default()
	Recheck         time.Duration // cap on a waiter's fallback re-check interval
	Err             error         // first invalid option, reported by every operation
	Sharded         ShardedMode   // sharded pub/sub on a Cluster ([Client.PublishCommand])
	Hooks           *Hooks        // observer hooks (observe.go); nil: none
	// KeyPrefix is put before every primitive's name before any key or
	// channel is derived from it ([NewHandle]), and before the id in the
	// registration key of an explicit id; "" for none.
	KeyPrefix string
	// ReplicaSync: replica acknowledgement (package pipeline); nil: the
	// default, [pipeline.DefaultSettings].
	ReplicaSync *pipeline.Settings
	// Keyspace: whether keyspace notifications are used (the lock kinds'
	// Events; a watched hold's fast loss, events.go).
	Keyspace pubsub.KeyspaceMode
}

// Client is the state behind a redisync.Client.
type Client struct {
	rdb     redis.UniversalClient
	id      string
	opts    Options
	log     *slog.Logger
	mux     *pubsub.Mux
	reqs    *request.Requests // exactly-once requests (package request)
	cluster bool
	pub     publishMode

	// bg is the background work (undos, clock readings) that Close
	// waits for after closing ([bg.Group.Closing]), which cancels it.
	bg        *bg.Group
	closing   <-chan struct{}
	closeOnce sync.Once

	pipe *pipeline.Pipeline // the script pipeline, which waits for replicas (package pipeline)
	// freshBase is added to the tokens of fresh holds' owners ([freshToken]):
	// random, 13 decimal digits.
	freshBase uint64

	holds  *Holds // live holds and their watchdog (hold.go, watchdog.go)
	owners ownerLocks
	// ownerless: the handles that hold without a context owner, per lock
	// (doc.go: "Ownerless holds").
	ownerless ownerlessRegistry
	lines     Lines
	parking   parking  // queued waits' subscriptions kept for the next wait (linger.go)
	ctr       counters // what Stats reads and OnClose keeps (observe.go)
	// shutting is set when Shutdown starts: operations fail with
	// ErrClosed (shutdown.go).
	shutting atomic.Bool
	// attempts counts the acquisition attempts under way
	// ([acquisition.attempt]): Shutdown waits for them, and releases the
	// holds they took.
	attempts atomic.Int64
	// reg is the registration of an explicit client id (register.go); nil
	// for a random one.
	reg *registration
	// evict: the maxmemory-policy of each primary (eviction.go)
	evict evictions
}

// NewClient returns a client over rdb. It does no I/O.
func NewClient(rdb redis.UniversalClient, o Options) *Client {
	explicit := o.ID != ""
	if o.ID == "" && o.Err == nil {
		o.ID = uuid.NewString()
	}
	if o.WatchdogTimeout == 0 {
		o.WatchdogTimeout = DefaultWatchdogTimeout
	}
	if o.Recheck == 0 {
		o.Recheck = DefaultRecheck
	}
	if o.Logger == nil {
		o.Logger = slog.New(warnings{slog.Default().Handler()})
	}
	if o.ReplicaSync == nil {
		rs := pipeline.DefaultSettings
		o.ReplicaSync = &rs
	}
	if rdb == nil && o.Err == nil {
		o.Err = fmt.Errorf("%w: nil redis client", errs.ErrInvalidArgument)
	}
	c := &Client{
		rdb:  rdb,
		id:   o.ID,
		opts: o,
		log:  o.Logger,
		bg:   bg.New(),
	}
	c.closing = c.bg.Closing()
	c.lines.closing = c.closing
	c.reqs = request.New(rdb, o.Logger, c.bg, &c.ctr.undoFailed, &c.ctr.releaseFailed)
	c.pipe = pipeline.New(rdb, *o.ReplicaSync, c.bg, o.Logger)
	c.freshBase = 1<<40 + rand.Uint64N(1<<40)
	if explicit {
		c.reg = newRegistration(o.KeyPrefix, o.ID, lua.Direct{Client: rdb}, o.WatchdogTimeout, c.bg, o.Logger)
	}
	if rdb != nil {
		c.mux = pubsub.New(rdb, pubsub.Options{Logger: o.Logger, Sharded: c.Sharded, Keyspace: o.Keyspace})
		_, c.cluster = rdb.(*redis.ClusterClient)
		var onEvict func(p EvictionPolicy)
		if o.Hooks != nil {
			onEvict = o.Hooks.Eviction
		}
		c.evict.watch(rdb, c.bg, o.Logger, onEvict)
		c.OnClose(c.evict.stop)
	}
	c.holds = newHolds(holdsConfig{Cluster: c.cluster, Pipe: c.pipe, Context: c.bg.Context(),
		Closing: c.closing, Log: o.Logger,
		Lines: &c.lines, Ctr: &c.ctr, Hooks: o.Hooks, Evict: &c.evict, Mux: c.mux, Bg: c.bg})
	return c
}

// Recheck returns the cap on a waiter's fallback re-check interval of
// the client c (redisync.WithRecheckInterval).
func Recheck(c *Client) time.Duration { return c.opts.Recheck }

// ID returns the client id.
func (c *Client) ID() string { return c.id }

// Redis returns the go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// Mux returns the client's pub/sub multiplexer.
func (c *Client) Mux() *pubsub.Mux { return c.mux }

// Requests returns the client's exactly-once requests: ids, deadlines,
// re-sends, settles and undos (package request).
func (c *Client) Requests() *request.Requests { return c.reqs }

// Pipeline returns the client's script pipeline: the runners of script
// bindings, which wait for replicas when given a Sync (package pipeline).
func (c *Client) Pipeline() *pipeline.Pipeline { return c.pipe }

// Direct returns the runner of script bindings for the scripts that do
// not wait for replicas: through the client's script pipeline
// (pipeline.Pipeline.Runner(nil)).
func (c *Client) Direct() lua.Runner { return c.pipe.Runner(nil) }

// Lines returns the client's local lines, in which its callers waiting
// for one lock or semaphore line up (line.go).
func (c *Client) Lines() *Lines { return &c.lines }

// Holds returns the client's live holds and their watchdog (hold.go,
// watchdog.go).
func (c *Client) Holds() *Holds { return c.holds }

// Background returns the client's background work, which Close waits
// for, and its detached contexts (package bg).
func (c *Client) Background() *bg.Group { return c.bg }

// PublishCommand returns the command the client's scripts publish with:
// "spublish" on a Cluster in sharded mode, "publish" otherwise. On a
// Cluster with ShardedAuto the first call probes the cluster with PUBSUB
// SHARDNUMSUB 0 (Redisson's probe): an answer means sharded pub/sub, an
// error reply (a Redis older than 7) classic pub/sub; the decision is kept
// for the client's life. A probe that fails otherwise (network, ctx) returns
// the error, and the next call probes again. It never probes on a single
// node or through Sentinel, or with ShardedOn or ShardedOff.
func (c *Client) PublishCommand(ctx context.Context) (string, error) {
	c.pub.mu.Lock()
	defer c.pub.mu.Unlock()
	if c.pub.cmd != "" {
		return c.pub.cmd, nil
	}
	_, cluster := c.rdb.(*redis.ClusterClient)
	switch {
	case !cluster || c.opts.Sharded == ShardedOff:
		c.pub.cmd = Publish
	case c.opts.Sharded == ShardedOn:
		c.pub.cmd = SPublish
	default:
		err := c.rdb.Do(ctx, "PUBSUB", "SHARDNUMSUB", "0").Err()
		switch {
		case err == nil:
			c.pub.cmd = SPublish
		case errs.IsReply(err):
			c.log.Info("redisync: the cluster does not support sharded pub/sub, using classic pub/sub", "err", err)
			c.pub.cmd = Publish
		default:
			return "", fmt.Errorf("redisync: probe for sharded pub/sub (PUBSUB SHARDNUMSUB): %w", err)
		}
	}
	return c.pub.cmd, nil
}

// Probe reports whether a publish of c with cmd (from [Client.PublishCommand])
// counts every receiver, so that a release may rely on the count: on a
// single node, through Sentinel, and with sharded pub/sub on a Cluster;
// not with classic pub/sub on a Cluster, where a node counts its own
// subscribers only.
func Probe(c *Client, cmd string) bool {
	_, cluster := c.rdb.(*redis.ClusterClient)
	return !cluster || cmd == SPublish
}

// AliveMillis is how long c, waiting in a lock's queue, counts as
// alive after each of its attempts (lua/prelude_wake.lua): three re-check
// intervals, since a waiter attempts at least once in each.
// A nil or zero Client (a handle made on one, which reports the mistake
// at its first operation) gets the default interval's.
func AliveMillis(c *Client) int64 {
	r := DefaultRecheck
	if c != nil && c.opts.Recheck > 0 {
		r = c.opts.Recheck
	}
	return Millis(3 * r)
}

// Sharded reports whether the client's waiters subscribe with SSUBSCRIBE
// (PublishCommand is "spublish"); errors are PublishCommand's.
func (c *Client) Sharded(ctx context.Context) (bool, error) {
	cmd, err := c.PublishCommand(ctx)
	return cmd == SPublish, err
}

// Close stops renewals and the pub/sub multiplexer and ends every live hold
// with [errs.ErrLockLost] (the holds are not released in Redis: they expire after
// their lease). Waits under way end with [errs.ErrClosed]. Before it returns, the
// clean-up work under way finishes: undos of interrupted acquisitions,
// settles of lost releases, and the fair-lock queue entries of waiters that
// gave up, each given at most [bg.CloseGrace] (5 s) after Close starts. It is
// idempotent.
func (c *Client) Close() error {
	if c == nil || c.bg == nil {
		return c.Check()
	}
	var err error
	c.closeOnce.Do(func() {
		c.bg.Close()
		c.holds.Wait()
		c.bg.Wait()
		c.reg.unregister() // the id is free at once
		c.parking.close()
		if c.mux != nil {
			err = c.mux.Close()
		}
		c.holds.endAll("", fmt.Errorf("%w: client closed, renewal stopped (%w)", errs.ErrLockLost, errs.ErrClosed))
		c.ctr.runOnClose()
	})
	return err
}

// Stats returns a snapshot of the client's counters. It works on a closed
// client; a nil client gives zeros.
func (c *Client) Stats() Stats {
	var s Stats
	if c == nil || c.bg == nil { // nil or zero (not made by NewClient)
		return s
	}
	for i := range s.Waits {
		s.Waits[i] = c.ctr.waits[i].Load()
	}
	s.HoldsLost = c.ctr.lost.Load()
	s.HoldsShutdown = c.ctr.shutdown.Load()
	s.Renewals = c.ctr.renewed.Load()
	s.RenewalFailures = c.ctr.renewFailed.Load()
	s.UndosFailed = c.ctr.undoFailed.Load()
	s.ReleasesFailed = c.ctr.releaseFailed.Load()
	s.RenewalsNotReplicated = c.ctr.renewUnacked.Load()
	s.HoldsLostUnreplicated = c.ctr.lostUnacked.Load()
	s.EvictingPrimaries = c.evict.evicting.Load()
	s.Waiting = int(c.ctr.waiting.Load())
	s.Holds = c.holds.Len()
	if c.mux != nil {
		ms := c.mux.Stats()
		s.PubSubReconnects = uint64(ms.Reconnects)
		s.PubSubChannels = ms.Channels
	}
	return s
}

// OnClose registers f to run when the client closes, after the watchdog and
// the pub/sub multiplexer have stopped (an observer's detach). On a closed
// client it runs f at once.
func (c *Client) OnClose(f func()) {
	c.ctr.closeMu.Lock()
	select {
	case <-c.closing:
		c.ctr.closeMu.Unlock()
		f()
		return
	default:
	}
	c.ctr.onClose = append(c.ctr.onClose, f)
	c.ctr.closeMu.Unlock()
}

// BeginWait starts observing a wait of the primitive kind ([Handle].Kind; part
// is an engine side's [Side].Part, "" otherwise) called name. It returns the
// context the wait must run in (the WaitStart hook's: it may carry a span)
// and the observation, which the caller ends with End whatever happens.
// Calls rejected before a wait starts (invalid arguments) are not observed.
func (c *Client) BeginWait(ctx context.Context, kind, part, name string, forever bool, wait time.Duration) (context.Context, WaitObs) {
	c.ctr.waiting.Add(1)
	// Forever and Wait decide busy versus timed out, so they are kept
	// without hooks too; the label and the clock only serve hooks.
	o := WaitObs{ctr: &c.ctr, hooks: c.opts.Hooks, ctx: ctx, info: WaitInfo{Forever: forever, Wait: wait}}
	h := c.opts.Hooks
	if h == nil {
		return ctx, o
	}
	o.start = time.Now()
	o.info.Primitive, o.info.Name = primitiveLabel(kind, part), name
	if h.WaitStart != nil {
		if nctx := h.WaitStart(ctx, o.info); nctx != nil {
			o.ctx = nctx
		}
	}
	return o.ctx, o
}

// Check returns the error every operation must return before sending
// anything: an invalid client or option ([errs.ErrInvalidArgument]), a closed
// client ([errs.ErrClosed]), or for a client id given explicitly, one that another
// live Client uses ([errs.ErrDuplicateID]; the first operation of such a client
// registers its id, one round trip, see register.go). A nil *Client, or a
// zero one (not made by NewClient), is an invalid argument.
func (c *Client) Check() error {
	if c == nil || c.bg == nil {
		return fmt.Errorf("%w: nil or zero client (make one with redisync.New)", errs.ErrInvalidArgument)
	}
	if c.opts.Err != nil {
		return c.opts.Err
	}
	select {
	case <-c.closing:
		return errs.ErrClosed
	default:
	}
	if c.shutting.Load() {
		return errs.ErrClosed // Shutdown under way (shutdown.go)
	}
	if c.reg != nil && !c.reg.ok.Load() {
		return c.reg.check()
	}
	return nil
}

// ShardedMode is redisync.ShardedMode: whether a Cluster client uses
// sharded pub/sub.
type ShardedMode int

// The modes, as redisync.ShardedAuto, ShardedOn and ShardedOff.
const (
	ShardedAuto ShardedMode = iota
	ShardedOn
	ShardedOff
)

// The publish commands scripts take as an argument (Redisson passes its
// scripts the command the same way).
const (
	Publish  = "publish"
	SPublish = "spublish"
)

// publishMode caches the decision between classic and sharded pub/sub.
type publishMode struct {
	mu  sync.Mutex
	cmd string // "" until decided
}

// warnings passes the records at Warn and above to h (slog.Default()'s
// handler): the logger of a client made without one, so that what needs a
// person's attention (a primary that can evict locks, holds lost, a failed
// release) is seen, and the Debug and Info records are not.
type warnings struct{ h slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.h.Enabled(ctx, l)
}

func (w warnings) Handle(ctx context.Context, r slog.Record) error { return w.h.Handle(ctx, r) }

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.h.WithAttrs(as)} }

func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.h.WithGroup(name)} }
