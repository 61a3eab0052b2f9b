package core

import (
	"context"

	"github.com/redisync/redisync/pubsub"
)

// A held lock's key deleted or expired by someone else (a DEL, a
// force-unlock, the lease run out during a pause) is a lost hold that the
// watchdog learns of at its next renewal, up to a third of the lease
// later. When Redis publishes keyspace notifications of the key
// ([pubsub.Mux.Keyspace]), a hold whose Done or Context is watched learns
// of it within a round trip instead: each notification has the watchdog
// renew that hold at once ([watchdog.recheck]), and the renewal script
// says whether it is still the owner's, as at a round: the key may have
// been deleted by the owner's own release, or taken since by another
// owner, so a notification never ends a hold by itself. The periodic
// renewal stays as the fallback, since notifications can be lost.

// watchLoss subscribes to the keyspace notifications of key through mux
// and calls recheck once the subscription is confirmed (the key may have
// gone before), then after each deletion, expiry or eviction of the key
// and each re-subscription (notifications may have been lost meanwhile),
// until stop closes or ctx ends. It returns the subscription's error when
// there is none to be had (the notifications are off, the Client closed):
// the periodic renewal alone then tells the loss.
func watchLoss(ctx context.Context, mux *pubsub.Mux, key string, stop <-chan struct{}, recheck func()) error {
	sub, err := mux.Keyspace(ctx, key)
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		recheck()
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-sub.C():
			sub.Events() // which event it was does not matter: the renewal tells
		}
	}
}
