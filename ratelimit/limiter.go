package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// The errors of this package, matched with errors.Is.
var (
	// ErrNotInitialized: the limiter has no rate (never set, deleted, or
	// expired after its keep-alive). Redisson says "RateLimiter is not
	// initialized".
	ErrNotInitialized = errors.New("redisync: rate limiter not initialized")
	// ErrExceedsRate: more permits were asked for than the rate (a GCRA:
	// more events than its Burst), so they can never be granted. Redisson
	// says "Requested permits amount cannot exceed defined rate".
	ErrExceedsRate = errors.New("redisync: permits exceed the rate")
)

// RateType says who shares a limiter's budget.
type RateType int

const (
	// Overall is one budget of rate permits per interval for every client
	// (Redisson's RateType.OVERALL).
	Overall RateType = iota
	// PerClient is a budget of rate permits per interval for each
	// redisync.Client (each Redisson instance on the Java side), keyed by
	// the client's id (Redisson's RateType.PER_CLIENT).
	PerClient
)

// String returns "overall" or "per client".
func (t RateType) String() string {
	switch t {
	case Overall:
		return "overall"
	case PerClient:
		return "per client"
	}
	return "RateType(" + strconv.Itoa(int(t)) + ")"
}

// Config is a limiter's configuration as stored in Redis.
type Config struct {
	Type      RateType
	Rate      int64         // permits per Interval
	Interval  time.Duration // whole milliseconds
	KeepAlive time.Duration // 0: the keys never expire
}

// maxRate bounds a rate: a grant stores its permits in 4 bytes (Redisson's
// member encoding), and a request takes at most the rate.
const maxRate = math.MaxUint32

// Limiter is a distributed rate limiter in Redisson RRateLimiter's layout:
// at most Rate permits are granted in any window of Interval, to everyone
// (Overall) or to each Client (PerClient). A Java service using Redisson's
// RRateLimiter on the same Redis and name shares the budget.
//
// A Limiter is a handle: creating one does no I/O, and it is safe for
// concurrent use.
type Limiter struct {
	h core.Handle
	// granted, when set (tests), is called with the server time (epoch
	// ms) and the permits of every grant.
	granted func(at, n int64)
}

// New returns a handle on the rate limiter called name, whose
// configuration hash is the key name. It does no I/O and never fails: an
// empty name is reported, wrapping redisync.ErrInvalidArgument, by the first
// operation. Set a rate with TrySetRate or SetRate before acquiring.
func New(c *redisync.Client, name string) *Limiter {
	return &Limiter{h: core.NewHandle((*core.Client)(c), "rate limiter", name)}
}

// Name returns the limiter's name, which is also the key of its
// configuration (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (l *Limiter) Name() string { return l.h.Given }

// TrySetRate sets the rate to rate permits per interval, shared as t says,
// if no rate is set yet, and reports whether it set it; false means a rate
// was set already and nothing changed. rate must be between 1 and 2^32−1;
// interval at least a millisecond (it is stored in whole milliseconds,
// rounded up).
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Limiter) TrySetRate(ctx context.Context, t RateType, rate int64, interval time.Duration, opts ...RateOption) (bool, error) {
	return l.setRate(ctx, "try", t, rate, interval, opts)
}

// SetRate replaces the configuration and resets the state: every budget
// starts full (Overall's, and the PerClient budgets of every client that
// used this limiter through redisync). A Java client's Redisson setRate
// resets only its own budget.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Limiter) SetRate(ctx context.Context, t RateType, rate int64, interval time.Duration, opts ...RateOption) error {
	_, err := l.setRate(ctx, "set", t, rate, interval, opts)
	return err
}

// UpdateRate replaces the configuration of a limiter whose rate is set and
// keeps the permits in use (Redisson 4.4's keepState): grants younger than
// the new interval still count, and each budget is the new rate minus them
// (never below 0). It reports false, changing nothing, when no rate is set.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Limiter) UpdateRate(ctx context.Context, t RateType, rate int64, interval time.Duration, opts ...RateOption) (bool, error) {
	return l.setRate(ctx, "update", t, rate, interval, opts)
}

func (l *Limiter) setRate(ctx context.Context, mode string, t RateType, rate int64, interval time.Duration, opts []RateOption) (bool, error) {
	var o rateOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := l.checkRate(ctx, t, rate, interval, o); err != nil {
		return false, err
	}
	k := l.allKeys()
	// Acknowledged as grants are: a lower rate that a failover lost would
	// let the old one admit more.
	ws := l.h.C.Pipeline().NewSync()
	r, err := lua.RateSetRateArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
		ClientValuePrefix: k.clientValuePrefix, ClientPermitsPrefix: k.clientPermitsPrefix, Clients: k.clients,
		Request: k.request, Mode: mode, RateType: int64(t), Rate: rate, IntervalMillis: core.Millis(interval),
		KeepAliveMillis: core.Millis(o.keepAlive), Deadline: l.h.C.Requests().Deadline(ctx),
		ClientID: l.h.C.ID()}.Run(ctx, l.h.C.Pipeline().Runner(ws))
	if err == nil {
		err = ws.SyncErr()
	}
	if err != nil {
		return false, l.fail("set rate", err)
	}
	return r == lua.RateSetRateSet, nil
}

// checkRate checks a rate's arguments.
func (l *Limiter) checkRate(ctx context.Context, t RateType, rate int64, interval time.Duration, o rateOptions) error {
	if err := l.h.Check(ctx); err != nil {
		return err
	}
	switch {
	case t != Overall && t != PerClient:
		return l.h.Invalid("unknown rate type %d", int(t))
	case rate <= 0 || rate > maxRate:
		return l.h.Invalid("rate %d, must be between 1 and 2^32-1", rate)
	case interval < time.Millisecond:
		return l.h.Invalid("interval %v, must be at least 1ms", interval)
	case o.keepAlive < 0:
		return l.h.Invalid("negative keep-alive %v", o.keepAlive)
	case o.keepAlive > 0 && o.keepAlive < interval:
		return l.h.Invalid("keep-alive %v shorter than the interval %v", o.keepAlive, interval)
	}
	return nil
}

// Config returns the limiter's configuration, or an error wrapping
// ErrNotInitialized when no rate is set.
func (l *Limiter) Config(ctx context.Context) (Config, error) {
	if err := l.h.Check(ctx); err != nil {
		return Config{}, err
	}
	m, err := l.h.C.Redis().HGetAll(ctx, l.h.Name).Result()
	if err != nil {
		return Config{}, l.fail("config", err)
	}
	return parseConfig(m, l.fail)
}

// parseConfig reads Redisson's configuration hash.
func parseConfig(m map[string]string, fail func(string, error) error) (Config, error) {
	num := func(f string) (int64, bool) {
		v, err := strconv.ParseInt(m[f], 10, 64)
		return v, err == nil
	}
	rate, ok1 := num("rate")
	interval, ok2 := num("interval")
	typ, ok3 := num("type")
	if !ok1 || !ok2 || !ok3 {
		if len(m) == 0 {
			return Config{}, fail("config", ErrNotInitialized)
		}
		return Config{}, fail("config", fmt.Errorf("%w: unreadable configuration %v", ErrNotInitialized, m))
	}
	keep, _ := num("keepAliveTime")
	return Config{Type: RateType(typ), Rate: rate, Interval: time.Duration(interval) * time.Millisecond,
		KeepAlive: time.Duration(keep) * time.Millisecond}, nil
}

// TryAcquire takes n permits if it can within wait (0: a single attempt,
// which reports false without asking Redis when other callers of the same
// Client are already waiting for this limiter: it does not overtake them).
// It returns (false, nil) when the permits could not be had in time, and
// returns it at once, without sleeping, as soon as Redis's answer shows
// they cannot be had within wait. When the context's deadline comes before
// wait ends and the permits cannot be had by then, it returns at once an
// error wrapping context.DeadlineExceeded. n must be at least 1; n above
// the rate is ErrExceedsRate, and ErrNotInitialized means no rate is set.
// A negative wait is an invalid argument.
//
// An acquisition whose reply was lost (ctx ended, the connection broke) is
// undone: it grants nothing, however often go-redis re-sent it. With a wait
// above 0, the wait bounds the requests too: one still on its way when the
// wait ends is cut (a stalled read only on a go-redis client with
// ContextTimeoutEnabled) and undone, and TryAcquire reports false, so a
// slow or unreachable Redis does not keep it past its wait by more than
// the undo's start.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” and “Wait bounds” in [redisync].
func (l *Limiter) TryAcquire(ctx context.Context, n int64, wait time.Duration) (bool, error) {
	if err := l.checkN(ctx, n); err != nil {
		return false, err
	}
	if err := l.h.CheckWait(wait); err != nil {
		return false, err
	}
	return l.acquire(ctx, n, false, wait)
}

// Acquire takes n permits, waiting as long as ctx allows. When the permits
// cannot be had before ctx's deadline, by Redis's answer, it returns at
// once an error wrapping context.DeadlineExceeded instead of sleeping
// until then. Other errors are as TryAcquire's.
//
// After any error nothing is held, and calling again is safe. See “Errors
// and retries” in [redisync].
func (l *Limiter) Acquire(ctx context.Context, n int64) error {
	if err := l.checkN(ctx, n); err != nil {
		return err
	}
	_, err := l.acquire(ctx, n, true, 0)
	return err
}

func (l *Limiter) checkN(ctx context.Context, n int64) error {
	if err := l.h.Check(ctx); err != nil {
		return err
	}
	if n <= 0 {
		return l.h.Invalid("%d permits, must be at least 1", n)
	}
	if n > maxRate {
		return fmt.Errorf("%s %q: %d permits: %w", l.h.Kind, l.h.Name, n, ErrExceedsRate)
	}
	return nil
}

// wrap names the limiter in an error (nil stays nil).
func (l *Limiter) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %q: %w", l.h.Kind, l.h.Name, errs.ReplyError(err))
}

// undo reverts an acquisition whose reply was lost: if it took place its
// grant is removed and its permits given back; if it has not yet, it is
// marked cancelled so that a late copy grants nothing. It is re-sent in
// the background until Redis answers (request.Requests.Undo), for as long as
// the acquisition's record lives (deadline: the acquisition's); a grant
// that an undo could not reach counts until it leaves the window.
func (l *Limiter) undo(n int64, acquireKey string, deadline int64, random string) {
	k := l.stateKeys()
	l.h.C.Requests().Undo(l.h.C.Requests().RecordEnd(deadline), "its permits count until they leave the window", func(ctx context.Context) func() error {
		undo := lua.RateReleaseArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
			ClientValue: k.clientValue, ClientPermits: k.clientPermits, Clients: k.clients,
			Request: l.requestKey(), UndoRequest: acquireKey, N: n, Deadline: l.h.C.Requests().Deadline(ctx),
			Undo: true, Random: random, ClientID: l.h.C.ID()}
		return func() error {
			_, err := undo.Run(ctx, l.h.C.Direct())
			return err
		}
	}, "limiter", l.h.Name, "permits", n)
}

// Release gives n permits back now (Redisson 3.52's release): they can be
// acquired again at once, and the newest grants holding them leave the
// log, so they are not given back a second time when those grants would
// have expired. The budget never goes above the rate. It runs even when
// ctx is already cancelled (on a detached context with a bounded timeout),
// and a release re-sent by go-redis after a lost reply is applied once.
// ErrNotInitialized means no rate is set. A caller of the same Client
// waiting for permits asks Redis again at once; callers in other processes
// notice when their delay ends (there is no pub/sub, as in Redisson).
//
// After a network error it may or may not have taken effect, and calling
// again may apply it twice. See “Errors and retries” in [redisync].
func (l *Limiter) Release(ctx context.Context, n int64) error {
	if err := l.checkN(ctx, n); err != nil {
		return err
	}
	ctx, cancel := l.h.C.Background().Detached(ctx)
	defer cancel()
	reqKey, k := l.requestKey(), l.stateKeys()
	release := lua.RateReleaseArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
		ClientValue: k.clientValue, ClientPermits: k.clientPermits, Clients: k.clients,
		Request: reqKey, UndoRequest: reqKey, N: n, Deadline: l.h.C.Requests().Deadline(ctx), ClientID: l.h.C.ID()}
	var r int64
	err := l.h.C.Requests().Resend(ctx, func() error {
		var err error
		r, err = release.Run(ctx, l.h.C.Direct())
		return err
	})
	if err != nil {
		return l.fail("release", err)
	}
	if r == lua.RateReleaseNoRate {
		return l.fail("release", ErrNotInitialized)
	}
	kick(lineKey{l.h.C, l.h.Name})
	return nil
}

// AvailablePermits returns the permits that can be acquired now: for a
// PerClient limiter, this Client's. It is never above the rate, and an
// error wrapping ErrNotInitialized when no rate is set.
func (l *Limiter) AvailablePermits(ctx context.Context) (int64, error) {
	if err := l.h.Check(ctx); err != nil {
		return 0, err
	}
	k := l.stateKeys()
	r, err := lua.RateAvailableArgs{Limiter: k.limiter, Value: k.value, Permits: k.permits,
		ClientValue: k.clientValue, ClientPermits: k.clientPermits, Clients: k.clients,
		ClientID: l.h.C.ID()}.Run(ctx, l.h.C.Direct())
	if err != nil {
		return 0, l.fail("available permits", err)
	}
	if r.Code != lua.RateAvailableSet {
		return 0, l.fail("available permits", ErrNotInitialized)
	}
	return r.Left, nil
}

// stateKeys are the configuration, the Overall pair, this client's
// PerClient pair and the registry of PerClient clients: the first KEYS of
// the acquire, release and available scripts, each of which registers
// this client when it may create its PerClient keys.
type stateKeys struct {
	limiter, value, permits    string
	clientValue, clientPermits string
	clients                    string
}

func (l *Limiter) stateKeys() stateKeys {
	n, id := l.h.Name, l.h.C.ID()
	return stateKeys{n, keys.RateValue(n), keys.RatePermits(n),
		keys.RateClientValue(n, id), keys.RateClientPermits(n, id), keys.RateClients(n)}
}

// allKeys are the KEYS of the set-rate and delete scripts: the
// configuration, the Overall pair, the prefixes of the PerClient pairs,
// the registry and a new request key.
type allKeys struct {
	limiter, value, permits                string
	clientValuePrefix, clientPermitsPrefix string
	clients, request                       string
}

func (l *Limiter) allKeys() allKeys {
	n := l.h.Name
	return allKeys{n, keys.RateValue(n), keys.RatePermits(n),
		keys.RateValue(n) + ":", keys.RatePermits(n) + ":", keys.RateClients(n), l.requestKey()}
}

func (l *Limiter) requestKey() string { return keys.Request(l.h.Name, l.h.C.Requests().ID()) }

// fail wraps an error of operation op.
func (l *Limiter) fail(op string, err error) error {
	return fmt.Errorf("%s %q: %s: %w", l.h.Kind, l.h.Name, op, errs.ReplyError(err))
}
