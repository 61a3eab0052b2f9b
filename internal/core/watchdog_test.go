package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/bg"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/core/pipeline"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// renewSource is a renewal script in the common encoding (RenewSpec): a
// hold is renewed (PEXPIRE of its first key) while that key exists, and
// found gone otherwise. %s makes scripts with distinct SHA1s.
const renewSource = `-- %s
local n = tonumber(ARGV[2])
local res = {}
local k, a = 1, 3
for i = 1, n do
  local nkeys, nargs = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2 + nargs
  if redis.call('exists', KEYS[k]) == 1 then
    redis.call('pexpire', KEYS[k], ARGV[1])
    res[i] = 1
  else
    res[i] = 0
  end
  k = k + nkeys
end
return res`

var (
	renewA = redis.NewScript(fmt.Sprintf(renewSource, "a"))
	renewB = redis.NewScript(fmt.Sprintf(renewSource, "b"))
)

// evalCall is one script call of a pipeline, as sent.
type evalCall struct {
	sha  string
	keys []string
}

// pipelines is a go-redis hook that records the script calls of every
// pipeline the client sends.
type pipelines struct {
	mu    sync.Mutex
	calls [][]evalCall
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a script call sent alone (the script pipeline sends
// a call that finds nothing in flight at once, without a pipeline) as a
// pipeline of one.
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			args := cmd.Args()
			n, _ := strconv.Atoi(fmt.Sprint(args[2]))
			call := evalCall{sha: fmt.Sprint(args[1])}
			for _, k := range args[3 : 3+n] {
				call.keys = append(call.keys, fmt.Sprint(k))
			}
			p.mu.Lock()
			p.calls = append(p.calls, []evalCall{call})
			p.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var pipe []evalCall
		for _, cmd := range cmds {
			args := cmd.Args()
			if cmd.Name() != "evalsha" && cmd.Name() != "eval" {
				continue
			}
			n, _ := strconv.Atoi(fmt.Sprint(args[2]))
			call := evalCall{sha: fmt.Sprint(args[1])}
			for _, k := range args[3 : 3+n] {
				call.keys = append(call.keys, fmt.Sprint(k))
			}
			pipe = append(pipe, call)
		}
		if len(pipe) == 0 {
			// Not the watchdog's: a new connection's handshake (CLIENT
			// SETINFO), dialed when the background count read holds the
			// other one.
			return next(ctx, cmds)
		}
		p.mu.Lock()
		p.calls = append(p.calls, pipe)
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (p *pipelines) recorded() [][]evalCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// watchdogSetup is a Client whose watchdog renews holds on the shared
// server every interval, the record of its pipelines, and a client for the
// test's own commands.
type watchdogSetup struct {
	c     *Holds
	lease time.Duration // of the holds (hold)
	rdb   *redis.Client // the Client's
	pipes *pipelines
	cmd   *redis.Client // for the test's commands
}

func newWatchdogSetup(t *testing.T, timeout time.Duration) *watchdogSetup {
	t.Helper()
	rdb := redistest.Shared(t).Client(t)
	ctx := context.Background()
	for _, s := range []*redis.Script{renewA, renewB} {
		require.NoError(t, s.Load(ctx, rdb).Err()) // no NOSCRIPT round trip to count
	}
	pipes := &pipelines{}
	rdb.AddHook(pipes)
	return &watchdogSetup{c: testHolds(t, rdb), lease: timeout, rdb: rdb, pipes: pipes, cmd: rdb}
}

// holdAcquired records an acquisition of key in hs as the engine does
// ([Holds.acquiredAs]), unlabelled and without a fencing token, sent now.
func holdAcquired(hs *Holds, key HoldKey, count int64, lease time.Duration, renew *RenewSpec) *Hold {
	return hs.acquiredAs(shutdownRelease{}, time.Now(), key, count, 0, lease, renew)
}

// hold creates key in Redis and registers a watchdog hold on it renewed
// with script.
func (w *watchdogSetup) hold(t *testing.T, key string, script *redis.Script) *Hold {
	t.Helper()
	require.NoError(t, w.cmd.Set(context.Background(), key, "1", time.Minute).Err())
	return holdAcquired(w.c, HoldKey{Key: key, Field: "owner"}, 1, w.lease, &RenewSpec{Script: script, Keys: []string{key}})
}

// ticks waits until the watchdog has completed n more rounds.
func (w *watchdogSetup) ticks(t *testing.T, n uint64) {
	t.Helper()
	from := w.c.Stats().Ticks
	require.Eventually(t, func() bool { return w.c.Stats().Ticks >= from+n }, 10*time.Second, redistest.Tick, "%d renewal rounds", n)
}

// callSizes returns the number of keys of each call in pipe, by script,
// sorted.
func callSizes(pipe []evalCall) map[string][]int {
	sizes := map[string][]int{}
	for _, c := range pipe {
		sizes[c.sha] = append(sizes[c.sha], len(c.keys))
	}
	for _, s := range sizes {
		slices.Sort(s)
	}
	return sizes
}

// Holds due together are renewed in one round, in one call per script
// and MaxBatch holds, sent together through the client's script pipeline.
func TestWatchdogBatches(t *testing.T) {
	w := newWatchdogSetup(t, 3*time.Second) // a round every second
	name := redistest.Key(t, "hold")
	ctx := context.Background()
	type held struct {
		key    string
		script *redis.Script
	}
	var keys []held
	for i := range 2*MaxBatch + 50 {
		keys = append(keys, held{name + ":a:" + strconv.Itoa(i), renewA})
	}
	for i := range 30 {
		keys = append(keys, held{name + ":b:" + strconv.Itoa(i), renewB})
	}
	pipe := w.cmd.Pipeline()
	for _, k := range keys {
		pipe.Set(ctx, k.key, "1", time.Minute)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	sent := time.Now() // every hold due at once
	var holds []*Hold
	for _, k := range keys {
		holds = append(holds, w.c.acquiredAs(shutdownRelease{}, sent, HoldKey{Key: k.key, Field: "owner"}, 1, 0, w.lease,
			&RenewSpec{Script: k.script, Keys: []string{k.key}}))
	}
	require.Equal(t, len(holds), w.c.Stats().Holds)
	w.ticks(t, 2)

	var calls []evalCall
	for _, pipe := range w.pipes.recorded() {
		calls = append(calls, pipe...)
	}
	require.GreaterOrEqual(t, len(calls), 8, "script calls")
	want := map[string][]int{renewA.Hash(): {50, MaxBatch, MaxBatch}, renewB.Hash(): {30}}
	for i := 0; i+4 <= 8; i += 4 {
		assert.Equal(t, want, callSizes(calls[i:i+4]), "round %d: calls by script and their sizes", i/4)
	}
	st := w.c.Stats()
	assert.Equal(t, 4*st.Ticks, st.Calls, "script calls per round")
	for _, h := range holds {
		require.NoError(t, h.Err())
	}
	// The renewal set the lease: a minute became at most 3s.
	d := w.cmd.PTTL(context.Background(), name+":a:0").Val()
	assert.Positive(t, d)
	assert.LessOrEqual(t, d, 3*time.Second)
}

// Each hold is renewed on its own lease: a hold of a short lease every
// third of it, one of a long lease not before a third of its own.
func TestWatchdogPerHoldLease(t *testing.T) {
	w := newWatchdogSetup(t, 600*time.Millisecond)
	name := redistest.Key(t, "hold")
	short := w.hold(t, name+":short", renewA)
	require.NoError(t, w.cmd.Set(context.Background(), name+":long", "1", time.Minute).Err())
	long := holdAcquired(w.c, HoldKey{Key: name + ":long", Field: "owner"}, 1, time.Hour, &RenewSpec{Script: renewA, Keys: []string{name + ":long"}})
	w.ticks(t, 3)
	require.NoError(t, short.Err())
	require.NoError(t, long.Err())
	for _, pipe := range w.pipes.recorded() {
		for _, c := range pipe {
			assert.Equal(t, []string{name + ":short"}, c.keys, "only the short lease's hold is due")
		}
	}
	d := w.cmd.PTTL(context.Background(), name+":short").Val()
	assert.LessOrEqual(t, d, 600*time.Millisecond, "renewed with its own lease")
	d = w.cmd.PTTL(context.Background(), name+":long").Val()
	assert.Greater(t, d, 50*time.Second, "not renewed yet (due in 20 minutes)")
}

// On a Cluster a call's keys must share a slot: holds are grouped by
// script and the slot of their first key.
func TestWatchdogBatchesBySlot(t *testing.T) {
	w := newWatchdogSetup(t, 600*time.Millisecond)
	// The server is a single node, which runs scripts across slots; the
	// client is told it talks to a Cluster, so it groups as it would there.
	w.c.wd.cluster = true
	name := redistest.Key(t, "hold")
	tags := []string{"a", "b", "c"}
	for _, tag := range tags {
		for i := range 5 {
			w.hold(t, "{"+name+":"+tag+"}:"+strconv.Itoa(i), renewA)
		}
	}
	w.ticks(t, 2)
	var calls []evalCall
	for _, pipe := range w.pipes.recorded() {
		calls = append(calls, pipe...)
	}
	require.GreaterOrEqual(t, len(calls), 2*len(tags), "one call per slot and round")
	for i, call := range calls {
		require.Len(t, call.keys, 5)
		for _, k := range call.keys {
			assert.Equal(t, keys.Slot(call.keys[0]), keys.Slot(k), "call %d: keys of one call in two slots: %v", i, call.keys)
		}
	}
}

// A renewal that finds a hold gone from Redis ends it with errs.ErrLockLost;
// the other holds of its batch go on.
func TestWatchdogHoldGone(t *testing.T) {
	w := newWatchdogSetup(t, 600*time.Millisecond)
	name := redistest.Key(t, "hold")
	gone := w.hold(t, name+":gone", renewA)
	kept := w.hold(t, name+":kept", renewA)
	require.NoError(t, w.cmd.Del(context.Background(), name+":gone").Err())
	select {
	case <-gone.Done():
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Done not closed after the hold's key was deleted")
	}
	require.ErrorIs(t, gone.Err(), errs.ErrLockLost)
	assert.ErrorContains(t, gone.Err(), "found the hold gone")
	w.ticks(t, 2)
	require.NoError(t, kept.Err())
	assert.Equal(t, 1, w.c.Stats().Holds)
}

// cmdWith returns a finished script call whose reply is res.
func cmdWith(res ...int64) *redis.Cmd {
	cmd := redis.NewCmd(context.Background())
	v := make([]any, len(res))
	for i, r := range res {
		v[i] = r
	}
	cmd.SetVal(v)
	return cmd
}

// The loss rules of one renewal reply: 1 renews (the hold counts from the
// round's start), 0 loses a live hold, and a hold whose renewal Unlock
// stopped meanwhile is released, not lost; an error or a malformed reply
// ends nothing.
func TestWatchdogApply(t *testing.T) {
	// An hour's watchdog timeout: the watchdog's own rounds never run here.
	c := testHolds(t, redistest.Shared(t).Client(t))
	spec := func(key string) *RenewSpec { return &RenewSpec{Script: renewA, Keys: []string{key}} }
	acquire := func(key string) *Hold {
		return c.acquiredAs(shutdownRelease{}, time.Now().Add(-time.Minute), HoldKey{Key: key, Field: "owner"}, 1, 0, time.Hour, spec(key))
	}
	renewed, lost := acquire("renewed"), acquire("lost")
	k := batchKey{script: renewA, lease: time.Hour}
	b := newRenewBatch(k, []*Hold{renewed, lost})

	_, err := c.wd.apply(b, cmdWith(1), nil, time.Now())
	require.Error(t, err, "a reply with fewer results than holds")
	failed := redis.NewCmd(context.Background())
	failed.SetErr(errors.New("i/o timeout"))
	_, err = c.wd.apply(b, failed, nil, time.Now())
	require.Error(t, err)
	require.NoError(t, renewed.Err(), "a failed renewal ended a hold")
	require.NoError(t, lost.Err(), "a failed renewal ended a hold")

	start := time.Now()
	_, err = c.wd.apply(b, cmdWith(1, 0), nil, start)
	require.NoError(t, err)
	require.NoError(t, renewed.Err())
	renewed.mu.Lock()
	assert.Equal(t, start, renewed.lastOK, "a renewed hold counts from the round's start")
	renewed.mu.Unlock()
	require.ErrorIs(t, lost.Err(), errs.ErrLockLost)
	select {
	case <-lost.Done():
	default:
		require.FailNow(t, "Done not closed for a lost hold")
	}

	// Unlock stops the renewal, then sends the release; a round in flight
	// finds the field gone: released, not lost.
	released := acquire("released")
	rb := newRenewBatch(k, []*Hold{released})
	h := c.beginRelease(released.key, 0)
	_, err = c.wd.apply(rb, cmdWith(0), nil, time.Now())
	require.NoError(t, err)
	h.released(0, 0, nil, time.Now())
	require.ErrorIs(t, released.Err(), errs.ErrNotHeld)
	require.NotErrorIs(t, released.Err(), errs.ErrLockLost)
	require.NoError(t, renewed.Err())
	assert.Equal(t, 1, c.Stats().Holds)
}

// A round that fails with a network error keeps the hold and retries; the
// hold is lost once no renewal has succeeded for its lease (less the
// margin), on time: the schedule does not wait for a round.
func TestWatchdogNetworkErrors(t *testing.T) {
	// Nothing listens here: every round fails with a network error.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	c := testHolds(t, rdb)
	const lease = 300 * time.Millisecond
	acquire := func(key string, sent time.Time) *Hold {
		return c.acquiredAs(shutdownRelease{}, sent, HoldKey{Key: key, Field: "owner"}, 1, 0, lease, &RenewSpec{Script: renewA, Keys: []string{key}})
	}
	acquired := time.Now()
	stale := acquire("stale", time.Now().Add(-lease))
	fresh := acquire("fresh", acquired)
	select {
	case <-stale.Done():
	case <-time.After(time.Second):
		require.FailNow(t, "a hold without a renewal for a whole lease lasts")
	}
	require.ErrorIs(t, stale.Err(), errs.ErrLockLost, "a hold without a renewal for a whole lease")
	assert.ErrorContains(t, stale.Err(), "no renewal succeeded within the lease")
	require.NoError(t, fresh.Err(), "a fresh hold lost at once")

	select {
	case <-fresh.Done():
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the hold outlived a whole lease without renewal")
	}
	lived := time.Since(acquired)
	assert.GreaterOrEqual(t, lived, lease-LeaseMargin(lease), "lost before its lease without renewal")
	assert.Less(t, lived, lease+200*time.Millisecond, "lost late: the schedule waited for a round")
	require.ErrorIs(t, fresh.Err(), errs.ErrLockLost)
	assert.Positive(t, c.ctr.renewFailed.Load(), "failed renewals counted")
	assert.Zero(t, c.Stats().Holds)
}

// through a network partition shorter than a lease the watchdog's own
// rounds retry and keep the hold; a longer one loses it after a lease.
func TestWatchdogPartition(t *testing.T) {
	srv := redistest.Shared(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	rdb := redis.NewClient(&redis.Options{
		Addr: proxy.Addr(), MaxRetries: -1,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, renewA.Load(context.Background(), rdb).Err())
	const timeout = 1500 * time.Millisecond // a round every 500ms
	w := &watchdogSetup{c: testHolds(t, rdb), lease: timeout, rdb: rdb, pipes: &pipelines{}, cmd: srv.Client(t)}
	name := redistest.Key(t, "hold")

	t.Run("short", func(t *testing.T) {
		// The first round (after 500ms) fails; the retry 500ms later, past
		// the partition, renews the hold well within its lease of 1.5s.
		ticks := w.c.Stats().Ticks
		proxy.Block()
		h := w.hold(t, name+":short", renewA)
		require.Eventually(t, func() bool { return w.c.Stats().Ticks > ticks }, 5*time.Second, redistest.Tick, "a round during the partition")
		proxy.Unblock()
		w.ticks(t, 4) // more than a lease since the acquisition
		require.NoError(t, h.Err(), "a partition shorter than a lease lost the hold")
		require.NoError(t, w.cmd.Del(context.Background(), name+":short").Err())
		<-h.Done()
	})
	t.Run("long", func(t *testing.T) {
		acquired := time.Now()
		h := w.hold(t, name+":long", renewA)
		proxy.Block()
		defer proxy.Unblock()
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			require.FailNow(t, "the hold outlived a long partition")
		}
		assert.GreaterOrEqual(t, time.Since(acquired), timeout-LeaseMargin(timeout), "lost before a whole lease without renewal")
		require.ErrorIs(t, h.Err(), errs.ErrLockLost)
		assert.ErrorContains(t, h.Err(), "no renewal succeeded within the lease")
	})
}

// testHolds returns holds over rdb whose watchdog renews through a script
// pipeline with the default replica acknowledgement, as a client's; the
// watchdog stops when the test ends.
func testHolds(t *testing.T, rdb redis.UniversalClient) *Holds {
	t.Helper()
	g := bg.New()
	log := slog.New(slog.DiscardHandler)
	hs := newHolds(holdsConfig{Pipe: pipeline.New(rdb, pipeline.DefaultSettings, g, log), Context: g.Context(),
		Closing: g.Closing(), Log: log, // counted and observed where nothing reads it but the tests
		Lines: new(Lines), Ctr: new(counters), Evict: new(evictions)})
	t.Cleanup(func() {
		g.Close()
		hs.Wait()
		g.Wait()
		hs.endAll("", errs.ErrClosed)
	})
	return hs
}
