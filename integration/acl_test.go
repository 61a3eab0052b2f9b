package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// aclRule returns the rules of SECURITY.md's least-privilege ACL user
// (for the key prefix "app:", redisync.WithKeyPrefix), read from the document itself, so that the
// rule tested is the rule published.
func aclRule(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../SECURITY.md")
	require.NoError(t, err)
	const head = "ACL SETUSER app-redisync on >password"
	i := strings.Index(string(doc), head)
	require.GreaterOrEqual(t, i, 0, "SECURITY.md has no %q", head)
	block := string(doc[i+len(head):])
	block = block[:strings.Index(block, "```")]
	var rules []string
	for _, f := range strings.Fields(strings.ReplaceAll(block, "\\\n", " ")) {
		if f != "\\" {
			rules = append(rules, strings.Trim(f, "'"))
		}
	}
	require.Contains(t, rules, "+evalsha")
	require.Contains(t, rules, "~*app:*")
	return rules
}

// names records the names of the commands a client sends.
type names struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (n *names) add(cmd redis.Cmder) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	name := strings.ToLower(cmd.Name())
	if args := cmd.Args(); len(args) > 1 && (name == "script" || name == "client") {
		name += "|" + strings.ToLower(fmt.Sprint(args[1]))
	}
	n.seen[name] = true
}

func (n *names) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var l []string
	for k := range n.seen {
		l = append(l, k)
	}
	sort.Strings(l)
	return l
}

func (n *names) DialHook(next redis.DialHook) redis.DialHook { return next }
func (n *names) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { n.add(cmd); return next(ctx, cmd) }
}
func (n *names) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			n.add(c)
		}
		return next(ctx, cmds)
	}
}

// A Redis user with SECURITY.md's least-privilege rule for the prefix
// "app:" (one key pattern, one channel pattern) runs every primitive of
// Clients made with WithKeyPrefix("app:"), on names without the prefix,
// on a primary with a replica (so replica acknowledgement sends INFO and
// WAIT) and keyspace notifications on (lock events, KeyspaceEventsOn as
// SECURITY.md advises): nothing it sends (in the foreground or the
// background: renewals, pub/sub, replica counts, Shutdown) and no key or
// channel it names is refused. Redis's ACL LOG, which records every
// refusal, stays empty. The test fails when the code starts sending a
// command or naming a key the rule does not cover.
func TestACLLeastPrivilege(t *testing.T) {
	s := redistest.Start(t, redistest.WithArgs("--notify-keyspace-events", "Kgx", "--repl-diskless-sync-delay", "0"))
	replica := redistest.Start(t)
	replica.Do(t, "REPLICAOF", "127.0.0.1", s.Port())
	redistest.Eventually(t, 20*time.Second, "the replica online", func() error {
		if n := connectedReplicas(t, s); n != 1 {
			return fmt.Errorf("%d replicas connected", n)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := &names{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ACL LOG: %v", s.Do(t, "ACL", "LOG"))
		}
	})
	rule := aclRule(t)
	user := s.User(t, rule...)
	newClient := func(opts ...redisync.Option) *redisync.Client {
		rdb := s.Client(t, user)
		rdb.AddHook(rec)
		return clienttest.New(t, rdb, append([]redisync.Option{redisync.WithRecheckInterval(time.Minute),
			redisync.WithWatchdogTimeout(time.Second), redisync.WithKeyPrefix("app:"),
			redisync.WithKeyspaceEvents(redisync.KeyspaceEventsOn)}, opts...)...)
	}
	c1 := newClient(redisync.WithID("worker-1"))
	c2 := newClient()
	name := redistest.Key(t)
	aclRound(t, ctx, c1, c2, name)
	aclEvents(t, ctx, c1, c2, name)
	aclElection(t, ctx, c1, c2, name)
	aclFence(t, ctx, c1, name)
	time.Sleep(time.Second) // a renewal or two of the watchdog (its timeout is 1s)

	// Shutdown releases the holds left, then closes.
	require.NoError(t, rlock.New(c1, name+":shut").Lock(ctx))
	require.NoError(t, rwlock.New(c1, name+":shutrw").RLock(ctx))
	require.NoError(t, c1.Shutdown(ctx))
	require.NoError(t, c2.Close())

	sent := rec.list()
	t.Logf("commands sent: %v", sent)
	log := s.Do(t, "ACL", "LOG") // pub/sub commands included: go-redis's hooks do not see them
	assert.Empty(t, log, "Redis refused commands, keys or channels of the least-privilege user")
	for _, cmd := range []string{"evalsha", "wait", "info", "hmget", "lrange"} {
		assert.Contains(t, sent, cmd, "the round sends %s (a primitive left out?)", cmd)
	}
	for _, cmd := range sent {
		if !handshakeCommand[cmd] {
			assert.Contains(t, rule, "+"+cmd, "the client sent %s, which the rule does not grant", cmd)
		}
	}
}

// handshakeCommand are the commands go-redis sends on a new connection,
// which need no permission (HELLO, AUTH) or whose refusal it ignores and
// SECURITY.md discusses apart (CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS).
var handshakeCommand = map[string]bool{"hello": true, "auth": true, "client|setinfo": true, "client|maint_notifications": true}

// Every command the scripts call by name (redis.call, redis.pcall) is in
// SECURITY.md's rule: Redis checks a script's commands against the user,
// and a command a script calls only on a rare path (a replay, a
// Redisson-written key) would otherwise be found by a user in production.
// The commands a script takes from ARGV are PUBLISH and SPUBLISH.
func TestACLRuleCoversScripts(t *testing.T) {
	rule := aclRule(t)
	files, err := filepath.Glob("../lua/*.lua")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	call := regexp.MustCompile(`redis\.p?call\(\s*'([A-Za-z]+)'`)
	seen := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			seen[strings.ToLower(m[1])] = true
		}
	}
	require.Contains(t, seen, "hset", "the pattern finds the scripts' calls")
	for _, cmd := range []string{"publish", "spublish"} {
		seen[cmd] = true
	}
	for cmd := range seen {
		// the command, or its subcommands (PUBSUB NUMSUB, SHARDNUMSUB)
		granted := slices.ContainsFunc(rule, func(r string) bool { return r == "+"+cmd || strings.HasPrefix(r, "+"+cmd+"|") })
		assert.True(t, granted, "a script calls %s, which SECURITY.md's rule does not grant", cmd)
	}
}

// aclRound runs a smoke round of every primitive, named name plus a
// suffix, on c1 with c2 waiting where a primitive has waiters.
func aclRound(t *testing.T, ctx context.Context, c1, c2 *redisync.Client, name string) {
	waitFor := func(what string, start func() error, release func() error) {
		t.Helper()
		errc := make(chan error, 1)
		go func() { errc <- start() }()
		clienttest.WaitWaiters(t, 1, c2)
		require.NoError(t, release(), what)
		waitDone(t, what, errc)
	}
	owner := redisync.WithOwner(ctx)

	// rlock: Lock (reentrant, fenced), FairLock, SpinLock, each with a waiter.
	l, w := rlock.New(c1, name+":lock", rlock.WithFencing()), rlock.New(c2, name+":lock", rlock.WithFencing())
	require.NoError(t, l.Lock(owner))
	require.NoError(t, l.Lock(owner))
	require.NoError(t, l.Unlock(owner))
	waitFor("lock", func() error { return w.Lock(ctx) }, func() error { return l.Unlock(owner) })
	_, err := w.TTL(ctx)
	require.NoError(t, err)
	_, err = w.IsLocked(ctx)
	require.NoError(t, err)
	_, err = w.IsHeld(ctx)
	require.NoError(t, err)
	_, err = w.HoldCount(ctx)
	require.NoError(t, err)
	_, err = w.Inspect(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))
	_, err = l.ForceUnlock(ctx)
	require.NoError(t, err)

	f, fw := rlock.NewFair(c1, name+":fair"), rlock.NewFair(c2, name+":fair")
	require.NoError(t, f.Lock(ctx))
	waitFor("fair lock", func() error { return fw.Lock(ctx) }, func() error { return f.Unlock(ctx) })
	_, err = f.Inspect(ctx) // with its queue
	require.NoError(t, err)
	ok, err := f.TryLock(ctx, 10*time.Millisecond) // a timed-out wait leaves the queue
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, fw.Unlock(ctx))
	_, err = f.ForceUnlock(ctx)
	require.NoError(t, err)

	// A name with a hash tag: its request keys start "redisync_request:" + name.
	tagged := rlock.New(c1, name+":{tag}")
	require.NoError(t, tagged.Lock(owner))
	require.NoError(t, tagged.Unlock(owner))

	sp := rlock.NewSpin(c1, name+":spin")
	require.NoError(t, sp.Lock(ctx))
	require.NoError(t, sp.Unlock(ctx))

	// rwlock: readers, then a writer waiting for them.
	r1, r2 := rwlock.New(c1, name+":rw"), rwlock.New(c2, name+":rw")
	require.NoError(t, r1.RLock(ctx))
	waitFor("writer", func() error { return r2.Lock(ctx) }, func() error { return r1.RUnlock(ctx) })
	_, err = r1.Inspect(ctx)
	require.NoError(t, err)
	_, err = r1.IsWriteLocked(ctx)
	require.NoError(t, err)
	_, err = r2.WriteHoldCount(ctx)
	require.NoError(t, err)
	require.NoError(t, r2.Unlock(ctx))
	_, err = r1.ForceUnlock(ctx)
	require.NoError(t, err)

	// semaphore and expirable semaphore.
	s1, s2 := semaphore.New(c1, name+":sem"), semaphore.New(c2, name+":sem")
	_, err = s1.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s1.Acquire(ctx, 1))
	waitFor("semaphore", func() error { return s2.Acquire(ctx, 1) }, func() error { return s1.Release(ctx, 1) })
	require.NoError(t, s2.Release(ctx, 1))
	_, err = s1.Inspect(ctx)
	require.NoError(t, err)
	_, err = s1.AvailablePermits(ctx)
	require.NoError(t, err)
	ok, err = s1.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, s1.AddPermits(ctx, 1))
	_, err = s1.DrainPermits(ctx)
	require.NoError(t, err)
	_, err = s1.Delete(ctx)
	require.NoError(t, err)

	e1, e2 := semaphore.NewExpirable(c1, name+":exp"), semaphore.NewExpirable(c2, name+":exp")
	_, err = e1.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	id, err := e1.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	_, err = e1.UpdateLease(ctx, id, 2*time.Minute)
	require.NoError(t, err)
	var id2 string
	waitFor("expirable semaphore", func() (err error) { id2, err = e2.Acquire(ctx, time.Minute); return err }, func() error { return e1.Release(ctx, id) })
	_, err = e2.LeaseTime(ctx, id2)
	require.NoError(t, err)
	require.NoError(t, e2.Release(ctx, id2))
	_, err = e1.Permits(ctx)
	require.NoError(t, err)
	_, err = e1.Inspect(ctx)
	require.NoError(t, err)
	_, err = e1.AcquiredPermits(ctx)
	require.NoError(t, err)
	_, err = e1.Delete(ctx)
	require.NoError(t, err)

	// latch.
	l1, l2 := countdown.New(c1, name+":latch"), countdown.New(c2, name+":latch")
	_, err = l1.TrySetCount(ctx, 1)
	require.NoError(t, err)
	_, err = l1.Count(ctx)
	require.NoError(t, err)
	_, err = l1.Inspect(ctx)
	require.NoError(t, err)
	waitFor("latch", func() error { return l2.Wait(ctx) }, func() error { return l1.CountDown(ctx) })
	_, err = l1.Delete(ctx)
	require.NoError(t, err)

	// multilock and redlock.
	m := multilock.New(rlock.New(c1, name+":m1"), rlock.New(c1, name+":m2"))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	rl := multilock.NewRedLock(rlock.New(c1, name+":r1"), rlock.New(c1, name+":r2"), rlock.New(c1, name+":r3"))
	require.NoError(t, rl.Lock(ctx))
	require.NoError(t, rl.Unlock(ctx))

	// rate limiters: Redisson's layout, per client, and GCRA.
	for _, typ := range []ratelimit.RateType{ratelimit.Overall, ratelimit.PerClient} {
		lim := ratelimit.New(c1, fmt.Sprintf("%s:rate%d", name, typ))
		_, err = lim.TrySetRate(ctx, typ, 2, time.Minute)
		require.NoError(t, err)
		ok, err := lim.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		assert.True(t, ok)
		require.NoError(t, lim.Release(ctx, 1))
		_, err = lim.AvailablePermits(ctx)
		require.NoError(t, err)
		_, err = lim.Config(ctx)
		require.NoError(t, err)
		_, err = lim.Inspect(ctx)
		require.NoError(t, err)
		_, err = lim.Delete(ctx)
		require.NoError(t, err)
	}
	g := ratelimit.NewGCRA(c1, name+":gcra", ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 2})
	_, err = g.AllowN(ctx, 1)
	require.NoError(t, err)
	r, err := g.Reserve(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, r.Cancel(ctx))
	_, err = g.Inspect(ctx)
	require.NoError(t, err)
	require.NoError(t, g.Reset(ctx))

	// A long name: its request keys hold its first bytes, the prefix among them.
	long := name + ":long:" + strings.Repeat("n", 1000)
	ll := rlock.New(c1, long)
	require.NoError(t, ll.Lock(ctx))
	require.NoError(t, ll.Unlock(ctx))
	require.NoError(t, ll.Lock(owner))
	require.NoError(t, ll.Unlock(owner))
	ls := semaphore.New(c1, long)
	_, err = ls.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, ls.Acquire(ctx, 1))
	require.NoError(t, ls.Release(ctx, 1))
	_, err = ls.Delete(ctx)
	require.NoError(t, err)
}

// aclEvents runs the lock events (keyspace notifications): the Events of
// a lock and a read-write lock, and a watched hold that a ForceUnlock of
// the other client ends within a round trip.
func aclEvents(t *testing.T, ctx context.Context, c1, c2 *redisync.Client, name string) {
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := rlock.New(c1, name+":ev")
	events, err := l.Events(ectx)
	require.NoError(t, err)
	rw := rwlock.New(c1, name+":evrw")
	rwEvents, err := rw.Events(ectx)
	require.NoError(t, err)

	require.NoError(t, l.Lock(ctx))
	hold := l.Hold(ctx)
	_ = hold.Done() // watched: subscribes to the key's notifications
	_, err = rlock.New(c2, name+":ev").ForceUnlock(ctx)
	require.NoError(t, err)
	select {
	case <-hold.Done():
		require.ErrorIs(t, hold.Err(), redisync.ErrLockLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the hold did not end after a ForceUnlock")
	}
	require.NoError(t, rw.Lock(ctx))
	require.NoError(t, rw.Unlock(ctx))
	for what, ch := range map[string]<-chan redisync.KeyEvent{"lock": events, "rwlock": rwEvents} {
		select {
		case ev := <-ch:
			assert.Equal(t, redisync.KeyDeleted, ev.Kind, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no key event", what)
		}
	}
}

// aclElection runs an election: a leader proclaims, a follower observes
// and reads it, a second candidate waits and leads after the first
// resigns.
func aclElection(t *testing.T, ctx context.Context, c1, c2 *redisync.Client, name string) {
	e1, e2 := election.New(c1, name+":elect"), election.New(c2, name+":elect")
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	observed := e1.Observe(octx)
	la, err := e1.Campaign(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, la.Proclaim(ctx, "a2"))
	lead, err := e2.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a2", lead.Value)
	won := make(chan error, 1)
	var lb *election.Leadership
	go func() {
		var err error
		lb, err = e2.Campaign(ctx, "b")
		won <- err
	}()
	clienttest.WaitWaiters(t, 1, c2)
	require.NoError(t, la.Resign(ctx))
	waitDone(t, "election", won)
	for _, want := range []string{"a", "a2", "b"} {
		select {
		case got := <-observed:
			assert.Equal(t, want, got.Value)
		case <-time.After(10 * time.Second):
			t.Fatalf("observer: no leader %q", want)
		}
	}
	require.NoError(t, lb.Resign(ctx))
}

// aclFence writes a fenced value with a lock's token and reads it back.
func aclFence(t *testing.T, ctx context.Context, c *redisync.Client, name string) {
	l := rlock.New(c, name+":fenced", rlock.WithFencing())
	require.NoError(t, l.Lock(ctx))
	v := fence.New(c, name+":value")
	ok, err := v.Set(ctx, l.FencingToken(), "x")
	require.NoError(t, err)
	assert.True(t, ok)
	got, token, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", got)
	assert.Equal(t, l.FencingToken(), token)
	require.NoError(t, l.Unlock(ctx))
}

// A wait whose subscription the ACL refuses fails at once with
// ErrNoPermission and Redis's text, not after the 10 s confirmation
// timeout as "not confirmed" (issue 34); a release whose PUBLISH the ACL
// refuses changes nothing and says why: the lock stays held, the permits
// stay taken, and the error is ErrNoPermission.
func TestACLRefusals(t *testing.T) {
	s := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := clienttest.New(t, s.Client(t))
	name := redistest.Key(t)

	t.Run("subscribe", func(t *testing.T) {
		c := clienttest.New(t, s.Client(t, s.User(t, "~*", "&*", "+@all", "-subscribe", "-ssubscribe")))
		l := rlock.New(admin, name+":sub")
		require.NoError(t, l.Lock(ctx))
		defer func() { require.NoError(t, l.Unlock(ctx)) }()
		start := time.Now()
		err := rlock.New(c, name+":sub").Lock(ctx)
		t.Logf("Lock with its subscription refused returned after %v: %v", time.Since(start), err)
		require.ErrorIs(t, err, redisync.ErrNoPermission)
		assert.Contains(t, err.Error(), "NOPERM")
		ok, err := rlock.New(c, name+":sub").TryLock(ctx, 20*time.Second)
		require.ErrorIs(t, err, redisync.ErrNoPermission)
		assert.False(t, ok)
	})

	t.Run("publish", func(t *testing.T) {
		c := clienttest.New(t, s.Client(t, s.User(t, "~*", "&*", "+@all", "-publish", "-spublish")))
		owner := redisync.WithOwner(ctx)
		for i, l := range []redisync.Locker{rlock.New(c, name+":lock"), rlock.New(c, name+":fenced", rlock.WithFencing()),
			rlock.New(c, name+":reentrant"), rwlock.New(c, name+":w").WriteLocker(), rwlock.New(c, name+":r").ReadLocker()} {
			lctx := ctx
			if i == 2 {
				lctx = owner // a hold with a record
			}
			require.NoError(t, l.Lock(lctx))
			err := l.Unlock(lctx)
			require.ErrorIs(t, err, redisync.ErrNoPermission, "%T", l)
			assert.Contains(t, err.Error(), "NOPERM")
		}
		for _, n := range []string{":lock", ":fenced", ":reentrant", ":w", ":r"} {
			held, err := rlock.New(admin, name+n).IsLocked(ctx)
			if n == ":w" || n == ":r" {
				held, err = rwlock.New(admin, name+n).IsWriteLocked(ctx)
				if n == ":r" {
					held, err = rwlock.New(admin, name+n).IsReadLocked(ctx)
				}
			}
			require.NoError(t, err)
			assert.True(t, held, "%s: the refused release changed nothing", n)
		}
		// A fair lock's acquisition may publish (it wakes the next waiter
		// when it drops dead ones): refused before it changes anything.
		require.ErrorIs(t, rlock.NewFair(c, name+":fair").Lock(ctx), redisync.ErrNoPermission)
		held, err := rlock.New(admin, name+":fair").IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, held)

		sem := semaphore.New(c, name+":sem")
		_, err = semaphore.New(admin, name+":sem").TrySetPermits(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, sem.Acquire(ctx, 1))
		require.ErrorIs(t, sem.Release(ctx, 1), redisync.ErrNoPermission)
		n, err := sem.AvailablePermits(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "the refused release changed nothing")

		latch := countdown.New(admin, name+":latch")
		_, err = latch.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.ErrorIs(t, countdown.New(c, name+":latch").CountDown(ctx), redisync.ErrNoPermission)
		cnt, err := latch.Count(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, cnt, "the refused count-down changed nothing")
	})
}
