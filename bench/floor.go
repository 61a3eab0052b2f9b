package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// floorLib is not a lock library but the handoff row's reference: the
// least a lock woken by pub/sub does per handoff, in bare go-redis. Lock
// is SET NX PX; when that fails it subscribes (a connection of its own,
// go-redis's PubSub), tries again, and tries once more on every message.
// Unlock is one script that deletes the key when it holds the token and
// publishes. A handoff is then the release's round trip, the message, and
// one SET NX: the machine's floor for "release → message → acquire", with
// nothing of a real lock (no renewal, no exactly-once, no cleanup on the
// timed path: the subscription is closed after Lock returns). It is no
// peer, and runs in the handoff scenario only.
func floorLib() library {
	return library{
		name:         "pubsub-floor",
		wait:         "reference, not a lock: bare go-redis SET NX, SUBSCRIBE, SET NX on each message",
		waitingAfter: 2, // SET NX, (SUBSCRIBE, not counted), SET NX
		open: func(c conn, _ *atomic.Int64) (session, error) {
			return floorSession{c.rdb}, nil
		},
	}
}

type floorSession struct{ rdb *redis.Client }

func (s floorSession) mutex(key string) mutex {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &floorMutex{rdb: s.rdb, key: key, channel: key + ":released", token: hex.EncodeToString(b[:])}
}

func (floorSession) close() {}

type floorMutex struct {
	rdb                 *redis.Client
	key, channel, token string
}

// floorRelease deletes the key if it holds the token, and publishes.
var floorRelease = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '0')
  return 1
end
return 0`)

func (m *floorMutex) try(ctx context.Context) (bool, error) {
	return m.rdb.SetNX(ctx, m.key, m.token, leaseTTL).Result()
}

func (m *floorMutex) Lock(ctx context.Context) error {
	if ok, err := m.try(ctx); ok || err != nil {
		return err
	}
	ps := m.rdb.Subscribe(ctx, m.channel)
	defer func() { go ps.Close() }() // off the timed path
	if _, err := ps.Receive(ctx); err != nil {
		return fmt.Errorf("pubsub-floor: subscribe: %w", err)
	}
	msgs := ps.Channel()
	for {
		if ok, err := m.try(ctx); ok || err != nil {
			return err
		}
		select {
		case <-msgs:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (m *floorMutex) Unlock(ctx context.Context) error {
	n, err := floorRelease.Run(ctx, m.rdb, []string{m.key, m.channel}, m.token).Int64()
	if err != nil {
		return fmt.Errorf("pubsub-floor: release: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("pubsub-floor: release: not held")
	}
	return nil
}
