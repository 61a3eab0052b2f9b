package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
)

// demoWatchdog is the simulated processes' watchdog timeout: short, so
// that renewals (every third of it) and a crashed holder's expiry show up
// within seconds.
const demoWatchdog = 1500 * time.Millisecond

type demoOptions struct {
	redis string
	stats bool
}

const demoHead = `usage: redisync demo [-redis URL] [-stats]

Demo runs redisync's primitives between simulated processes, each with its
own connection and redisync Client, and narrates what happens, with times
since the start: workers contending for a lock while the watchdog renews
it, a holder that crashes and whose lock expires, readers and a writer on a
read-write lock, a semaphore capping concurrency, an expirable
semaphore's permit coming back after its holder crashed, a latch releasing
a batch, and two locks taken together with a MultiLock. It ends with a
summary and takes about 15 seconds.

Without -redis or $REDIS_URL it starts an embedded in-process Redis
(miniredis), so it needs nothing installed. With a server, the demo's keys
are named "redisync-demo:<random>:..." and deleted at the end.

With -stats it also prints, before the summary, the counters every
process's Client kept (redisync.Client.Stats), summed: what a metrics
dashboard would show for the run.
`

func demoFlags() (*flag.FlagSet, *demoOptions) {
	o := &demoOptions{}
	fs := newFlagSet("demo", demoHead)
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` (redis://, rediss://, redis-sentinel://; see 'redisync help'); default $REDIS_URL, else an embedded server")
	fs.BoolVar(&o.stats, "stats", false, "print the processes' Client.Stats, summed, before the summary")
	return fs, o
}

func runDemo(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs, o := demoFlags()
	pos, err := parseFlags(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected arguments %q", pos)
	}
	d := &demo{narrator: &narrator{out: stdout, names: make(map[string]string)}, printStats: o.stats}
	if u := serverURL(o.redis); u != "" {
		if err := d.useServer(ctx, u); err != nil {
			return err
		}
	} else if err := d.startEmbedded(); err != nil {
		return err
	}
	defer d.close()
	return d.run(ctx)
}

// demo is one run of the demo.
type demo struct {
	*narrator                              // prints the story
	mu        sync.Mutex                   // guards nproc, clients and stats.renewals
	prefix    string                       // of every key the demo uses
	newRDB    func() redis.UniversalClient // a connection pool for one simulated process
	obs       redis.UniversalClient        // the narrator's own connection
	nproc     int                          // processes started so far
	cleanup   []func()
	stats     demoStats

	printStats bool               // -stats
	clients    []*redisync.Client // every process's, for -stats (demo_stats.go)
}

// demoStats collects the figures of the summary.
type demoStats struct {
	lockAcquisitions int
	maxLockHolders   int
	renewals         int
	crashExpiry      time.Duration // from the crash to the next holder's acquisition

	rwReaders, rwMaxReaders int

	semJobs, semPermits, semMax int
	expiryReturn                time.Duration // from the crash to the permit's return

	latchWaiters int
	latchSpread  time.Duration // from the last count-down to the last waiter's release

	multiWaited time.Duration // from the transfer's first try to holding both
	multiFree   bool          // the free account was usable while the transfer waited
}

// fipsOnly reports whether the process runs in FIPS 140-only mode
// (GODEBUG=fips140=only), where SHA-1 panics. redisync itself computes no
// SHA-1; the embedded miniredis does, for every script it is sent.
func fipsOnly() bool {
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if strings.TrimSpace(kv) == "fips140=only" {
			return true
		}
	}
	return false
}

// startEmbedded starts miniredis in this process. ClockTTL makes its keys
// expire with the wall clock, as in Redis, so leases really run out.
func (d *demo) startEmbedded() error {
	if fipsOnly() {
		return errors.New("the embedded Redis (miniredis) computes SHA-1 script digests, which FIPS 140-only mode (GODEBUG=fips140=only) forbids: give a real server with -redis or REDIS_URL")
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return fmt.Errorf("start the embedded Redis: %w", err)
	}
	m.ClockTTL(true)
	d.cleanup = append(d.cleanup, m.Close)
	addr := m.Addr()
	d.newRDB = func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	d.obs = d.newRDB()
	d.prefix = "demo:"
	d.start = time.Now()
	d.banner("no -redis flag or REDIS_URL: started an embedded in-process Redis (miniredis) at %s;", addr)
	d.banner("its TTLs run on the wall clock, so leases really expire.")
	return nil
}

// useServer connects to the server at u. Each simulated process gets its
// own client with the same options.
func (d *demo) useServer(ctx context.Context, u string) error {
	srv, err := dial(ctx, u)
	if err != nil {
		return err
	}
	d.obs = srv.rdb
	d.newRDB = srv.newClient // every process gets a client of its own
	desc := srv.desc
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	d.prefix = "redisync-demo:" + hex.EncodeToString(b) + ":"
	d.start = time.Now()
	d.banner("using Redis at %s; the demo's keys start with %q and are deleted at the end.", desc, d.prefix)
	d.cleanup = append(d.cleanup, d.deleteKeys)
	return nil
}

// deleteKeys removes every key the demo created on a real server: the
// primitives' keys and the derived ones (timeouts, fencing counters,
// request records), which all contain the prefix.
func (d *demo) deleteKeys() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, rdb redis.UniversalClient) error {
		iter := rdb.Scan(ctx, 0, "*"+d.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := d.obs.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return del(ctx, node) })
	} else {
		err = del(ctx, d.obs)
	}
	if err != nil {
		d.banner("could not delete the demo's keys (%v); they start with %q", err, d.prefix)
	}
}

// close stops the processes' server connection, the embedded server, and
// deletes the demo's keys on a real one.
func (d *demo) close() {
	for i := len(d.cleanup) - 1; i >= 0; i-- {
		d.cleanup[i]()
	}
	if d.obs != nil {
		_ = d.obs.Close()
	}
}

// demoSection is one part of the demo.
type demoSection struct {
	title string
	play  func(context.Context) error
}

// run plays every section, then prints the summary.
func (d *demo) run(ctx context.Context) error {
	sections := []demoSection{
		{"lock: three workers contend while the watchdog renews the holder's lease", d.lockContention},
		{"lock: a holder crashes; its lease runs out and the next worker gets in", d.lockCrash},
		{"read-write lock: readers share it, the writer waits for them, then writes alone", d.rwReadersWriter},
		{"semaphore: five jobs share two permits", d.semaphoreCap},
		{"expirable semaphore: a permit holder crashes; its permit returns when its lease ends", d.expirablePermit},
		{"count-down latch: the last of three workers releases the whole batch", d.latchBatch},
		{"multilock: a transfer takes two account locks together, or neither", d.multiLockTransfer},
		{"rate limiter: three processes share 4 calls per second; GCRA's burst and Retry-After", d.rateLimit},
	}
	for i, s := range sections {
		d.section(fmt.Sprintf("%d. %s", i+1, s.title))
		if err := s.play(ctx); err != nil {
			return err
		}
	}
	if d.printStats {
		d.section("Client.Stats, summed over the processes")
		d.mu.Lock()
		clients := d.clients
		d.mu.Unlock()
		writeClientStats(d.narrator, clients)
	}
	d.section("summary")
	d.stats.write(d.narrator)
	return nil
}

// key returns the Redis name of the demo's primitive called short.
func (d *demo) key(short string) string { return d.prefix + short }

// proc starts a simulated process: its own connection pool and redisync
// Client, with the demo's short watchdog timeout. crash stops it without
// releasing anything, as a killed process would: its watchdog stops and
// whatever it held stays in Redis until its lease ends.
type proc struct {
	name  string
	c     *redisync.Client
	rdb   redis.UniversalClient
	once  sync.Once
	crash func()
}

func (d *demo) proc(name string) *proc {
	rdb := d.newRDB()
	c := redisync.New(rdb, redisync.WithWatchdogTimeout(demoWatchdog))
	p := &proc{name: name, c: c, rdb: rdb}
	p.crash = func() {
		p.once.Do(func() {
			_ = c.Close()
			_ = rdb.Close()
		})
	}
	d.name(c.ID(), name)
	d.mu.Lock()
	d.clients = append(d.clients, c)
	d.mu.Unlock()
	return p
}

// procsN starts the next n processes (proc-1, proc-2, … across the whole
// demo), stopped at the end of the section by the returned function.
func (d *demo) procsN(n int) ([]*proc, func()) {
	ps := make([]*proc, n)
	for i := range ps {
		d.mu.Lock()
		d.nproc++
		name := fmt.Sprintf("proc-%d", d.nproc)
		d.mu.Unlock()
		ps[i] = d.proc(name)
	}
	return ps, func() {
		for _, p := range ps {
			p.crash()
		}
	}
}

// showInspect prints what "redisync inspect" shows for the primitive
// called short, indented, as an operator would see it.
func (d *demo) showInspect(ctx context.Context, short string) error {
	r, err := inspect(ctx, d.obs, d.key(short), "", false)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := r.writeText(&b); err != nil {
		return err
	}
	d.banner("redisync inspect %s:", d.key(short))
	d.quote(b.String())
	return nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// secs prints a duration as seconds with millisecond precision.
func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// errDemo reports a broken guarantee seen during the demo.
var errDemo = errors.New("demo check failed")
