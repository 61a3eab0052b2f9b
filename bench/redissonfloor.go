package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// redissonFloorLib is not a lock library but the reference of the
// uncontended and many-locks rows: Redisson's own lock protocol (the
// commands of its 3.52 lock and unlock scripts, on its layout) and nothing
// added, run with bare go-redis. What redisync spends above this row is
// its own cost; what this row spends is the price of Redisson's layout.
//
// The layout: the lock is the hash `name`, its owner field
// `<client uuid>:<thread id>` holds the hold count, the lock channel is
// `redisson_lock__channel:{name}`, and each release records its result
// under `redisson_unlock_latch:{name}:<request id>`. Lock is one script
// (redissonFloorAcquire: EXISTS, HINCRBY, PEXPIRE when free or this
// owner's; PTTL when held by another); Unlock is one script
// (redissonFloorRelease: GET of the request record, HEXISTS, HINCRBY -1,
// then at zero DEL, PUBLISH 0 and SET of the record with PX; above zero
// PEXPIRE and SET of the record). Both run with EVALSHA (go-redis's Script,
// EVAL once if the server lacks it). There is no watchdog (the lease is
// Redisson's default 30 s, and no hold here outlasts it), no client path
// (no owner tokens, local line, retry records of acquisitions, deadlines
// or fencing). A Lock that finds the lock held waits as Redisson's does
// (RedissonLock.lock): it subscribes to the lock's channel on the
// client's one pub/sub connection, waits for the confirmation, tries
// again, then tries once per message on the channel (a message wakes one
// waiter of the client, as Redisson's semaphore per entry does) or when
// the holder's PTTL has passed, and unsubscribes once it holds the lock.
// That is the waiting every Redisson-protocol client does, and what a
// release costs across processes (clients-one-lock).
func redissonFloorLib() library {
	return library{
		name:         "redisson-floor",
		wait:         "reference: Redisson's lock protocol in bare go-redis, waiting as Redisson does (subscribe, one try per message or at the PTTL)",
		note:         "reference, not a lock: Redisson 3.52's lock and unlock scripts' commands in bare go-redis",
		waitingAfter: 1,
		open: func(c conn, _ *atomic.Int64) (session, error) {
			var id [16]byte
			_, _ = rand.Read(id[:])
			return &redissonFloorSession{rdb: c.rdb, id: uuidString(id),
				waiters: map[string][]chan struct{}{}, confirmed: map[string]chan struct{}{}}, nil
		},
	}
}

// redissonFloorLease is the lease the floor's acquisitions set: Redisson's
// default lock watchdog timeout.
const redissonFloorLease = 30 * time.Second

// redissonFloorRecordTTL is how long the floor's unlock records live. Its
// length does not change what a release costs.
const redissonFloorRecordTTL = 10 * time.Second

// redissonFloorAcquire takes or re-enters the lock: free, or held by this
// owner, it counts one more hold and sets the lease; held by another
// owner, it answers the hash's remaining time. Our own text, with the
// commands of Redisson's acquisition.
//
// KEYS[1] lock hash; ARGV[1] lease ms; ARGV[2] owner field.
// Returns nil when held now, else the lock's PTTL.
var redissonFloorAcquire = redis.NewScript(`local lock, owner = KEYS[1], ARGV[2]
if redis.call('exists', lock) == 1 and redis.call('hexists', lock, owner) == 0 then
  return redis.call('pttl', lock)
end
redis.call('hincrby', lock, owner, 1)
redis.call('pexpire', lock, ARGV[1])
return nil`)

// redissonFloorRelease gives one hold back, once per request id: a request
// whose record exists answers what it recorded; a non-owner changes
// nothing (nil); otherwise the count drops by one, and at zero the hash is
// deleted and 0 published on the channel. Either way the result is
// recorded. Our own text, with the commands of Redisson's release.
//
// KEYS[1] lock hash; KEYS[2] lock channel; KEYS[3] request record.
// ARGV[1] message; ARGV[2] lease ms; ARGV[3] owner field; ARGV[4] record
// TTL ms. Returns 1 when freed, 0 when holds remain, nil when not held.
var redissonFloorRelease = redis.NewScript(`local lock, record, owner = KEYS[1], KEYS[3], ARGV[3]
local done = redis.call('get', record)
if done then
  return tonumber(done)
end
if redis.call('hexists', lock, owner) == 0 then
  return nil
end
if redis.call('hincrby', lock, owner, -1) > 0 then
  redis.call('pexpire', lock, ARGV[2])
  redis.call('set', record, 0, 'px', ARGV[4])
  return 0
end
redis.call('del', lock)
redis.call('publish', KEYS[2], ARGV[1])
redis.call('set', record, 1, 'px', ARGV[4])
return 1`)

type redissonFloorSession struct {
	rdb     *redis.Client
	id      string       // the client's uuid
	threads atomic.Int64 // thread ids given to handles

	// The client's one pub/sub connection (made at the first wait) and
	// its waiters per channel, woken one per message in arrival order.
	mu        sync.Mutex
	ps        *redis.PubSub
	waiters   map[string][]chan struct{}
	confirmed map[string]chan struct{} // closed when Redis confirms the SUBSCRIBE
}

// mutex returns a handle with a thread id of its own, as each goroutine of
// a Redisson client has.
func (s *redissonFloorSession) mutex(key string) mutex {
	return &redissonFloorMutex{
		s:       s,
		key:     key,
		channel: "redisson_lock__channel:{" + key + "}",
		latch:   "redisson_unlock_latch:{" + key + "}:",
		field:   fmt.Sprintf("%s:%d", s.id, s.threads.Add(1)),
	}
}

func (s *redissonFloorSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ps != nil {
		_ = s.ps.Close()
	}
}

// subscribe adds a waiter on channel and returns what wakes it, once
// Redis has confirmed the subscription (the first waiter of a channel
// subscribes to it).
func (s *redissonFloorSession) subscribe(ctx context.Context, channel string) (chan struct{}, error) {
	wake := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[channel] = append(s.waiters[channel], wake)
	confirmed, ok := s.confirmed[channel]
	if !ok {
		confirmed = make(chan struct{})
		s.confirmed[channel] = confirmed
		if s.ps == nil {
			s.ps = s.rdb.Subscribe(ctx)
			go s.dispatch(s.ps.ChannelWithSubscriptions())
		}
		if err := s.ps.Subscribe(ctx, channel); err != nil {
			s.mu.Unlock()
			s.unsubscribe(context.WithoutCancel(ctx), channel, wake)
			return nil, err
		}
	}
	s.mu.Unlock()
	select {
	case <-confirmed:
		return wake, nil
	case <-ctx.Done():
		s.unsubscribe(context.WithoutCancel(ctx), channel, wake)
		return nil, ctx.Err()
	}
}

// unsubscribe removes the waiter wake of channel; the last one
// unsubscribes.
func (s *redissonFloorSession) unsubscribe(ctx context.Context, channel string, wake chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.waiters[channel]
	for i, w := range ws {
		if w == wake {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) > 0 {
		s.waiters[channel] = ws
		return
	}
	delete(s.waiters, channel)
	delete(s.confirmed, channel)
	_ = s.ps.Unsubscribe(ctx, channel)
}

// dispatch wakes the first waiter of a message's channel (Redisson's
// LockPubSub releases one permit of the entry's semaphore per message),
// and the waiters of a subscription Redis confirmed.
func (s *redissonFloorSession) dispatch(events <-chan any) {
	for e := range events {
		s.mu.Lock()
		switch e := e.(type) {
		case *redis.Subscription:
			if c, ok := s.confirmed[e.Channel]; ok && e.Kind == "subscribe" {
				select {
				case <-c:
				default:
					close(c)
				}
			}
		case *redis.Message:
			if ws := s.waiters[e.Channel]; len(ws) > 0 {
				select {
				case ws[0] <- struct{}{}:
				default:
				}
			}
		}
		s.mu.Unlock()
	}
}

type redissonFloorMutex struct {
	s                          *redissonFloorSession
	key, channel, latch, field string
}

// try runs the acquisition script once: held now, or the holder's PTTL.
func (m *redissonFloorMutex) try(ctx context.Context) (bool, int64, error) {
	pttl, err := redissonFloorAcquire.Run(ctx, m.s.rdb, []string{m.key}, redissonFloorLease.Milliseconds(), m.field).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("redisson-floor: acquire: %w", err)
	}
	return false, pttl, nil
}

func (m *redissonFloorMutex) Lock(ctx context.Context) error {
	if ok, _, err := m.try(ctx); ok || err != nil {
		return err
	}
	wake, err := m.s.subscribe(ctx, m.channel)
	if err != nil {
		return fmt.Errorf("redisson-floor: subscribe: %w", err)
	}
	defer m.s.unsubscribe(context.WithoutCancel(ctx), m.channel, wake)
	for {
		ok, pttl, err := m.try(ctx)
		if ok || err != nil {
			return err
		}
		wait := redissonFloorLease
		if pttl >= 0 {
			wait = time.Duration(pttl) * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

func (m *redissonFloorMutex) Unlock(ctx context.Context) error {
	var req [16]byte
	_, _ = rand.Read(req[:])
	_, err := redissonFloorRelease.Run(ctx, m.s.rdb, []string{m.key, m.channel, m.latch + hex.EncodeToString(req[:])},
		"0", redissonFloorLease.Milliseconds(), m.field, redissonFloorRecordTTL.Milliseconds()).Int64()
	if errors.Is(err, redis.Nil) {
		return errors.New("redisson-floor: release: not held")
	}
	if err != nil {
		return fmt.Errorf("redisson-floor: release: %w", err)
	}
	return nil
}

// uuidString formats 16 random bytes as a version 4 UUID, as Redisson's
// client ids are.
func uuidString(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
