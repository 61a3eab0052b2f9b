package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestCluster inspects and force-unlocks a lock on a 3-master Redis
// Cluster through a node that does not own the lock's slot: the command
// must notice the cluster, find the lock on its node, and count the waiter
// subscribed on another node.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	name := redistest.Key(t, "lock")
	owner := keys.Slot(name) * len(cl.Servers) / 16384
	url := "redis://" + cl.Servers[(owner+1)%len(cl.Servers)].Addr()

	holder := redisync.New(cl.Client(t), redisync.WithWatchdogTimeout(longLease))
	t.Cleanup(func() { _ = holder.Close() })
	held := rlock.New(holder, name, rlock.WithFencing())
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waiterC := redisync.New(cl.Client(t), redisync.WithRecheckInterval(longLease))
	t.Cleanup(func() { _ = waiterC.Close() })
	waiter := rlock.New(waiterC, name)
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(wctx) }()

	// The waiter subscribes in the background; wait until inspect counts it.
	var r Report
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := runCmd(t, nil, "inspect", "-json", "-redis", url, name)
		if res.code != 0 {
			t.Fatalf("inspect: exit %d: %s", res.code, res.stderr)
		}
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Fatal(err)
		}
		if r.Waiters == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Type != kindLock || len(r.Holders) != 1 || r.Holders[0].ClientID != holder.ID() || r.FenceToken == nil || *r.FenceToken != held.FencingToken() || r.Waiters != 1 {
		t.Fatalf("report %+v: want a lock held by %s, fence token %d, 1 waiter", r, holder.ID(), held.FencingToken())
	}

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", url, name)
	if res.code != 0 {
		t.Fatalf("unlock: exit %d: %s", res.code, res.stderr)
	}
	waitWoken(t, waiter, done)
}
