package core

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/wait"
	"github.com/redisync/redisync/pubsub"
)

// Defaults, set here only.
const (
	DefaultWatchdogTimeout = 30 * time.Second
	DefaultRecheck         = 5 * time.Second
	// releaseTimeout bounds a release (or the undo of an acquire) that runs
	// on a context detached from a cancelled caller.
	releaseTimeout = 10 * time.Second
)

// Options configure a Client. The root package's functional options fill it.
type Options struct {
	WatchdogTimeout time.Duration // lease of watchdog-renewed holds; renewed every third of it
	ID              string        // client id; a random UUID when empty
	Logger          *slog.Logger  // nil discards
	Recheck         time.Duration // cap on a waiter's fallback re-check interval
	Err             error         // first invalid option, reported by every operation
	Sharded         ShardedMode   // sharded pub/sub on a Cluster (publish.go)
	Hooks           *Hooks        // observer hooks (observe.go); nil: none
	// ReplicaSync: replica acknowledgement (replicas.go); nil: the
	// default, DefaultReplicaSync.
	ReplicaSync *ReplicaSync
}

// Client is the state behind a redisync.Client.
type Client struct {
	rdb     redis.UniversalClient
	id      string
	opts    Options
	log     *slog.Logger
	mux     *pubsub.Mux
	waits   *wait.Waits // the waiting algorithm (package wait)
	reqTTL  time.Duration
	reqID   string // random, base 36: the part of RequestID before the sequence number
	reqSeq  atomic.Uint64
	turnSeq atomic.Uint64 // arrivals in local lines (Turn.seq)
	cluster bool
	pub     publishMode

	closing   chan struct{}
	closeOnce sync.Once
	// bg counts background work (undos, clock readings); Close waits for
	// it after closing, which cancels it.
	bg   sync.WaitGroup
	bgMu sync.Mutex // orders bg.Add before Close's bg.Wait

	clock serverClock
	// detachedEnds: the shared deadline of DetachedContext.
	detachedEnds detachedEnds
	replicas     replicaCounts // replicas.go
	// freshBase is added to the tokens of fresh holds' owners (FreshToken):
	// random, 13 decimal digits.
	freshBase uint64

	holdsMu sync.Mutex
	holds   map[HoldKey]*Hold
	owners  ownerLocks
	lines   lines
	wd      watchdog
	ctr     counters // Stats and OnClose (observe.go)
	// reg is the registration of an explicit client id (register.go); nil
	// for a random one.
	reg *registration
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
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReplicaSync == nil {
		rs := DefaultReplicaSync
		o.ReplicaSync = &rs
	}
	if rdb == nil && o.Err == nil {
		o.Err = fmt.Errorf("%w: nil redis client", errs.ErrInvalidArgument)
	}
	c := &Client{
		rdb:     rdb,
		id:      o.ID,
		opts:    o,
		log:     o.Logger,
		closing: make(chan struct{}),
		holds:   make(map[HoldKey]*Hold),
		reqID:   strconv.FormatUint(rand.Uint64(), 36),
	}
	c.freshBase = 1<<40 + rand.Uint64N(1<<40)
	if explicit {
		c.reg = newRegistration(o.ID)
	}
	if rdb != nil {
		c.mux = pubsub.New(rdb, pubsub.Options{Logger: o.Logger, Sharded: c.Sharded})
		c.reqTTL = requestTTL(rdb)
		_, c.cluster = rdb.(*redis.ClusterClient)
	}
	c.waits = wait.New(c, c.mux, c.closing, o.Recheck, o.Logger)
	c.wd.c = c
	return c
}

// Check returns the error every operation must return before sending
// anything: an invalid client or option (errs.ErrInvalidArgument), a closed
// client (errs.ErrClosed), or for a client id given explicitly, one that another
// live Client uses (errs.ErrDuplicateID; the first operation of such a client
// registers its id, one round trip, see register.go). A nil *Client is an
// invalid argument.
func (c *Client) Check() error {
	if c == nil {
		return fmt.Errorf("%w: nil client", errs.ErrInvalidArgument)
	}
	if c.opts.Err != nil {
		return c.opts.Err
	}
	select {
	case <-c.closing:
		return errs.ErrClosed
	default:
	}
	if c.reg != nil && !c.reg.ok.Load() {
		return c.checkRegistered()
	}
	return nil
}

// ID returns the client id.
func (c *Client) ID() string { return c.id }

// Redis returns the go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// Mux returns the client's pub/sub multiplexer.
func (c *Client) Mux() *pubsub.Mux { return c.mux }

// Waits returns the client's waiting machinery: every wait of a primitive
// of the client runs there (wait.Waits.Wait).
func (c *Client) Waits() *wait.Waits { return c.waits }

// WatchdogTimeout returns the lease of watchdog-renewed holds.
func (c *Client) WatchdogTimeout() time.Duration { return c.opts.WatchdogTimeout }

// Recheck returns the cap on a waiter's fallback re-check interval.
func (c *Client) Recheck() time.Duration { return c.opts.Recheck }

// Closing is closed when Close starts.
func (c *Client) Closing() <-chan struct{} { return c.closing }

// RequestID returns a fresh request id: with keys.Request, the key under
// which a state-changing script records its result. It is a random number
// drawn for the client and a sequence number, both in base 36: short, and
// unique among the clients that share a server while their records live
// (minutes). It never holds ':', so it never equals an owner field
// ("<client id>:<token>"), a fresh hold's request id (see Lock).
func (c *Client) RequestID() string {
	return c.reqID + "." + strconv.FormatUint(c.reqSeq.Add(1), 36)
}

// DetachedContext returns a context for a release or clean-up that must run
// even though ctx is cancelled: ctx's values without its cancellation,
// bounded by a timeout (releaseTimeout, less at most detachedGrain).
//
// The deadline is shared (detachedEnd): a context.WithTimeout per call
// costs a timer, its closure, the context, the cancel function and the
// Done channel go-redis asks for, at every release. A caller's context
// without values or cancellation (context.Background) gets the shared
// context itself; any other is wrapped in one small detached. The cancel
// function returned does nothing: the shared deadline ends the context.
func (c *Client) DetachedContext(ctx context.Context) (context.Context, context.CancelFunc) {
	end := c.detachedEnd()
	if ctx == context.Background() || ctx == context.TODO() {
		return end, noCancel
	}
	if _, ok := ctx.Deadline(); ok || ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx) // else ctx is never cancelled: keep it
	}
	return &detached{values: ctx, end: end}, noCancel
}

// noCancel is the cancel function of DetachedContext's contexts.
func noCancel() {}

// detachedGrain is how much shorter than releaseTimeout the shared deadline
// of DetachedContext may be: a new one is made when the current one ends
// sooner than releaseTimeout less this.
const detachedGrain = 50 * time.Millisecond

// detachedEnds keeps the shared deadline of DetachedContext's contexts.
type detachedEnds struct {
	mu     sync.Mutex
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc // never called: the deadline ends ctx
}

// detachedEnd returns a context that ends between releaseTimeout less
// detachedGrain and releaseTimeout from now, shared by the calls of one
// detachedGrain.
func (c *Client) detachedEnd() context.Context {
	d := &c.detachedEnds
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.at.Sub(now) < releaseTimeout-detachedGrain {
		d.at = now.Add(releaseTimeout)
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.at)
	}
	return d.ctx
}

// detached is a context with the values of a caller's (without its
// cancellation) and the deadline, Done and Err of a shared one (end).
type detached struct {
	values context.Context
	end    context.Context
}

func (d *detached) Deadline() (time.Time, bool) { return d.end.Deadline() }
func (d *detached) Done() <-chan struct{}       { return d.end.Done() }
func (d *detached) Err() error                  { return d.end.Err() }

// Value returns the caller's values; the context package's own key (which
// values, having no cancellation, does not answer) finds end's, so that a
// context derived from this one is cancelled with it and context.Cause
// reports end's cause.
func (d *detached) Value(key any) any {
	if v := d.values.Value(key); v != nil {
		return v
	}
	return d.end.Value(key)
}

// background runs f in a goroutine that Close waits for. f's context ends
// when Close starts, or after timeout. It reports false, running nothing,
// when the client is closed already.
func (c *Client) background(timeout time.Duration, f func(ctx context.Context)) bool {
	return c.spawn(timeout, 0, f)
}

// finish is background for work that Close lets finish: undos, settles
// and queue leaves under way. f's context ends after timeout, or
// closeGrace after Close starts, whichever comes first.
func (c *Client) finish(timeout time.Duration, f func(ctx context.Context)) bool {
	return c.spawn(timeout, closeGrace, f)
}

// spawn runs f in a goroutine that Close waits for; f's context ends after
// timeout, or grace after Close starts. It reports false, running nothing,
// when the client is closed already.
func (c *Client) spawn(timeout, grace time.Duration, f func(ctx context.Context)) bool {
	if !c.track() {
		return false
	}
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		stop := context.AfterFunc(closedContext{c.closing}, func() {
			if grace > 0 {
				t := time.NewTimer(grace)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
			cancel()
		})
		defer stop()
		f(ctx)
	}()
	return true
}

// track counts one piece of work that Close waits for (untrack ends it).
// It reports false, counting nothing, when the client is closed already.
func (c *Client) track() bool {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	select {
	case <-c.closing:
		return false
	default:
	}
	c.bg.Add(1)
	return true
}

// untrack ends a piece of work counted by track.
func (c *Client) untrack() { c.bg.Done() }

// closedContext is a context that is done when ch is closed.
type closedContext struct{ ch <-chan struct{} }

func (closedContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c closedContext) Done() <-chan struct{}     { return c.ch }
func (c closedContext) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}
func (closedContext) Value(any) any { return nil }

// Close stops renewals and the pub/sub multiplexer and ends every live hold
// with errs.ErrLockLost (the holds are not released in Redis: they expire after
// their lease). Waits under way end with errs.ErrClosed. Before it returns, the
// clean-up work under way finishes: undos of interrupted acquisitions,
// settles of lost releases, and the fair-lock queue entries of waiters that
// gave up, each given at most closeGrace (5 s) after Close starts. It is
// idempotent.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.bgMu.Lock()
		close(c.closing)
		c.bgMu.Unlock()
		c.wd.wait()
		c.bg.Wait()
		c.unregister() // the id is free at once
		if c.mux != nil {
			err = c.mux.Close()
		}
		c.holdsMu.Lock()
		live := make([]*Hold, 0, len(c.holds))
		for _, h := range c.holds {
			live = append(live, h)
		}
		c.holdsMu.Unlock()
		for _, h := range live {
			h.end(fmt.Errorf("%w: client closed, renewal stopped (%w)", errs.ErrLockLost, errs.ErrClosed))
		}
		c.runOnClose()
	})
	return err
}

// requestTTL derives the lifetime of recorded results from the go-redis
// client's retry settings: every attempt may take a write and a read
// timeout plus the back-off before it.
func requestTTL(rdb redis.UniversalClient) time.Duration {
	read, write, retries, backoff := 3*time.Second, 3*time.Second, 3, 512*time.Millisecond
	set := func(r, w time.Duration, n int, b time.Duration) {
		if r > 0 {
			read = r
		}
		if w > 0 {
			write = w
		}
		if n != 0 {
			retries = max(n, 0)
		}
		if b > 0 {
			backoff = b
		}
	}
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.MaxRetryBackoff)
	case *redis.ClusterClient:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, max(o.MaxRetries, o.MaxRedirects), o.MaxRetryBackoff)
	case *redis.Ring:
		o := c.Options()
		set(o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.MaxRetryBackoff)
	}
	ttl := time.Duration(retries+1)*(read+write+backoff) + time.Second
	return min(max(ttl, minRequestTTL), MaxRequestTTL)
}

// The bounds of every client's request lifetime (requestTTL): no request
// is applied later than MaxRequestTTL after it was sent.
const (
	minRequestTTL = 5 * time.Second
	MaxRequestTTL = 5 * time.Minute
)
