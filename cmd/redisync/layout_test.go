package main

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestUnlockApplicationHash is the regression test of issue 25's report:
// "unlock -force -yes userprofile:42" deleted an application's hash as if
// it were a lock held by "client email ×0", and inspect showed any hash as
// a held lock. Both now say it is not a primitive; unlock leaves it
// intact; -any deletes it on purpose.
func TestUnlockApplicationHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "userprofile:42")
	profile := map[string]string{"email": "ann@example.com", "name": "Ann", "visits": "3"}
	rdb(t).HSet(ctx, name, profile)
	t.Cleanup(func() { rdb(t).Del(context.Background(), name) })

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
	want := `redisync: unlock: "` + name + `" is not a redisync/Redisson primitive: a hash with fields "email", "name", "visits"`
	if res.code != exitError || !strings.HasPrefix(res.stderr, want) || !strings.Contains(res.stderr, "not unlocked, left as it is (-any would delete it)") || res.stdout != "" {
		t.Errorf("unlock: exit %d, stderr %q; want %d and %q…", res.code, res.stderr, exitError, want)
	}
	if got := rdb(t).HGetAll(ctx, name).Val(); !maps.Equal(got, profile) {
		t.Fatalf("the refused unlock changed the hash: %v, want %v", got, profile)
	}
	for _, args := range [][]string{{}, {"-json"}} {
		res = runCmd(t, nil, append(append([]string{"inspect", "-redis", testURL(t)}, args...), name)...)
		if res.code != exitError || !strings.Contains(res.stderr, "is not a redisync/Redisson primitive: a hash with fields") || res.stdout != "" {
			t.Errorf("inspect %q: exit %d, stdout %q, stderr %q; want %d, nothing and not a primitive", args, res.code, res.stdout, res.stderr, exitError)
		}
	}

	res = runCmd(t, nil, "unlock", "-force", "-yes", "-any", "-redis", testURL(t), name)
	if res.code != exitOK || !strings.Contains(res.stdout, `force-unlocked lock "`+name+`"`) {
		t.Errorf("unlock -any: exit %d, stdout %q, stderr %q; want the hash force-unlocked", res.code, res.stdout, res.stderr)
	}
	if rdb(t).Exists(ctx, name).Val() != 0 {
		t.Error("unlock -any left the hash")
	}
}

// TestLayouts: which hashes are recognised as what. A hash is a lock only
// if every field is an owner "<client id>:<owner token>" holding a hold
// count, a read-write lock if it also has mode read or write (and its
// writer is "<owner>:write"), a rate limiter if it is rate, interval,
// type and perhaps keepAliveTime; anything else is not a primitive, and
// unlock leaves it.
func TestLayouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	javaID := uuid.NewString()
	for _, tc := range []struct {
		desc string
		hash map[string]string
		want kind // "" when not a primitive
	}{
		{"Redisson lock", map[string]string{javaID + ":1": "2"}, kindLock},
		{"two owners", map[string]string{javaID + ":1": "1", "billing-service:8123456789012345678": "1"}, kindLock},
		{"WithID with colons", map[string]string{"host:pid:42:5": "1"}, kindLock},
		{"rwlock read", map[string]string{"mode": "read", javaID + ":1": "1", javaID + ":2": "3"}, kindRWLock},
		{"rwlock write and downgrade", map[string]string{"mode": "write", javaID + ":1:write": "1", javaID + ":1": "1"}, kindRWLock},
		{"rate limiter", map[string]string{"rate": "10", "interval": "1000", "type": "0"}, kindRateLimiter},
		{"rate limiter keepAliveTime", map[string]string{"rate": "10", "interval": "1000", "type": "1", "keepAliveTime": "60000"}, kindRateLimiter},

		{"application hash", map[string]string{"email": "a@b.c", "name": "Ann"}, ""},
		{"owner-like field, text value", map[string]string{"session:1": "{\"user\":7}"}, ""},
		{"hold count 0 (a minimum hold's kept field)", map[string]string{javaID + ":1": "0"}, kindLock},
		{"node-redisson owner", map[string]string{javaID + ":" + uuid.NewString(): "1"}, kindLock},
		{"negative hold count", map[string]string{javaID + ":1": "-1"}, ""},
		{"no token", map[string]string{javaID: "1"}, ""},
		{"empty client id", map[string]string{":1": "1"}, ""},
		{"token not decimal (another client's)", map[string]string{javaID + ":1a": "1"}, kindLock},
		{"empty token", map[string]string{javaID + ":": "1"}, ""},
		{"one bad field among owners", map[string]string{javaID + ":1": "1", "note": "x"}, ""},
		{"writer without mode (an owner's shape)", map[string]string{javaID + ":1:write": "1"}, kindLock},
		{"mode of another kind", map[string]string{"mode": "exclusive", javaID + ":1": "1"}, ""},
		{"mode with other fields", map[string]string{"mode": "read", "title": "x"}, ""},
		{"rate limiter with another field", map[string]string{"rate": "10", "interval": "1000", "type": "0", "owner": "x"}, ""},
		{"rate limiter, rate not a number", map[string]string{"rate": "ten", "interval": "1000", "type": "0"}, ""},
		{"rate limiter without type", map[string]string{"rate": "10", "interval": "1000"}, ""},
	} {
		name := redistest.Key(t, "hash")
		rdb(t).HSet(ctx, name, tc.hash)
		t.Cleanup(func() { rdb(t).Del(context.Background(), name) })

		res := runCmd(t, nil, "inspect", "-json", "-redis", testURL(t), name)
		if tc.want == "" {
			if res.code != exitError || !strings.Contains(res.stderr, "not a redisync/Redisson primitive") {
				t.Errorf("%s: inspect exit %d, stderr %q; want not a primitive", tc.desc, res.code, res.stderr)
			}
		} else {
			var r Report
			if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &r) != nil || r.Type != tc.want {
				t.Errorf("%s: inspect exit %d, stdout %q; want type %s", tc.desc, res.code, res.stdout, tc.want)
			}
		}
		res = runCmd(t, nil, "unlock", "-force", "-yes", "-redis", testURL(t), name)
		switch {
		case tc.want.isLock():
			if res.code != exitOK || rdb(t).Exists(ctx, name).Val() != 0 {
				t.Errorf("%s: unlock exit %d, stderr %q; want the lock freed", tc.desc, res.code, res.stderr)
			}
		default:
			if res.code != exitError || !maps.Equal(rdb(t).HGetAll(ctx, name).Val(), tc.hash) {
				t.Errorf("%s: unlock exit %d, stderr %q; want it refused and the hash intact", tc.desc, res.code, res.stderr)
			}
		}
	}
}

// TestInspectRateLimiter: a Redisson rate limiter's config hash is
// recognised (not called "not a primitive"), has no channel, and unlock
// refuses it.
func TestInspectRateLimiterLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := redistest.Key(t, "limiter")
	rdb(t).HSet(ctx, name, "rate", 5, "interval", 2000, "type", 1, "keepAliveTime", 60000)
	rdb(t).PExpire(ctx, name, time.Minute)
	t.Cleanup(func() { rdb(t).Del(context.Background(), name) })

	res := runCmd(t, nil, "inspect", "-json", "-redis", testURL(t), name)
	var raw map[string]any
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &raw) != nil {
		t.Fatalf("inspect -json: exit %d, stdout %q", res.code, res.stdout)
	}
	if raw["type"] != "rate_limiter" || raw["exists"] != true || raw["channel"] != nil {
		t.Errorf("report %v: want type rate_limiter, existing, no channel", raw)
	}
	if reason, _ := raw["reason"].(string); !strings.Contains(reason, "rate 5 per interval 2000 ms, per client, keepAliveTime 60000 ms: Redisson's RRateLimiter config") {
		t.Errorf("reason %q", reason)
	}
	res = runCmd(t, nil, "inspect", "-redis", testURL(t), name)
	if res.code != exitOK || !regexp.MustCompile(`type:\s+rate limiter \(`).MatchString(res.stdout) || !regexp.MustCompile(`config:\s+per-client, 5 permits per 2s, keep-alive 1m0s`).MatchString(res.stdout) || strings.Contains(res.stdout, "waiters:") {
		t.Errorf("inspect: exit %d, stdout %q", res.code, res.stdout)
	}
	res = runCmd(t, nil, "unlock", "-force", "-yes", "-any", "-redis", testURL(t), name)
	if res.code != exitError || !strings.Contains(res.stderr, `is a rate limiter: unlock frees only locks and read-write locks`) {
		t.Errorf("unlock: exit %d, stderr %q", res.code, res.stderr)
	}
	if rdb(t).Exists(ctx, name).Val() != 1 {
		t.Error("unlock deleted the rate limiter")
	}
	res = runCmd(t, nil, "inspect", "-type", "lock", "-redis", testURL(t), name)
	if res.code != exitError || !strings.Contains(res.stderr, "a rate limiter, not a lock") {
		t.Errorf("inspect -type lock: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestJSONTypeSpelling: the report's "type" was spelt three ways ("fair
// lock", "expirable-semaphore", "rwlock"). Every value is snake_case, and
// is the -type value that selects it.
func TestJSONTypeSpelling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.Shared(t)
	rw, xsem, latch := redistest.Key(t, "rw"), redistest.Key(t, "xsem"), redistest.Key(t, "latch")
	if err := rwlock.New(c, rw).RLock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rwlock.New(c, rw).ForceUnlock(context.Background()) })
	es := semaphore.NewExpirable(c, xsem)
	if _, err := es.TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := es.Acquire(ctx, time.Minute); err != nil { // the permit zset makes it an expirable one
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = es.Delete(context.Background()) })
	l := countdown.New(c, latch)
	if _, err := l.TrySetCount(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = l.Delete(context.Background()) })

	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	for _, k := range allKinds {
		if !snake.MatchString(string(k)) {
			t.Errorf("type %q is not snake_case", k)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{rw, nil, "rwlock"},
		{xsem, nil, "expirable_semaphore"},
		{latch, []string{"-type", "latch"}, "latch"},
		{xsem, []string{"-type", "semaphore"}, "semaphore"},
	} {
		args := append(append([]string{"inspect", "-json", "-redis", testURL(t)}, tc.args...), tc.name)
		res := runCmd(t, nil, args...)
		var raw map[string]any
		if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &raw) != nil || raw["type"] != tc.want {
			t.Errorf("%q: exit %d, type %v; want %q", args, res.code, raw["type"], tc.want)
		}
	}
	res := runCmd(t, nil, "inspect", "-type", "fair", "-redis", testURL(t), rw)
	if res.code != exitUsage || !strings.Contains(res.stderr, `unknown type "fair" (want one of lock, fair_lock, rwlock, semaphore, expirable_semaphore, latch, rate_limiter, election, gcra)`) {
		t.Errorf("-type fair: exit %d, stderr %q", res.code, res.stderr)
	}
}
