package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLib is redis/rueidis's lock with its defaults: each lock is 3
// keys (KeyMajority 2 of 2×2−1), a holder needs 2; a key's lease
// (KeyValidity) is 5 s, extended every 2.5 s while held; each key's
// acquisition request times out after 20 ms (TryNextAfter). A waiter does
// not poll: the acquisition script reads the key back, so the server
// tracks it for the client (client-side caching, CLIENT TRACKING OPTOUT),
// and the waiter sleeps until the server's invalidation of one of the
// lock's keys (its release or expiry) wakes its client's waiters of that
// name.
func rueidislockLib() library {
	return library{
		name: "rueidislock",
		wait: "client-side-caching invalidation of the lock's keys wakes the waiters (default)",
		// A Lock call that finds the lock taken sends one acquisition
		// script, for the first of the 3 keys: with that key refused the
		// majority is out of reach and the other two are not tried.
		waitingAfter: 1,
		open:         openRueidislock,
	}
}

// rueidislockSession is one rueidislock Locker, over a rueidis client of
// its own (with the Locker's defaults, which set client tracking and
// one pipelined connection) to the bench's server.
type rueidislockSession struct{ l rueidislock.Locker }

// openRueidislock opens a Locker whose client counts its requests in c.cnt
// (the go-redis client c.rdb is left unused).
func openRueidislock(c conn, _ *atomic.Int64) (session, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{c.addr}},
		ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
			rc, err := rueidis.NewClient(opt)
			if err != nil {
				return nil, err
			}
			return countingRueidis{Client: rc, cnt: c.cnt}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &rueidislockSession{l: l}, nil
}

func (s *rueidislockSession) mutex(key string) mutex { return &rueidislockMutex{l: s.l, name: key} }
func (s *rueidislockSession) close()                 { s.l.Close() }

// rueidislockMutex adapts rueidislock's context-shaped lock to Lock and
// Unlock: WithContext returns a context that stays alive while the lock is
// held, and a cancel function that releases it (it returns once every
// key's release script has been answered).
type rueidislockMutex struct {
	l      rueidislock.Locker
	name   string
	unlock context.CancelFunc
}

// Lock waits until it holds the lock or ctx ends. rueidislock ties the
// hold to the context given to WithContext (its cancellation releases the
// lock, its deadline shortens the lease), whereas the other libraries'
// holds outlive the context of their Lock call; so the hold gets a context
// of its own that ctx cancels only while Lock is waiting.
func (m *rueidislockMutex) Lock(ctx context.Context) error {
	if m.unlock != nil {
		return errors.New("rueidislock: Lock on a held mutex")
	}
	holdCtx, cancelHold := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancelHold)
	_, unlock, err := m.l.WithContext(holdCtx, m.name)
	if !stop() {
		// ctx ended while waiting: WithContext returned its error, or it
		// acquired the lock just as holdCtx was cancelled.
		if err == nil {
			unlock()
		}
		cancelHold()
		return fmt.Errorf("rueidislock: %w", ctx.Err())
	}
	if err != nil {
		cancelHold()
		return fmt.Errorf("rueidislock: %w", err)
	}
	m.unlock = func() {
		unlock()
		cancelHold()
	}
	return nil
}

// Unlock releases the lock; rueidislock's release takes no context and
// reports no error (a key that is no longer the holder's is left alone).
func (m *rueidislockMutex) Unlock(context.Context) error {
	if m.unlock == nil {
		return errors.New("rueidislock: unlock: not held")
	}
	m.unlock()
	m.unlock = nil
	return nil
}

// countingRueidis counts the requests a rueidis client sends in a counter,
// as the go-redis hook does for the other libraries: each Do is one
// request, each DoMulti one (rueidislock sends only Do: EVALSHA, or EVAL
// after NOSCRIPT). rueidis pipelines concurrent requests on its single
// connection, so requests sent at once (a release's 3 scripts) can share
// one round trip's time; they are still counted one each. A request whose
// context has already ended is not counted: rueidis returns the context's
// error without sending it (rueidislock's third key, tried in the
// background after Lock has returned, meets this when Unlock comes first).
// Invalidation messages are pushed by the server and are not requests.
type countingRueidis struct {
	rueidis.Client
	cnt *counter
}

func (c countingRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if ctx.Err() != nil {
		return c.Client.Do(ctx, cmd)
	}
	c.cnt.started.Add(1)
	defer c.cnt.completed.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingRueidis) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if ctx.Err() != nil {
		return c.Client.DoMulti(ctx, multi...)
	}
	c.cnt.started.Add(1)
	defer c.cnt.completed.Add(1)
	return c.Client.DoMulti(ctx, multi...)
}
