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

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// Registration of an explicit client id.
//
// Owners are "<client id>:<token>". A random UUID id (the default) cannot
// meet another client's, but an id given with WithID reads like a service
// name, and two live processes given the same one would act for the same
// owners wherever their tokens met. So a Client with an explicit id
// registers it in Redis before its first operation: the key
// [keys.ClientRegistration](id) holds a random value of this instance, set
// only if the key is absent or already ours (lua/client_register.lua), with
// the watchdog timeout as its TTL. A background loop renews it every third
// of that while the Client lives; Close deletes it if it is still ours
// (lua/client_unregister.lua), so the id is free at once, and a process
// that dies frees it within the watchdog timeout. A Client that finds the
// id registered by another instance fails its operations with
// [errs.ErrDuplicateID] (each one asks again, so it goes on once the other is
// gone). Once registered, an operation costs one atomic load more: the
// registration is sent once, not per operation.

// registerTimeout bounds the registration sent before a Client's first
// operation.
const registerTimeout = 5 * time.Second

// registration is the state of an explicit id's registration.
type registration struct {
	key   string
	value string      // this instance's random value
	ok    atomic.Bool // registered, and not found taken over since

	// What registering needs of the client: its id, its runner, the
	// watchdog timeout (the registration's TTL), its background work and
	// its logger.
	id     string
	direct lua.Direct
	ttl    time.Duration
	bg     *bg.Group
	log    *slog.Logger

	mu      sync.Mutex // serializes registering, the renewals' start and unregistering
	renewer bool       // the renewal loop was started
	ever    bool       // registered at least once: Close unregisters
	closed  bool       // Close unregistered: nothing is registered again
}

// newRegistration returns the registration state of client id (its key,
// keys.ClientRegistration(prefix + id), carries the key prefix), whose
// registration lives ttl unless renewed, run with direct, renewed in g.
func newRegistration(prefix, id string, direct lua.Direct, ttl time.Duration, g *bg.Group, log *slog.Logger) *registration {
	return &registration{
		key:   keys.ClientRegistration(prefix + id),
		value: strconv.FormatUint(rand.Uint64(), 36) + strconv.FormatUint(rand.Uint64(), 36),
		id:    id, direct: direct, ttl: ttl, bg: g, log: log,
	}
}

// check returns nil when the client's id needs no registration (r is nil) or
// is registered; otherwise it registers it (one round trip, bounded by
// registerTimeout and by Close) and returns an error wrapping
// [errs.ErrDuplicateID] when another live Client holds the id, or the error that
// kept it from registering.
func (r *registration) check() error {
	if r == nil || r.ok.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok.Load() {
		return nil
	}
	if r.closed {
		return errs.ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	stop := context.AfterFunc(r.bg.Context(), cancel)
	defer stop()
	n, err := lua.ClientRegisterArgs{Registration: r.key, Value: r.value, TTLMillis: Millis(r.ttl)}.Run(ctx, r.direct)
	if err != nil {
		return fmt.Errorf("redisync: registering client id %q: %w", r.id, errs.ReplyError(err))
	}
	if n != lua.ClientRegisterRegistered {
		return fmt.Errorf("%w: %q (registered at %s by a Client that has not closed yet)", errs.ErrDuplicateID, r.id, r.key)
	}
	r.ok.Store(true)
	r.ever = true
	if !r.renewer {
		r.renewer = r.startRenewals()
	}
	return nil
}

// startRenewals starts the loop that renews the registration every third
// of the watchdog timeout until Close. It reports false when the client is
// closing already.
func (r *registration) startRenewals() bool {
	if !r.bg.Track() {
		return false
	}
	go func() {
		defer r.bg.Untrack()
		interval := r.ttl / 3
		timer := time.NewTimer(interval)
		defer timer.Stop()
		for {
			select {
			case <-r.bg.Closing():
				return
			case <-timer.C:
			}
			next := interval
			if err := r.renew(); err != nil {
				r.log.Warn("redisync: renewing the client id's registration failed", "id", r.id, "err", err)
				next = min(interval, registrationRetry)
			}
			timer.Reset(next)
		}
	}()
	return true
}

// renew renews the registration once. When another instance
// holds the id (ours ran out during an outage, and it registered), the
// client's operations fail with [errs.ErrDuplicateID] from then on, until the id
// is free again.
func (r *registration) renew() error {
	if !r.ok.Load() {
		return nil // the next operation registers again
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	stop := context.AfterFunc(r.bg.Context(), cancel)
	defer stop()
	n, err := lua.ClientRegisterArgs{Registration: r.key, Value: r.value, TTLMillis: Millis(r.ttl)}.Run(ctx, r.direct)
	if err != nil {
		return err
	}
	if n != lua.ClientRegisterRegistered {
		r.ok.Store(false)
		r.log.Error("redisync: another live Client registered this client id; operations fail with ErrDuplicateID", "id", r.id, "key", r.key)
	}
	return nil
}

// unregister frees the client's id in Redis if this instance holds it, for
// Close, after the renewal loop stopped.
func (r *registration) unregister() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.ok.Store(false)
	if !r.ever {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	unregister := lua.ClientUnregisterArgs{Registration: r.key, Value: r.value}
	if _, err := unregister.Run(ctx, r.direct); err != nil {
		r.log.Warn("redisync: freeing the client id's registration failed; it expires within the watchdog timeout", "id", r.id, "err", err)
	}
}

// registrationRetry bounds the wait before a registration renewal that
// failed is tried again, so a short outage does not cost a whole
// interval (as the watchdog's renewals).
const registrationRetry = time.Second
