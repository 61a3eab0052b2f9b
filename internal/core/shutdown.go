package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// errShutdownUnreleased is the cause of the holds Shutdown ended without
// a release (it failed, or ctx ended first): they expire with their
// leases, as after Close, and count as lost.
var errShutdownUnreleased = fmt.Errorf("%w: ended by Client.Shutdown, not released: it expires with its lease (%w)", errs.ErrLockLost, errs.ErrClosed)

// errShutdownGone is the cause of a hold whose release by Shutdown found
// it no longer the owner's in Redis: lost before Shutdown.
var errShutdownGone = fmt.Errorf("%w: Client.Shutdown found it gone from Redis (%w)", errs.ErrLockLost, errs.ErrClosed)

// shutdownPoll is how often Shutdown looks again for the holds of the
// acquisition attempts under way when it found no hold.
const shutdownPoll = time.Millisecond

// Shutdown releases every live hold of the client c, whatever its owner
// (callers without a context owner, context owners), at most while ctx
// lasts, then closes the client ([Client.Close]). From its start every new
// operation fails with [errs.ErrClosed]; each hold it releases ends with
// [ErrShutdown] (Done closes, Err and the Context's cause say so).
// Releases that fail, or that ctx cut, leave their holds to expire with
// their leases, as Close does (they end with errShutdownUnreleased, and
// count as lost); their errors are returned, joined.
func Shutdown(ctx context.Context, c *Client) error {
	if c == nil || c.bg == nil {
		return c.Check()
	}
	if ctx == nil {
		return fmt.Errorf("%w: Shutdown: nil context", errs.ErrInvalidArgument)
	}
	select {
	case <-c.closing:
		return nil // closed already
	default:
	}
	c.shutting.Store(true)
	var (
		mu   sync.Mutex
		fail []error
	)
	// Rounds until no hold is live and no acquisition attempt is under
	// way: an attempt sent before Shutdown began may take a hold after a
	// round, which the next round releases. No new attempt starts
	// (shutting), and each round ends every hold it finds, so the rounds
	// end.
	for ctx.Err() == nil {
		live := c.holds.all()
		if len(live) == 0 {
			if c.attempts.Load() == 0 {
				break
			}
			t := time.NewTimer(shutdownPoll)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		var wg sync.WaitGroup
		for _, h := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := shutdownHold(ctx, h); err != nil {
					mu.Lock()
					fail = append(fail, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	c.holds.endAll("", errShutdownUnreleased) // those ctx left: they expire with their leases
	return errors.Join(append(fail, c.Close())...)
}

// shutdownHold releases h in Redis whatever its count (the owner's count
// becomes 0), then ends it with ErrShutdown; a hold it could not release
// ends with errShutdownUnreleased.
func shutdownHold(ctx context.Context, h *Hold) error {
	sr := h.shut // never changed
	end := errShutdownUnreleased
	defer func() { h.end(end) }()
	if sr.lock == nil {
		return nil // not a lock's: nothing to release here
	}
	l, s, c := sr.lock, sr.side, sr.lock.C
	ol, err := c.owners.lock(ctx, h.key)
	if err != nil {
		return s.fail(l.Name, fmt.Errorf("shutdown %s: %w", s.step("release"), err))
	}
	defer c.owners.unlock(h.key, ol)
	if h.Count() == 0 {
		return nil // released or lost meanwhile
	}
	req := sr.req
	req.Count = 0
	req.Lease = l.lease()
	l.setRequestKey(&req)
	if req.Publish, err = c.PublishCommand(ctx); err != nil {
		return s.fail(l.Name, fmt.Errorf("shutdown %s: %w", s.step("release"), err))
	}
	c.holds.beginRelease(h.key, 0) // no renewal from now on
	r := releaser{lock: l, ctx: ctx, side: s, req: req}
	remaining, err := r.run()
	switch {
	case err != nil:
		return s.fail(l.Name, fmt.Errorf("shutdown %s: %w", s.step("release"), err))
	case remaining < 0:
		end = errShutdownGone // lost before Shutdown came to it
	default:
		end = ErrShutdown
	}
	return nil
}

// all returns the live holds.
func (hs *Holds) all() []*Hold {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	l := make([]*Hold, 0, len(hs.m))
	for _, h := range hs.m {
		l = append(l, h)
	}
	return l
}
