package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// fairWaiterTimeout is the waiter timeout of the fair lock waiters in
// these tests: they re-check every third of it (a minute), so a waiter
// that gets in within wakeBound was woken by a release, and a raw entry
// put at the head of the queue stays there until the command runs.
const fairWaiterTimeout = 3 * time.Minute

// fairWaiter is a Go client blocked in FairLock.Lock as owner.
type fairWaiter struct {
	lock   *rlock.FairLock
	ctx    context.Context // carries the owner token
	client string          // its client's id
	owner  string          // "<client id>:<owner token>"
	done   chan error      // Lock's result
	cancel context.CancelFunc
}

// queueFairWaiter starts a Go client (its own connection) waiting in Lock
// for the fair lock name as owner token token, and waits until it is the
// last in the queue and listens on its channel.
func queueFairWaiter(t *testing.T, name string, token uint64) *fairWaiter {
	t.Helper()
	c := waiterClient(t)
	ctx, cancel := context.WithCancel(redisync.WithOwnerToken(context.Background(), token))
	t.Cleanup(cancel)
	w := &fairWaiter{
		lock:   rlock.NewFair(c, name, rlock.WithWaiterTimeout(fairWaiterTimeout)),
		ctx:    ctx,
		client: c.ID(),
		owner:  c.ID() + ":" + strconv.FormatUint(token, 10),
		done:   make(chan error, 1),
		cancel: cancel,
	}
	go func() { w.done <- w.lock.Lock(ctx) }()
	require.Eventually(t, func() bool {
		q, err := rdb(t).LRange(context.Background(), keys.FairQueue(name), -1, -1).Result()
		return err == nil && len(q) == 1 && q[0] == w.owner
	}, wakeBound, 5*time.Millisecond, "owner %s never joined the queue", w.owner)
	waitSubscribers(t, keys.FairChannel(name, w.owner), 1)
	return w
}

// stop cancels a waiter that is still waiting and checks that it gave up.
func (w *fairWaiter) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		assert.ErrorIs(t, err, context.Canceled, "the cancelled waiter %s", w.owner)
	case <-time.After(wakeBound):
		t.Errorf("waiter %s did not return within %v of its cancellation", w.owner, wakeBound)
	}
}

// deadEntry queues owner for the fair lock name as a waiter whose process
// died: its deadline passed a minute ago, by the server's clock. At the
// head of the queue with atHead, else at its end.
func deadEntry(t *testing.T, name, owner string, atHead bool) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb(t).Time(ctx).Result()
	require.NoError(t, err)
	_, err = rdb(t).TxPipelined(ctx, func(p redis.Pipeliner) error {
		if atHead {
			p.LPush(ctx, keys.FairQueue(name), owner)
		} else {
			p.RPush(ctx, keys.FairQueue(name), owner)
		}
		p.ZAdd(ctx, keys.FairTimeouts(name), redis.Z{Score: float64(now.UnixMilli() - time.Minute.Milliseconds()), Member: owner})
		return nil
	})
	require.NoError(t, err)
}

// fairCleanup deletes the fair lock name's keys at the end of the test.
func fairCleanup(t *testing.T, name string) {
	t.Cleanup(func() {
		rdb(t).Del(context.Background(), name, keys.FairQueue(name), keys.FairTimeouts(name))
	})
}

// TestInspectFairLock: a fair lock a Go owner holds, two Go waiters in
// line behind it, and a dead entry (a waiter whose process died) at the
// end of the line.
func TestInspectFairLock(t *testing.T) {
	t.Parallel()
	name := redistest.Key(t, "fair")
	fairCleanup(t, name)
	hc := clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease))
	holder := rlock.NewFair(hc, name)
	require.NoError(t, holder.Lock(redisync.WithOwnerToken(context.Background(), 1)))
	w1 := queueFairWaiter(t, name, 11)
	w2 := queueFairWaiter(t, name, 12)
	javaID := uuid.NewString()
	deadEntry(t, name, javaID+":3", false)

	r := inspectJSON(t, name)
	assert.Equal(t, kindFair, r.Type)
	assert.False(t, r.Guessed)
	assert.True(t, r.Exists)
	assert.Contains(t, r.Reason, "a hash of owner fields and a waiting queue "+keys.FairQueue(name))
	assert.Equal(t, keys.LockChannel(name), r.Channel)
	assert.EqualValues(t, 2, r.Waiters, "one subscribed client per live waiter")
	if assert.Len(t, r.Holders, 1) {
		assert.True(t, equalHolder(r.Holders[0], Holder{Owner: hc.ID() + ":1", ClientID: hc.ID(), OwnerToken: "1", Count: 1}), "holder %+v", r.Holders[0])
	}
	require.Len(t, r.Queue, 3)
	for i, want := range []struct{ client, token string }{{w1.client, "11"}, {w2.client, "12"}, {javaID, "3"}} {
		e := r.Queue[i]
		assert.Equal(t, want.client+":"+want.token, e.Owner, "queue[%d]", i)
		assert.Equal(t, want.client, e.ClientID, "queue[%d]", i)
		assert.Equal(t, want.token, e.OwnerToken, "queue[%d]", i)
	}
	for _, e := range r.Queue[:2] {
		assert.False(t, e.Dead, "live waiter %s", e.Owner)
		assert.True(t, e.DeadlineMillisLeft > 0 && e.DeadlineMillisLeft <= fairWaiterTimeout.Milliseconds(),
			"waiter %s: deadline_ms_left %d, want in (0, %d]", e.Owner, e.DeadlineMillisLeft, fairWaiterTimeout.Milliseconds())
	}
	assert.True(t, r.Queue[2].Dead, "the dead entry")
	assert.LessOrEqual(t, r.Queue[2].DeadlineMillisLeft, -time.Minute.Milliseconds(), "the dead entry's deadline passed a minute ago")

	// The JSON keys scripts read.
	res := runCmd(t, nil, "inspect", "-json", "-redis", testURL(t), name)
	require.Equal(t, 0, res.code)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &raw))
	assert.Equal(t, "fair_lock", raw["type"])
	queue, ok := raw["queue"].([]any)
	require.True(t, ok, "queue is not an array: %v", raw["queue"])
	require.Len(t, queue, 3)
	for i, e := range queue {
		entry, ok := e.(map[string]any)
		require.True(t, ok, "queue[%d] is not an object", i)
		for _, key := range []string{"owner", "client_id", "owner_token", "deadline_ms_left", "dead"} {
			assert.Contains(t, entry, key, "queue[%d]", i)
		}
	}
	assert.Equal(t, true, queue[2].(map[string]any)["dead"])
	assert.Equal(t, w1.owner, queue[0].(map[string]any)["owner"])

	// The text.
	res = runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	require.Equal(t, 0, res.code)
	for _, s := range []string{
		"fair lock (a hash of owner fields and a waiting queue " + keys.FairQueue(name),
		"held by 1 owner, lease ",
		"client " + hc.ID(),
		"3 owners waiting, head first, 1 of them dead",
		"2 clients subscribed to the queued owners' channels " + keys.LockChannel(name) + ":<owner>",
	} {
		assert.Contains(t, res.stdout, s)
	}
	for _, re := range []string{
		`queued:\s+#1\s+client ` + regexp.QuoteMeta(w1.client) + `\s+owner token 11\s+deadline in \S+\n`,
		`queued:\s+#2\s+client ` + regexp.QuoteMeta(w2.client) + `\s+owner token 12\s+deadline in \S+\n`,
		// Behind live waiters: the scripts drop dead waiters at the head only.
		`queued:\s+#3\s+client ` + javaID + `\s+owner token 3\s+dead: deadline passed \S+ ago; dropped once it is at the head\n`,
	} {
		assert.Regexp(t, re, res.stdout)
	}

	// -type lock shows the lock without its queue; -type rwlock is wrong.
	if r := inspectJSON(t, name, "-type", "lock"); r.Type != kindLock || r.Queue != nil || len(r.Holders) != 1 {
		t.Errorf("-type lock: report %+v, want a lock with its holder and no queue", r)
	}
	res = runCmd(t, nil, "inspect", "-type", "rwlock", "-redis", testURL(t), name)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, "with a waiting queue: a fair lock, not a read-write lock")

	w1.stop(t)
	w2.stop(t)
	_, err := holder.ForceUnlock(context.Background())
	require.NoError(t, err)
}

// TestInspectFreeFairLock: a free fair lock whose only queued owner is
// dead, at the head, so the next operation drops it; and -type fair_lock on a
// lock nobody waits for.
func TestInspectFreeFairLock(t *testing.T) {
	t.Parallel()
	name := redistest.Key(t, "fair")
	fairCleanup(t, name)
	deadEntry(t, name, "gone-client:9", true)
	r := inspectJSON(t, name)
	assert.Equal(t, kindFair, r.Type)
	assert.False(t, r.Exists)
	assert.Contains(t, r.Reason, "no key (free) and a waiting queue "+keys.FairQueue(name)+" with its timeouts "+keys.FairTimeouts(name))
	if assert.Len(t, r.Queue, 1) {
		assert.True(t, r.Queue[0].Dead)
		assert.Equal(t, "gone-client", r.Queue[0].ClientID)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	assert.Contains(t, res.stdout, "state:    free")
	assert.Regexp(t, `#1\s+client gone-client\s+owner token 9\s+dead: deadline passed \S+ ago; the next operation drops it\n`, res.stdout)
	res = runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	assert.Equal(t, exitError, res.code)
	assert.Contains(t, res.stderr, "is not locked")

	// A lock with no queue is a lock; -type fair_lock shows an empty queue.
	plain := redistest.Key(t, "plain")
	fairCleanup(t, plain)
	rdb(t).HSet(context.Background(), plain, "someone:1", 1)
	assert.Equal(t, kindLock, inspectJSON(t, plain).Type)
	res = runCmd(t, nil, "inspect", "-json", "-type", "fair_lock", "-redis", testURL(t), plain)
	require.Equal(t, 0, res.code, res.stderr)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &raw))
	assert.Equal(t, "fair_lock", raw["type"])
	assert.Equal(t, []any{}, raw["queue"], "an empty queue is an empty array")
	res = runCmd(t, nil, "inspect", "-type", "fair_lock", "-redis", testURL(t), plain)
	assert.Contains(t, res.stdout, "queue:    empty: no owner waits its turn")
}

// TestUnlockFairLock frees a fair lock with a dead entry at the head of
// its queue and two Go waiters behind it: the dead entry is dropped, the
// first Go waiter is woken and gets in at once, and the second keeps
// waiting in line.
func TestUnlockFairLock(t *testing.T) {
	t.Parallel()
	name := redistest.Key(t, "fair")
	fairCleanup(t, name)
	ctx := redisync.WithOwnerToken(context.Background(), 1)
	hc := clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease))
	holder := rlock.NewFair(hc, name)
	require.NoError(t, holder.Lock(ctx))
	w1 := queueFairWaiter(t, name, 21)
	w2 := queueFairWaiter(t, name, 22)
	deadEntry(t, name, "crashed-client:4", true)

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	require.Equal(t, 0, res.code, res.stderr)
	for _, s := range []string{
		`force-unlocked fair lock "` + name + `" (was held by client ` + hc.ID() + ` owner token 1 ×1)`,
		"dropped 1 dead owner from the head of the queue\n",
		"woke the head of the queue, client " + w1.client + " owner token 21: published the release on " +
			keys.FairChannel(name, w1.owner) + " (1 client subscribed)\n",
	} {
		assert.Contains(t, res.stdout, s)
	}

	select {
	case err := <-w1.done:
		require.NoError(t, err, "the head's Lock")
		t.Cleanup(func() { _ = w1.lock.Unlock(w1.ctx) })
	case <-time.After(wakeBound):
		t.Fatalf("the head of the queue was not woken within %v of the force unlock", wakeBound)
	}
	// The head left the queue as it took the lock; the second waits on.
	q, err := rdb(t).LRange(context.Background(), keys.FairQueue(name), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{w2.owner}, q)
	select {
	case err := <-w2.done:
		t.Errorf("the second waiter's Lock returned (%v) while the head holds the lock", err)
	default:
	}
	w2.stop(t)

	err = holder.Unlock(ctx)
	assert.True(t, errors.Is(err, redisync.ErrNotHeld), "the old holder's Unlock: %v, want ErrNotHeld", err)
}

// TestUnlockFairLockNobodyWaits: a fair lock whose queue holds only a dead
// entry: unlock drops it and says that nobody was woken.
func TestUnlockFairLockNobodyWaits(t *testing.T) {
	t.Parallel()
	name := redistest.Key(t, "fair")
	fairCleanup(t, name)
	rdb(t).HSet(context.Background(), name, "stuck-client:2", 1)
	deadEntry(t, name, "crashed-client:4", false)
	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, `force-unlocked fair lock "`+name+`" (was held by client stuck-client owner token 2 ×1)`)
	assert.Contains(t, res.stdout, "dropped 1 dead owner from the head of the queue\nno owner waits in the queue: nobody to wake\n")
	n, err := rdb(t).Exists(context.Background(), name, keys.FairQueue(name), keys.FairTimeouts(name)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock, or the dead entry, is left")
}
