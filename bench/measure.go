package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook that counts what one client sends: every
// command is one request, every pipeline one request. Pub/sub connections
// bypass go-redis hooks; their SUBSCRIBE and UNSUBSCRIBE commands are taken
// from Redis's commandstats instead (see usage).
type counter struct {
	started   atomic.Int64 // requests sent
	completed atomic.Int64 // requests answered (or failed)

	mu      sync.Mutex
	observe func(cmds []redis.Cmder, start, end time.Time) // optional, for the watchdog scenario
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.started.Add(1)
		start := time.Now()
		err := next(ctx, cmd)
		c.completed.Add(1)
		// The command's slice is made only for an observer: the
		// uncontended rows count the process's allocations.
		if obs := c.observer(); obs != nil {
			obs([]redis.Cmder{cmd}, start, time.Now())
		}
		return err
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.started.Add(1)
		start := time.Now()
		err := next(ctx, cmds)
		c.completed.Add(1)
		c.notify(cmds, start)
		return err
	}
}

func (c *counter) notify(cmds []redis.Cmder, start time.Time) {
	if obs := c.observer(); obs != nil {
		obs(cmds, start, time.Now())
	}
}

// observer returns the callback setObserver installed, or nil.
func (c *counter) observer() func(cmds []redis.Cmder, start, end time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observe
}

// setObserver installs (or, with nil, removes) a callback run after every
// request (a command, or a pipeline of them) the client completes.
func (c *counter) setObserver(f func(cmds []redis.Cmder, start, end time.Time)) {
	c.mu.Lock()
	c.observe = f
	c.mu.Unlock()
}

// inFlight returns requests sent and not yet answered.
func (c *counter) inFlight() int64 { return c.started.Load() - c.completed.Load() }

// clientOptions are the go-redis options of every client of every library
// in every scenario: the defaults, so that no library is tuned.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr}
}

// newClient returns a go-redis client with a counting hook.
func newClient(addr string) (*redis.Client, *counter) {
	rdb := redis.NewClient(clientOptions(addr))
	c := &counter{}
	rdb.AddHook(c)
	return rdb, c
}

// snapshot is what INFO stats and INFO commandstats said at one moment.
type snapshot struct {
	calls    map[string]int64 // command name (as in cmdstat_<name>) → calls
	usec     map[string]int64 // command name → microseconds spent executing it
	netIn    int64
	netOut   int64
	cpu      float64 // used_cpu_user + used_cpu_sys of the server, seconds
	keys     int64   // keys in every database (INFO keyspace)
	infoIn   int64   // bytes of the INFO request that took the snapshot
	infoOut  int64   // bytes of its reply (approximately: the RESP framing is estimated)
	taken    time.Time
	requests []int64 // started requests of the span's counters
}

// infoSections are requested by every snapshot.
var infoSections = []string{"stats", "commandstats", "cpu", "keyspace"}

// takeSnapshot reads the server's counters through rdb, which must be a
// client used for nothing else during a measurement (the "meter" client).
func takeSnapshot(ctx context.Context, rdb *redis.Client) (snapshot, error) {
	s := snapshot{calls: map[string]int64{}, usec: map[string]int64{}, taken: time.Now()}
	txt, err := rdb.Info(ctx, infoSections...).Result()
	if err != nil {
		return s, fmt.Errorf("INFO %s: %w", strings.Join(infoSections, " "), err)
	}
	// The request, in RESP: *5 $4 info $5 stats $12 commandstats $3 cpu $8 keyspace.
	s.infoIn = int64(len("*5\r\n$4\r\ninfo\r\n$5\r\nstats\r\n$12\r\ncommandstats\r\n$3\r\ncpu\r\n$8\r\nkeyspace\r\n"))
	// The reply: a bulk (RESP2) or verbatim (RESP3) string of len(txt)
	// bytes plus a header and trailer of about 14 bytes.
	s.infoOut = int64(len(txt)) + 14
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "cmdstat_"):
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if !ok {
				continue
			}
			for _, f := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(f, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					continue
				}
				switch k {
				case "calls":
					s.calls[name] = n
				case "usec":
					s.usec[name] = n
				}
			}
		case strings.HasPrefix(line, "total_net_input_bytes:"):
			s.netIn, _ = strconv.ParseInt(strings.TrimPrefix(line, "total_net_input_bytes:"), 10, 64)
		case strings.HasPrefix(line, "total_net_output_bytes:"):
			s.netOut, _ = strconv.ParseInt(strings.TrimPrefix(line, "total_net_output_bytes:"), 10, 64)
		case strings.HasPrefix(line, "db") && strings.Contains(line, ":keys="):
			// db0:keys=12,expires=3,avg_ttl=0
			_, rest, _ := strings.Cut(line, ":keys=")
			n, _, _ := strings.Cut(rest, ",")
			k, _ := strconv.ParseInt(n, 10, 64)
			s.keys += k
		case strings.HasPrefix(line, "used_cpu_sys:"), strings.HasPrefix(line, "used_cpu_user:"):
			_, v, _ := strings.Cut(line, ":")
			sec, _ := strconv.ParseFloat(v, 64)
			s.cpu += sec
		}
	}
	return s, nil
}

// ownCommands are the commands the meter client itself sends; they are
// left out of every count.
var ownCommands = map[string]bool{"info": true}

// pubsubCommands can only be sent by a client, never run inside a script,
// and go-redis sends them on pub/sub connections, which bypass hooks: they
// are counted as requests from commandstats.
var pubsubCommands = []string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"}

// usage is what a measured span cost the server.
type usage struct {
	commands int64         // every command Redis executed, including those run inside scripts
	requests int64         // requests the clients sent (commands and pipelines) plus pub/sub (un)subscribes
	scripts  int64         // EVALSHA + EVAL + EVALSHA_RO + EVAL_RO + FCALL calls
	bytesIn  int64         // bytes Redis read from clients
	bytesOut int64         // bytes Redis wrote to clients, pub/sub messages included
	cpu      time.Duration // CPU time the server process used (user + sys)
	// clientCPU is the CPU time (user + sys) the bench process used, all
	// its goroutines included; childCPU that of its child workers
	// (clients-curve), as they reported it.
	clientCPU, childCPU time.Duration
	keys                int64            // keys added (created minus deleted or expired)
	byCommand           map[string]int64 // commands by name
	usecBy              map[string]int64 // execution microseconds by command name (a script's include its commands')
	elapsed             time.Duration    // between the two snapshots
	// batches and batchCalls: redisync's script pipeline batches and the
	// calls they carried (pipelineTotals)
	batches, batchCalls int64
}

// span measures one scenario: what Redis executed and what the given
// clients sent between begin and end.
type span struct {
	meter    *redis.Client
	counters []*counter
	before   snapshot
	pipeline [2]int64      // pipelineTotals at the start
	cpu0     time.Duration // processCPU at the start
}

func beginSpan(ctx context.Context, meter *redis.Client, counters []*counter) (*span, error) {
	s := &span{meter: meter, counters: counters}
	snap, err := takeSnapshot(ctx, meter)
	if err != nil {
		return nil, err
	}
	for _, c := range counters {
		snap.requests = append(snap.requests, c.started.Load())
	}
	s.before = snap
	s.pipeline[0], s.pipeline[1] = pipelineTotals()
	s.cpu0 = processCPU()
	return s, nil
}

func (s *span) end(ctx context.Context) (usage, error) {
	clientCPU := processCPU() - s.cpu0
	var reqs int64
	for i, c := range s.counters {
		reqs += c.started.Load() - s.before.requests[i]
	}
	after, err := takeSnapshot(ctx, s.meter)
	if err != nil {
		return usage{}, err
	}
	batches, calls := pipelineTotals()
	u := usage{
		batches:    batches - s.pipeline[0],
		batchCalls: calls - s.pipeline[1],
		requests:   reqs,
		byCommand:  map[string]int64{},
		usecBy:     map[string]int64{},
		elapsed:    after.taken.Sub(s.before.taken),
		// The first INFO's reply and the second INFO's request fall
		// inside the span; neither is the libraries' traffic.
		bytesIn:   after.netIn - s.before.netIn - after.infoIn,
		bytesOut:  after.netOut - s.before.netOut - s.before.infoOut,
		cpu:       time.Duration((after.cpu - s.before.cpu) * float64(time.Second)),
		clientCPU: clientCPU,
		keys:      after.keys - s.before.keys,
	}
	for name, n := range after.calls {
		d := n - s.before.calls[name]
		if d <= 0 || ownCommands[name] {
			continue
		}
		u.byCommand[name] = d
		u.commands += d
		u.usecBy[name] = after.usec[name] - s.before.usec[name]
	}
	for _, name := range pubsubCommands {
		u.requests += u.byCommand[name]
	}
	for _, name := range []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"} {
		u.scripts += u.byCommand[name]
	}
	return u, nil
}

// percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// latencies collects durations from several goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d ...time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

// sorted returns the durations collected so far, sorted.
func (l *latencies) sorted() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s
}

// redisVersion returns the server's redis_version.
func redisVersion(ctx context.Context, rdb *redis.Client) (string, error) {
	txt, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	if v := infoField(txt, "redis_version"); v != "" {
		return v, nil
	}
	return "unknown", nil
}

// isLoopback reports whether addr names a loopback host.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sortDurations sorts d in place and returns it.
func sortDurations(d []time.Duration) []time.Duration {
	slices.Sort(d)
	return d
}

// add adds the counts of v to u.
func (u *usage) add(v usage) {
	u.commands += v.commands
	u.requests += v.requests
	u.scripts += v.scripts
	u.bytesIn += v.bytesIn
	u.bytesOut += v.bytesOut
	u.cpu += v.cpu
	u.clientCPU += v.clientCPU
	u.childCPU += v.childCPU
	u.keys += v.keys
	u.elapsed += v.elapsed
	u.batches += v.batches
	u.batchCalls += v.batchCalls
	if u.byCommand == nil {
		u.byCommand = map[string]int64{}
	}
	for k, n := range v.byCommand {
		u.byCommand[k] += n
	}
	if u.usecBy == nil {
		u.usecBy = map[string]int64{}
	}
	for k, n := range v.usecBy {
		u.usecBy[k] += n
	}
}
