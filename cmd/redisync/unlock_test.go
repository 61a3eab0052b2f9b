package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Holders in these tests have a long lease and waiters a long re-check
// interval: a waiter that returns within wakeBound was woken by the
// release unlock -force published, not by a timer.
const (
	longLease = time.Minute
	wakeBound = 10 * time.Second
)

// blockedLock starts a Go client waiting in Lock for the lock name and
// returns a channel that receives Lock's result.
func blockedLock(t *testing.T, lock redisync.Locker, channel string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- lock.Lock(ctx) }()
	waitSubscribers(t, channel, 1)
	return done
}

// waitWoken checks that the blocked Lock returned without error soon after
// the force unlock; the lock is unlocked at the end of the test.
func waitWoken(t *testing.T, lock redisync.Locker, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the waiter's Lock failed: %v", err)
		}
		t.Cleanup(func() { _ = lock.Unlock(context.Background()) })
	case <-time.After(wakeBound):
		t.Fatalf("the waiter was not woken within %v of the force unlock", wakeBound)
	}
}

func waiterClient(t *testing.T) *redisync.Client {
	return clienttest.Shared(t, redisync.WithRecheckInterval(longLease))
}

// TestUnlockGoLock frees a lock a Go client holds twice; the Go client
// waiting for it gets it at once, and the old holder's Unlock finds it
// gone.
func TestUnlockGoLock(t *testing.T) {
	t.Parallel()
	ctx := redisync.WithOwner(context.Background()) // it holds twice
	name := redistest.Key(t, "lock")
	holder := clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease))
	l := rlock.New(holder, name)
	for range 2 {
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waiter := rlock.New(waiterClient(t), name)
	done := blockedLock(t, waiter, keys.LockChannel(name))

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, s := range []string{`force-unlocked lock "` + name + `"`, "client " + holder.ID() + " owner token ", "×2", "to 1 waiting client"} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("output does not contain %q", s)
		}
	}
	waitWoken(t, waiter, done)
	err := l.Unlock(ctx)
	if !errors.Is(err, redisync.ErrNotHeld) {
		t.Errorf("the old holder's Unlock: %v, want ErrNotHeld", err)
	}
	// Regression: the message read `rlock "x": side, owner …`.
	if want := `rlock "` + name + `": owner ` + holder.ID() + ":"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("the old holder's Unlock: %q, want it to start with %q", err, want)
	}
	select {
	case <-l.Done():
	default:
		t.Error("the old holder's hold did not end")
	}
}

// TestUnlockJavaLock frees a lock held the way a Redisson thread holds it;
// a Go waiter gets it.
func TestUnlockJavaLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "lock")
	javaID := uuid.NewString()
	rdb(t).HSet(ctx, name, javaID+":1", 1)
	rdb(t).PExpire(ctx, name, longLease)
	wc := waiterClient(t)
	waiter := rlock.New(wc, name)
	done := blockedLock(t, waiter, keys.LockChannel(name))

	res := runCmd(t, nil, "unlock", "-yes", "-force", "-redis", testURL(t), name)
	if res.code != 0 || !strings.Contains(res.stdout, "client "+javaID+" owner token 1 ×1") {
		t.Fatalf("exit %d, stdout %q", res.code, res.stdout)
	}
	waitWoken(t, waiter, done)
	fields, err := rdb(t).HKeys(ctx, name).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 1 || !strings.HasPrefix(fields[0], wc.ID()+":") {
		t.Errorf("lock fields %q after the waiter took it, want the waiter's owner only", fields)
	}
}

// TestUnlockRWLock frees a read-locked rwlock (a Go reader and a Java
// reader with its timeout key); a Go writer waiting for it gets in, and
// the readers' timeout keys are gone.
func TestUnlockRWLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	reader := rwlock.New(clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease)), name)
	if err := reader.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	javaOwner := uuid.NewString() + ":3"
	javaTimeout := keys.RWTimeoutPrefix(name, javaOwner) + ":1"
	rdb(t).HSet(ctx, name, javaOwner, 1)
	rdb(t).Set(ctx, javaTimeout, 1, longLease)
	waiter := rwlock.New(waiterClient(t), name)
	done := blockedLock(t, waiter, keys.RWChannel(name))

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	if res.code != 0 || !strings.Contains(res.stdout, `force-unlocked read-write lock "`+name+`"`) || !strings.Contains(res.stdout, "(read) ×1") {
		t.Fatalf("exit %d, stdout %q", res.code, res.stdout)
	}
	waitWoken(t, waiter, done)
	if n := rdb(t).Exists(ctx, javaTimeout).Val(); n != 0 {
		t.Error("the Java reader's timeout key survived the force unlock")
	}
	if mode := rdb(t).HGet(ctx, name, "mode").Val(); mode != "write" {
		t.Errorf("mode %q after the writer got in, want write", mode)
	}
	err := reader.RUnlock(ctx)
	if !errors.Is(err, redisync.ErrNotHeld) {
		t.Errorf("the old reader's RUnlock: %v, want ErrNotHeld", err)
	}
	if want := `rwlock "` + name + `": read side, owner `; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("the old reader's RUnlock: %q, want it to start with %q", err, want)
	}
}

// TestUnlockRefuses: no -yes on a non-terminal stdin, something that is
// not a lock, a free lock. Nothing changes.
func TestUnlockRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name, sem, missing := redistest.Key(t, "lock"), redistest.Key(t, "sem"), redistest.Key(t, "missing")
	rdb(t).HSet(ctx, name, "someone:1", 1)
	rdb(t).Set(ctx, sem, 3, 0)
	xsem := redistest.Key(t, "xsem")
	if _, err := semaphore.NewExpirable(clienttest.Shared(t), xsem).TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := semaphore.NewExpirable(clienttest.Shared(t), xsem).Acquire(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		// Regression (issue 40): exit 2 ("bad command line") where the
		// command line was right and unlock failed.
		{[]string{"-force", name}, 1, "stdin is not a terminal, so unlock cannot ask for confirmation: pass -yes"},
		{[]string{"-force", "-yes", sem}, 1, "is a latch or semaphore: unlock frees only locks and read-write locks"},
		// Regression: the message said "is a expirable semaphore".
		{[]string{"-force", "-yes", xsem}, 1, `"` + xsem + `" is an expirable semaphore: unlock frees only`},
		{[]string{"-force", "-yes", missing}, 1, "is not locked"},
		{[]string{"-force", "-yes"}, 2, "want exactly one NAME"},
	} {
		res := runCmd(t, nil, append([]string{"unlock", "-redis", testURL(t)}, tc.args...)...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.err) || res.stdout != "" {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, res.code, res.stderr, tc.code, tc.err)
		}
	}
	if rdb(t).Exists(ctx, name).Val() != 1 || rdb(t).Get(ctx, sem).Val() != "3" {
		t.Error("a refused unlock changed something")
	}
}

// TestUnlockConfirm answers the question on a (simulated) terminal: any
// answer but yes declines, exits 1 and says so (the issue reported exit 0
// for "n"). It replaces the terminal check, so it does not run in
// parallel.
func TestUnlockConfirm(t *testing.T) {
	ctx := context.Background()
	defer func(old func(io.Reader) bool) { isTerminal = old }(isTerminal)
	isTerminal = func(io.Reader) bool { return true }
	name := redistest.Key(t, "lock")
	rdb(t).HSet(ctx, name, "someone:9", 2)

	for answer, msg := range map[string]string{
		"n\n":     "redisync: unlock: not unlocked: confirmation declined\n",
		"no\n":    "redisync: unlock: not unlocked: confirmation declined\n",
		"\n":      "redisync: unlock: not unlocked: confirmation declined\n",
		"maybe\n": "redisync: unlock: not unlocked: confirmation declined\n",
		"":        "redisync: unlock: not unlocked: no answer on stdin (pass -yes to skip the question)\n",
	} {
		res := runCmd(t, strings.NewReader(answer), "unlock", "-force", "-redis", testURL(t), name)
		if res.code != exitError || rdb(t).Exists(ctx, name).Val() != 1 {
			t.Errorf("answer %q: exit %d, or the lock is gone; want %d and the lock kept", answer, res.code, exitError)
		}
		if !strings.HasSuffix(res.stderr, msg) || res.stdout != "" {
			t.Errorf("answer %q: stderr does not end with %q, or stdout is not empty", answer, msg)
		}
		if !strings.Contains(res.stderr, "client someone") || !strings.Contains(res.stderr, `Force-unlock lock "`+name+`", held by 1 owner? [y/N]`) {
			t.Errorf("answer %q: the question does not show the lock", answer)
		}
	}
	res := runCmd(t, strings.NewReader("Y\n"), "unlock", "-force", "-redis", testURL(t), name)
	if res.code != 0 || rdb(t).Exists(ctx, name).Val() != 0 {
		t.Errorf("answer Y: exit %d, or the lock is still there", res.code)
	}
}

// TestUnlockStdinDevNull: with stdin redirected from /dev/null (a
// character device, like a terminal) unlock asked its question and read
// end-of-file as the answer. /dev/null, a pipe and a file are not
// terminals: without -yes, unlock refuses at once and changes nothing.
func TestUnlockStdinDevNull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	name := redistest.Key(t, "lock")
	rdb(t).HSet(ctx, name, "someone:1", 1)
	t.Cleanup(func() { rdb(t).Del(context.Background(), name) })
	for what, stdin := range map[string]*os.File{"/dev/null": devNull, "a pipe": r, "a file": file} {
		if isTerminal(stdin) {
			t.Errorf("%s is taken for a terminal", what)
		}
		res := runCmd(t, stdin, "unlock", "-force", "-redis", testURL(t), name)
		if res.code != exitError || !strings.Contains(res.stderr, "stdin is not a terminal, so unlock cannot ask for confirmation: pass -yes") {
			t.Errorf("stdin %s: exit %d, stderr %q; want %d and a refusal", what, res.code, res.stderr, exitError)
		}
	}
	if rdb(t).Exists(ctx, name).Val() != 1 {
		t.Error("the lock is gone")
	}
}

// TestUnlockPrefix: -prefix names the lock as the services' Clients made
// with redisync.WithKeyPrefix do; inspect finds it the same way, and a
// prefix with a brace is a usage error.
func TestUnlockPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "lock")
	holder := clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease), redisync.WithKeyPrefix("svc:"))
	l := rlock.New(holder, name)
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, nil, "inspect", "-prefix", "svc:", "-redis", testURL(t), name)
	if res.code != 0 || !strings.Contains(res.stdout, holder.ID()) {
		t.Fatalf("inspect -prefix: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	if res = runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name); res.code != 1 {
		t.Fatalf("unlock without -prefix: exit %d, want 1 (no such key): %s", res.code, res.stderr)
	}
	res = runCmd(t, nil, "unlock", "-force", "-yes", "-prefix", "svc:", "-redis", testURL(t), name)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	other := rlock.New(clienttest.Shared(t, redisync.WithKeyPrefix("svc:")), name)
	if ok, err := other.TryLock(ctx, 0); err != nil || !ok {
		t.Errorf("after unlock -prefix, another Client with the prefix: TryLock %v, %v; want the lock", ok, err)
	} else {
		_ = other.Unlock(ctx)
	}
	if res = runCmd(t, nil, "unlock", "-force", "-yes", "-prefix", "a{", "-redis", testURL(t), name); res.code != 2 {
		t.Errorf("-prefix with a brace: exit %d, want 2: %s", res.code, res.stderr)
	}
}
