package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestInspectGoLock: a Go holder that re-entered a fenced lock (the
// re-entry keeps the hold's token: the counter stays at the hold's token),
// and a Go client waiting for it.
func TestInspectGoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "lock")
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(20*time.Second))
	ctx = redisync.WithOwnerToken(ctx, 77)
	l := rlock.New(c, name, rlock.WithFencing())
	for range 2 {
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = l.ForceUnlock(context.Background()) })

	r := inspectJSON(t, name)
	if r.Type != kindLock || r.Guessed || !r.Exists || r.Channel != keys.LockChannel(name) || r.Waiters != 0 {
		t.Errorf("report %+v: want an existing lock, not guessed, no waiters", r)
	}
	if r.TTLMillis == nil || *r.TTLMillis <= 0 || *r.TTLMillis > 20000 {
		t.Errorf("ttl_ms %v, want (0, 20000]", r.TTLMillis)
	}
	if r.FenceToken == nil || *r.FenceToken != l.FencingToken() {
		t.Errorf("fence_token %v, want the hold's %d", r.FenceToken, l.FencingToken())
	}
	want := Holder{Owner: c.ID() + ":77", ClientID: c.ID(), OwnerToken: "77", Count: 2}
	if len(r.Holders) != 1 || !equalHolder(r.Holders[0], want) {
		t.Errorf("holders %+v, want [%+v]", r.Holders, want)
	}

	// A waiter in another client shows up in the lock's queue of waiting
	// Clients, and, the holder having taken the lock while nobody waited
	// (no holder recorded), as a subscriber of the lock's channel too: one
	// waiter.
	wc := clienttest.Shared(t)
	waiter := rlock.New(wc, name)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(wctx) }()
	waitSubscribers(t, keys.LockChannel(name), 1)
	if r := inspectJSON(t, name); r.Waiters != 1 || len(r.WaitingClients) != 1 || r.WaitingClients[0].ClientID != wc.ID() ||
		!r.WaitingClients[0].Listening || r.WaitingClients[0].AliveMillis <= 0 {
		t.Errorf("waiters %d, queued %+v: want 1, the waiting client listening", r.Waiters, r.WaitingClients)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	for _, s := range []string{
		"lock (a hash of owner fields)",
		"held by 1 owner, lease ",
		"client " + c.ID(), "owner token 77", "count 2",
		"last fencing token issued 1",
		"1 client: 1 queued (woken one per release, first first: client " + wc.ID(),
	} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("text output does not contain %q", s)
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled waiter acquired the lock")
	}
}

func equalHolder(a, b Holder) bool {
	return a.Owner == b.Owner && a.ClientID == b.ClientID && a.OwnerToken == b.OwnerToken && a.Side == b.Side && a.Count == b.Count
}

// TestInspectJavaLock: a lock written the way Redisson writes it, by a
// Java thread: field "<uuid>:<thread id>" = 1, PEXPIRE 30 s.
func TestInspectJavaLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "lock")
	javaID := uuid.NewString()
	rdb(t).HSet(ctx, name, javaID+":57", 1)
	rdb(t).PExpire(ctx, name, 30*time.Second)

	r := inspectJSON(t, name)
	want := Holder{Owner: javaID + ":57", ClientID: javaID, OwnerToken: "57", Count: 1}
	if r.Type != kindLock || len(r.Holders) != 1 || !equalHolder(r.Holders[0], want) {
		t.Errorf("report %+v, want a lock held by %+v", r, want)
	}
	if r.TTLMillis == nil || *r.TTLMillis < 25000 || *r.TTLMillis > 30000 {
		t.Errorf("ttl_ms %v, want about 30000", r.TTLMillis)
	}
	if r.FenceToken != nil {
		t.Errorf("fence_token %d without a fencing counter", *r.FenceToken)
	}
}

// TestInspectRWLock: two Go readers (one with two holds) and an emulated
// Java reader; TestInspectRWLockWriter has a writer.
func TestInspectRWLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "rw")
	c1, c2 := clienttest.Shared(t), clienttest.Shared(t)
	r1, r2 := rwlock.New(c1, name), rwlock.New(c2, name)
	ctx1 := redisync.WithOwnerToken(ctx, 5)
	for _, step := range []func() error{
		func() error { return r1.RLock(ctx1) },
		func() error { return r1.RLock(ctx1) },
		func() error { return r2.RLock(ctx) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// A Java reader: its field and its hold's timeout key.
	javaOwner := uuid.NewString() + ":12"
	rdb(t).HSet(ctx, name, javaOwner, 1)
	rdb(t).Set(ctx, keys.RWTimeoutPrefix(name, javaOwner)+":1", 1, 25*time.Second)
	t.Cleanup(func() { _, _ = rwlock.New(clienttest.Shared(t), name).ForceUnlock(context.Background()) })

	r := inspectJSON(t, name)
	if r.Type != kindRWLock || r.Mode != "read" || r.Channel != keys.RWChannel(name) {
		t.Fatalf("report %+v: want a read-locked rwlock", r)
	}
	counts := map[string]int64{}
	for _, h := range r.Holders {
		if h.Side != "read" {
			t.Errorf("holder %+v in read mode", h)
		}
		counts[h.Owner] = h.Count
		if len(h.HoldTTLsMillis) != int(h.Count) {
			t.Errorf("holder %s: %d hold leases for %d holds", h.Owner, len(h.HoldTTLsMillis), h.Count)
		}
		for _, ms := range h.HoldTTLsMillis {
			if ms <= 0 || ms > 30000 {
				t.Errorf("holder %s: hold lease %d ms", h.Owner, ms)
			}
		}
	}
	if counts[c1.ID()+":5"] != 2 || counts[javaOwner] != 1 || len(counts) != 3 {
		t.Errorf("holders %+v: want %s×2, a reader of %s, %s×1", r.Holders, c1.ID(), c2.ID(), javaOwner)
	}
}

// TestInspectRWLockWriter: write mode, the writer holds the write side and
// one read hold.
func TestInspectRWLockWriter(t *testing.T) {
	t.Parallel()
	wname := redistest.Key(t, "rw")
	c := clienttest.Shared(t)
	w := rwlock.New(c, wname)
	wctx := redisync.WithOwner(context.Background()) // a downgrade needs a context owner
	if err := w.Lock(wctx); err != nil {
		t.Fatal(err)
	}
	if err := w.RLock(wctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = w.ForceUnlock(context.Background()) })
	r := inspectJSON(t, wname)
	if r.Mode != "write" || len(r.Holders) != 2 || r.Holders[0].Side != "write" || r.Holders[1].Side != "read" ||
		r.Holders[0].Owner != r.Holders[1].Owner || r.Holders[0].ClientID != c.ID() {
		t.Errorf("report %+v: want write mode, writer first, then its read hold", r)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), wname)
	for _, s := range []string{"write-locked, held by 1 owner", "writer:", "reader:", "hold leases "} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("text output does not contain %q", s)
		}
	}
}

// TestInspectSemaphore: a semaphore and a latch are both a string;
// waiters tell them apart (here a semaphore with a waiter; TestInspectLatch
// has a latch), and -type forces the type (TestInspectUndecidedString).
func TestInspectSemaphore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// A semaphore with no permits left and a waiter.
	sem := redistest.Key(t, "sem")
	s := semaphore.New(clienttest.Shared(t), sem)
	if _, err := s.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	semDone := make(chan error, 1)
	go func() { semDone <- semaphore.New(clienttest.Shared(t), sem).Acquire(wctx, 1) }()
	waitSubscribers(t, keys.SemaphoreChannel(sem), 1)
	r := inspectJSON(t, sem)
	if r.Type != kindSemaphore || !r.Guessed || r.Permits == nil || *r.Permits != 0 || r.Waiters != 1 {
		t.Errorf("report %+v: want a guessed semaphore with 0 permits and 1 waiter", r)
	}
	if !strings.Contains(r.Reason, "1 client waits on the semaphore channel") {
		t.Errorf("reason %q does not say why", r.Reason)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), sem)
	if !strings.Contains(res.stdout, "semaphore (guessed: ") || !strings.Contains(res.stdout, "0 available") {
		t.Errorf("text output does not say it guessed a semaphore with 0 permits")
	}

	cancel()
	if err := <-semDone; err == nil {
		t.Error("a cancelled waiter returned nil")
	}
}

// TestInspectLatch: a latch with two waiters, told from a semaphore by
// its waiters.
func TestInspectLatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	latch := redistest.Key(t, "latch")
	l := countdown.New(clienttest.Shared(t), latch)
	if _, err := l.TrySetCount(ctx, 3); err != nil {
		t.Fatal(err)
	}
	latchDone := make(chan error, 2)
	for range 2 {
		go func() { latchDone <- countdown.New(clienttest.Shared(t), latch).Wait(wctx) }()
	}
	waitSubscribers(t, keys.LatchChannel(latch), 2)
	r := inspectJSON(t, latch)
	if r.Type != kindLatch || !r.Guessed || r.Count == nil || *r.Count != 3 || r.Waiters != 2 || r.Channel != keys.LatchChannel(latch) {
		t.Errorf("report %+v: want a guessed latch with count 3 and 2 waiters", r)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), latch)
	if !strings.Contains(res.stdout, "latch (guessed: ") || !strings.Contains(res.stdout, "3 (closed)") {
		t.Errorf("text output does not say it guessed a closed latch")
	}

	cancel()
	for range 2 {
		if err := <-latchDone; err == nil {
			t.Error("a cancelled waiter returned nil")
		}
	}
}

// TestInspectUndecidedString: without waiters the layout cannot tell a
// semaphore from a latch: "latch or semaphore", with the value as both;
// -type latch settles it. A negative value is a semaphore's. Before, a
// latch with no waiters (count 5) was shown as a semaphore with 5
// permits available, with a long note that it was a guess.
func TestInspectUndecidedString(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := redistest.Key(t, "plain")
	rdb(t).Set(ctx, plain, 4, 0)
	if r := inspectJSON(t, plain); r.Type != kindCounter || r.Guessed || *r.Permits != 4 || *r.Count != 4 || r.Channel != "" {
		t.Errorf("report %+v: want a latch or semaphore of 4, not guessed", r)
	}
	latch := redistest.Key(t, "latch")
	if _, err := countdown.New(clienttest.Shared(t), latch).TrySetCount(ctx, 5); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), latch)
	typeLine := "type:     latch or semaphore (stored alike, and no waiters tell which; -type latch, semaphore or expirable_semaphore says which)\n"
	if res.code != 0 || !strings.Contains(res.stdout, typeLine) || !strings.Contains(res.stdout, "value:    5: a latch's count or a semaphore's available permits\n") ||
		strings.Contains(res.stdout, "permits:") || strings.Contains(res.stdout, "guessed") {
		t.Errorf("text: exit %d, stdout:\n%s\nwant a latch or semaphore of 5", res.code, res.stdout)
	}
	if r := inspectJSON(t, plain, "-type", "latch"); r.Type != kindLatch || r.Guessed || *r.Count != 4 {
		t.Errorf("-type latch: report %+v: want a latch with count 4, not guessed", r)
	}
	// Only a semaphore goes below zero.
	neg := redistest.Key(t, "neg")
	rdb(t).Set(ctx, neg, -2, 0)
	if r := inspectJSON(t, neg); r.Type != kindSemaphore || r.Guessed || *r.Permits != -2 {
		t.Errorf("report %+v: want a semaphore with -2 permits, not guessed", r)
	}
}

// Regression (issue 40): an expirable semaphore with no permits out was
// reported as a counted semaphore, guessed, without a word of the
// expirable one. Its layout is a counted semaphore's (no permit zset), so
// the report says it may be either, and -type expirable_semaphore shows it
// as one.
func TestInspectExpirableNoPermitsOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "xsem")
	s := semaphore.NewExpirable(clienttest.Shared(t), name)
	if _, err := s.TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	id, err := s.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	r := inspectJSON(t, name)
	if r.Type != kindCounter || r.Permits == nil || *r.Permits != 2 || len(r.Acquired) != 0 ||
		!strings.Contains(r.Reason, "-type latch, semaphore or expirable_semaphore") {
		t.Errorf("report %+v: want a latch or semaphore of 2 whose reason names -type expirable_semaphore", r)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	if res.code != 0 || !strings.Contains(res.stdout, "expirable_semaphore") {
		t.Errorf("text: exit %d, stdout %q: want the expirable semaphore named", res.code, res.stdout)
	}
	if r := inspectJSON(t, name, "-type", "expirable_semaphore"); r.Type != kindExpirable || r.Guessed || *r.Permits != 2 {
		t.Errorf("-type expirable_semaphore: report %+v: want an expirable semaphore with 2 permits", r)
	}
}

// TestInspectExpirableSemaphore: permits with a lease and without, listed
// by id.
func TestInspectExpirableSemaphore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "xsem")
	s := semaphore.NewExpirable(clienttest.Shared(t), name)
	if _, err := s.TrySetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	leased, err := s.Acquire(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	forever, err := s.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := inspectJSON(t, name)
	if r.Type != kindExpirable || r.Guessed || r.Permits == nil || *r.Permits != 1 || len(r.Acquired) != 2 {
		t.Fatalf("report %+v: want an expirable semaphore, 1 available, 2 acquired", r)
	}
	byID := map[string]Permit{}
	for _, p := range r.Acquired {
		byID[p.ID] = p
	}
	if p, ok := byID[leased]; !ok || p.ExpiresAt == nil || p.TTLMillis <= 15000 || p.TTLMillis > 20000 {
		t.Errorf("leased permit %s: %+v, want about 20 s left", leased, p)
	}
	if p, ok := byID[forever]; !ok || p.ExpiresAt != nil || p.TTLMillis != -1 {
		t.Errorf("permit %s without lease: %+v, want ttl -1", forever, p)
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	for _, s := range []string{"expirable semaphore (a string with a permit zset", "1 available, 2 acquired", leased + "  expires in ", forever + "  never expires"} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("text output does not contain %q", s)
		}
	}
}

// TestInspectNotAPrimitive: names that hold nothing, or something else.
func TestInspectNotAPrimitive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list, text := redistest.Key(t, "list"), redistest.Key(t, "text")
	rdb(t).RPush(ctx, list, "a")
	rdb(t).Set(ctx, text, "hello", 0)
	hash, number := redistest.Key(t, "hash"), redistest.Key(t, "number")
	rdb(t).HSet(ctx, hash, "owner:1", 1)
	rdb(t).Set(ctx, number, 5, 0)
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{list}, 1, "is a Redis list: not a redisync/Redisson primitive"},
		{[]string{text}, 1, `holding "hello": not a redisync/Redisson primitive`},
		{[]string{"-type", "rwlock", hash}, 1, "a lock, not a read-write lock"},
		{[]string{"-type", "semaphore", hash}, 1, "a lock, not a semaphore"},
		{[]string{"-type", "expirable_semaphore", hash}, 1, "a lock, not an expirable semaphore"},
		{[]string{"-type", "lock", number}, 1, "a semaphore or latch, not a lock"},
	} {
		res := runCmd(t, nil, append([]string{"inspect", "-redis", testURL(t)}, tc.args...)...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.err) || !strings.HasPrefix(res.stderr, "redisync: inspect: ") {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, res.code, res.stderr, tc.code, tc.err)
		}
	}
	// A fenced lock that is free: only its counter remains.
	fenced := redistest.Key(t, "fenced")
	l := rlock.New(clienttest.Shared(t), fenced, rlock.WithFencing())
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb(t).Del(context.Background(), keys.FenceCounter(fenced)) })
	r := inspectJSON(t, fenced)
	if r.Type != kindLock || r.Exists || r.FenceToken == nil || *r.FenceToken != l.FencingToken() || len(r.Holders) != 0 {
		t.Errorf("report %+v: want a free lock with fence token %d", r, l.FencingToken())
	}
	res := runCmd(t, nil, "inspect", "-redis", testURL(t), fenced)
	if !strings.Contains(res.stdout, "state:    free") {
		t.Errorf("a free lock is not shown as free")
	}
}

// TestInspectMissingJSON: inspect -json on a name under which nothing is
// stored printed nothing on stdout. It prints an object saying so.
// Regression (issue 34): it also exited 1, as if inspect had failed;
// nothing stored is an answer (a free lock leaves no key), so it exits 0,
// with and without -json, and the text says "nothing stored".
func TestInspectMissingJSON(t *testing.T) {
	t.Parallel()
	missing := redistest.Key(t, "nosuchthing")
	text := runCmd(t, nil, "inspect", "-redis", testURL(t), missing)
	if text.code != exitOK || text.stderr != "" || !strings.Contains(text.stdout, "type:  nothing stored (no key,") {
		t.Errorf("text: exit %d, stdout %q, stderr %q; want 0 and nothing stored", text.code, text.stdout, text.stderr)
	}
	res := runCmd(t, nil, "inspect", "-json", "-redis", testURL(t), missing)
	if res.code != exitOK || res.stderr != "" {
		t.Errorf("exit %d, stderr %q; want %d and nothing", res.code, res.stderr, exitOK)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &raw); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, res.stdout)
	}
	for key, want := range map[string]any{"name": missing, "type": "none", "exists": false, "waiters": 0.0, "guessed": false} {
		if got, ok := raw[key]; !ok || got != want {
			t.Errorf("%q: %v (present %v), want %v", key, got, ok, want)
		}
	}
	if _, ok := raw["channel"]; ok {
		t.Errorf("a report of nothing names a channel: %v", raw["channel"])
	}
}

func TestWithArticle(t *testing.T) {
	t.Parallel()
	for phrase, want := range map[string]string{
		"lock":                "a lock",
		"read-write lock":     "a read-write lock",
		"semaphore":           "a semaphore",
		"expirable semaphore": "an expirable semaphore",
		"latch":               "a latch",
		"owner":               "an owner",
		"Update":              "an Update",
	} {
		if got := withArticle(phrase); got != want {
			t.Errorf("withArticle(%q) = %q, want %q", phrase, got, want)
		}
	}
	for k, want := range map[kind]string{
		kindLock:      "a lock",
		kindRWLock:    "a read-write lock",
		kindSemaphore: "a semaphore",
		kindExpirable: "an expirable semaphore",
		kindLatch:     "a latch",
	} {
		if got := k.withArticle(); got != want {
			t.Errorf("kind %s: %q, want %q", k, got, want)
		}
	}
}

func TestNewHolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ owner, id, token string }{
		{"3f0c-uuid:12", "3f0c-uuid", "12"},
		{"id:with:colons:7", "id:with:colons", "7"},
		{"no-token", "no-token", ""},
		{"trailing:", "trailing:", ""},
		{"x:1a", "x", "1a"}, // node-redisson's tokens are UUIDs
	} {
		h := newHolder(tc.owner, "", 1)
		if h.ClientID != tc.id || h.OwnerToken != tc.token || h.Owner != tc.owner {
			t.Errorf("newHolder(%q) = %+v, want client %q owner token %q", tc.owner, h, tc.id, tc.token)
		}
	}
}

// TestInspectUnsetSemaphore: nothing is stored, but a client waits for a
// permit of a semaphore nobody has set yet.
func TestInspectUnsetSemaphore(t *testing.T) {
	t.Parallel()
	name := redistest.Key(t, "sem")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- semaphore.New(clienttest.Shared(t), name).Acquire(ctx, 1) }()
	waitSubscribers(t, keys.SemaphoreChannel(name), 1)
	r := inspectJSON(t, name)
	if r.Type != kindSemaphore || !r.Guessed || r.Exists || r.Permits == nil || *r.Permits != 0 || r.Waiters != 1 {
		t.Errorf("report %+v: want a guessed, unset semaphore with 1 waiter", r)
	}
	if !strings.Contains(r.Reason, "no key, but 1 client waits on the semaphore channel") {
		t.Errorf("reason %q", r.Reason)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled Acquire returned nil")
	}
}

// TestTokenWording: inspect and unlock said "token" alone for an owner
// token and for a fencing token. Every token they show says which it is,
// in the text, in the JSON keys and in the help.
func TestTokenWording(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "lock")
	c := clienttest.Shared(t, redisync.WithWatchdogTimeout(longLease))
	l := rlock.New(c, name, rlock.WithFencing())
	if err := l.Lock(redisync.WithOwnerToken(ctx, 9)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = l.ForceUnlock(context.Background()) })

	bare := regexp.MustCompile(`(?i)(^|[^a-z_])(owner|fencing|fence)?[ _]?token`)
	checkWording := func(what, out string) {
		t.Helper()
		for _, m := range bare.FindAllStringSubmatch(out, -1) {
			if m[2] == "" {
				t.Errorf("%s says %q: a bare token", what, m[0])
			}
		}
	}
	text := runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	for _, s := range []string{"owner token 9", "last fencing token issued 1"} {
		if !strings.Contains(text.stdout, s) {
			t.Errorf("inspect does not say %q", s)
		}
	}
	// The channel and counter key names are Redisson's; leave them out.
	checkWording("inspect", strings.ReplaceAll(text.stdout, keys.FenceCounter(name), ""))

	js := runCmd(t, nil, "inspect", "-json", "-redis", testURL(t), name)
	var raw struct {
		Holders []map[string]any `json:"holders"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &raw); err != nil || len(raw.Holders) != 1 {
		t.Fatalf("inspect -json: %v, holders %v", err, raw.Holders)
	}
	if _, ok := raw.Holders[0]["token"]; ok || raw.Holders[0]["owner_token"] != "9" {
		t.Errorf("holder %v: want owner_token 9 and no token key", raw.Holders[0])
	}

	for _, cmd := range []string{"inspect", "unlock"} {
		help := runCmd(t, nil, "help", cmd)
		checkWording("help "+cmd, help.stdout)
	}
	unlocked := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	if !strings.Contains(unlocked.stdout, "client "+c.ID()+" owner token 9 ×1") {
		t.Errorf("unlock does not show the owner token")
	}
	checkWording("unlock", unlocked.stdout)
}
