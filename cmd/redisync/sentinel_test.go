package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// TestSentinel inspects and force-unlocks a lock through a real sentinel
// with a redis-sentinel:// URL: the command had no way to name a master
// that Sentinel monitors.
func TestSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.StartSentinel(t)
	url := "redis-sentinel://" + s.SentinelAddr + "/" + redistest.SentinelMasterName
	name := redistest.Key(t, "lock")

	holder := redisync.New(s.Client(t), redisync.WithWatchdogTimeout(longLease))
	t.Cleanup(func() { _ = holder.Close() })
	if err := rlock.New(holder, name).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The first sentinel is down: the client asks the next one. (One dial
	// attempt and no retries: go-redis re-dials a dead address in the
	// background for a while after the client is closed, and the leak check
	// at the end of the tests would see it.)
	down := "redis-sentinel://127.0.0.1:1," + s.SentinelAddr + "/" + redistest.SentinelMasterName + "?dialer_retries=1&max_retries=-1"
	for _, u := range []string{url, url + "/0", down} {
		res := runCmd(t, nil, "inspect", "-json", "-redis", u, name)
		var r Report
		if res.code != 0 {
			t.Errorf("%s: exit %d: %s", u, res.code, res.stderr)
		} else if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Errorf("%s: %v", u, err)
		} else if r.Type != kindLock || len(r.Holders) != 1 || r.Holders[0].ClientID != holder.ID() {
			t.Errorf("%s: report %+v, want a lock held by %s", u, r, holder.ID())
		}
	}

	res := runCmd(t, nil, "unlock", "-force", "-yes", "-redis", url, name)
	if res.code != 0 || !strings.Contains(res.stdout, `force-unlocked lock "`+name+`"`) {
		t.Fatalf("unlock: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if n := s.Master.Client(t).Exists(ctx, name).Val(); n != 0 {
		t.Error("the lock is still on the master after unlock -force")
	}
}

// TestSentinelDB: the database number of a sentinel URL selects the
// master's database.
func TestSentinelDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.StartSentinel(t)
	name := redistest.Key(t, "lock")
	db1 := s.Master.Client(t, func(o *redis.Options) { o.DB = 1 })
	if err := db1.HSet(ctx, name, "someone:4", 1).Err(); err != nil {
		t.Fatal(err)
	}
	base := "redis-sentinel://" + s.SentinelAddr + "/" + redistest.SentinelMasterName
	if r := runCmd(t, nil, "inspect", "-redis", base+"/1", name); r.code != 0 || !strings.Contains(r.stdout, "client someone") {
		t.Errorf("db 1: exit %d, stdout %q; want the lock", r.code, r.stdout)
	}
	if r := runCmd(t, nil, "inspect", "-redis", base, name); r.code != exitOK || !strings.Contains(r.stdout, "nothing stored") {
		t.Errorf("db 0: exit %d, stdout %q; want nothing stored", r.code, r.stdout)
	}
}

// TestSentinelErrors: a master name no sentinel knows, and sentinels that
// cannot be reached, are told apart.
func TestSentinelErrors(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	u := "redis-sentinel://" + s.SentinelAddr + "/nosuchmaster"
	res := runCmd(t, nil, "inspect", "-redis", u, "x")
	if want := `redisync: inspect: no sentinel at ` + u + ` knows a master named "nosuchmaster"`; res.code != exitError || !strings.HasPrefix(res.stderr, want) {
		t.Errorf("unknown master: exit %d, stderr %q; want %d and %q", res.code, res.stderr, exitError, want)
	}
	// Regression (issue 34): sentinels that all refuse connections (nothing
	// listens on their ports) were dialed again and again by go-redis
	// until the first command's 5 s deadline. They are dialed once, and
	// the message says so at once (a timed assertion would be noisy: the
	// message is the one only that path gives).
	u = "redis-sentinel://user:s3cret@127.0.0.1:1,127.0.0.1:2/mymaster"
	res = runCmd(t, nil, "inspect", "-redis", u, "x")
	want := "redisync: inspect: cannot reach Redis at " + redactURL(u) + ": no sentinel accepts connections; " +
		"sentinel 127.0.0.1:1 does not accept connections: connect: connection refused; " +
		"sentinel 127.0.0.1:2 does not accept connections: connect: connection refused\n"
	if res.code != exitError || res.stderr != want || strings.Contains(res.stderr, "s3cret") {
		t.Errorf("no sentinel: exit %d, stderr %q; want %d and %q", res.code, res.stderr, exitError, want)
	}
}

func TestParseSentinelURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want redis.FailoverOptions
	}{
		{"redis-sentinel://10.0.0.1:26380/mymaster", redis.FailoverOptions{
			MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.1:26380"},
		}},
		{"redis-sentinel://a,b:26381,[::1]:26382,[::2]/my%2Fmaster/3?dial_timeout=2s", redis.FailoverOptions{
			MasterName: "my/master", DB: 3, DialTimeout: 2 * time.Second,
			SentinelAddrs: []string{"a:26379", "b:26381", "[::1]:26382", "[::2]:26379"},
		}},
		{"redis-sentinel://app:p%40ss/w@s1:1/m/?sentinel_username=sen&sentinel_password=spw", redis.FailoverOptions{
			MasterName: "m", SentinelAddrs: []string{"s1:1"}, Username: "app", Password: "p@ss/w",
			SentinelUsername: "sen", SentinelPassword: "spw",
		}},
		{"redis-sentinel://:pw@s1:1/m", redis.FailoverOptions{
			MasterName: "m", SentinelAddrs: []string{"s1:1"}, Password: "pw",
		}},
	} {
		o, err := parseSentinelURL(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if !reflect.DeepEqual(*o, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.url, *o, tc.want)
		}
	}
	o, err := parseSentinelURL("rediss-sentinel://s1:1/m")
	if err != nil || o.TLSConfig == nil || o.TLSConfig.ServerName != "s1" {
		t.Errorf("rediss-sentinel: %+v, %v; want TLS to s1", o, err)
	}

	for url, msg := range map[string]string{
		"redis-sentinel://s1:1":                   "no master name: want redis-sentinel://host:port/master",
		"redis-sentinel://s1:1/":                  "no master name",
		"redis-sentinel:///m":                     "empty sentinel address",
		"redis-sentinel://s1:1,/m":                "empty sentinel address",
		"redis-sentinel://s1:x/m":                 `bad sentinel address "s1:x": invalid port "x"`,
		"redis-sentinel://s1:99999/m":             `invalid port "99999"`,
		"redis-sentinel://:1/m":                   `bad sentinel address ":1": no host`,
		"redis-sentinel://s1:1/m/x":               `invalid database number "x"`,
		"redis-sentinel://s1:1/m/1/2":             `unexpected path "/m/1/2"`,
		"redis-sentinel://s1:1/m?frob=1":          "unexpected option: frob",
		"redis-sentinel://s1:1/m?master_name=n":   "option master_name: the URL gives it",
		"redis-sentinel://s1:1/m?password=p":      "option password: the URL gives it",
		"redis-sentinel://s1:1/m?dial_timeout=xx": "dial_timeout",
		"redis-sentinel://s1:1/m#frag":            `unexpected "#"`,
	} {
		if _, err := parseSentinelURL(url); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want one containing %q", url, err, msg)
		}
	}
	// Through the command: a usage error, with the password hidden.
	res := runCmd(t, nil, "inspect", "-redis", "redis-sentinel://u:s3cret@s1:x/m", "x")
	if want := `redisync: inspect: bad Redis URL "redis-sentinel://u:xxxxx@s1:x/m": bad sentinel address "s1:x": invalid port "x"`; res.code != exitUsage || !strings.HasPrefix(res.stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", res.code, res.stderr, exitUsage, want)
	}
}
