package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/semaphore"
)

// The faults that make state vanish (single topology): the server
// restarted without its data, and memory pressure under an evicting
// maxmemory-policy. Neither is a fault a Redis lock survives: a hold
// vanishes while its holder still believes in it, until its next renewal
// tells it (Done closes with ErrLockLost). So what the belief check, the
// sampler and the rate check find in their windows is measured and counted
// apart (Report.Unsurvivable), as for the clock faults; what is checked
// as violations is what the library promises there:
//
//   - a restart without the data: every hold it took is reported lost
//     (Done closes with ErrLockLost, or its release answers ErrNotHeld);
//     no latch wait that saw its latch set returns nil after the latch
//     vanished (it returns an error wrapping ErrStateLost); fencing
//     tokens never go back (the server's clock is their floor);
//   - eviction: every evicted hold is reported lost, its cause naming
//     eviction (or its release answers ErrNotHeld); fencing tokens never
//     go back, and the fences refuse the stale writes the evictions let
//     through.
//
// The single server runs with maxmemory-policy volatile-lru and no
// maxmemory (nothing is evicted until the fault sets one): the clients
// read a primary's policy once, when they first connect to it, so it is
// set from the start, and the library warns of it then. volatile-lru
// evicts only keys with a TTL, which every lock, read-write lock and
// request record has, and which the semaphores' counts, the latches, the
// fencing counters and the fences have not: an allkeys policy would also
// evict those, which is not tested. Notifications of evicted keys
// (notify-keyspace-events Ee) tell the suite which holds were evicted.
//
// The semaphores are idle at both faults: the suite stops acquiring them
// and waits until no worker holds or calls on them, and after the fault
// sets them (and the rate limiter) again, as an operator must after a
// restart without data (docs/guarantees.md): a restart loses their
// permits, and a hold's release then creates them anew.

// The state-loss fault kinds (single topology).
const (
	FaultWipe  FaultKind = "restart-empty"   // SIGKILL of the server, its RDB and AOF deleted, started empty
	FaultEvict FaultKind = "memory-pressure" // a maxmemory just above the memory used, filler keys written: keys with a TTL evicted
)

// stateKinds are the state-loss kinds, added in the single topology.
var stateKinds = []FaultKind{FaultWipe, FaultEvict}

// singleServerArgs are the single server's arguments beyond serverArgs:
// an evicting policy with no limit (the memory-pressure fault sets one)
// and notifications of evicted keys.
var singleServerArgs = []string{"--maxmemory-policy", "volatile-lru", "--maxmemory", "0", "--notify-keyspace-events", "Ee"}

// stateLoss is one fault that made state vanish: from start (the server
// about to be killed, or the maxmemory set) to end (restarted, or the
// limit removed); dead is when a killed server was known dead.
type stateLoss struct {
	kind       FaultKind
	start, end int64
	dead       int64
}

// evictedKey is a key Redis reported evicted, when the suite heard of it.
type evictedKey struct {
	key string
	at  int64
}

// stateFaults is the state of the state-loss faults of one run.
type stateFaults struct {
	mu       sync.Mutex
	losses   []stateLoss
	evicted  []evictedKey
	gated    atomic.Bool   // the workers leave the semaphores alone
	waitsErr atomic.Int64  // latch waits that returned ErrStateLost
	stopSub  func()        // ends the evicted-key listener
	subDone  chan struct{} // closed when it ended
}

// lossesList returns the state losses so far.
func (sf *stateFaults) lossesList() []stateLoss {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return append([]stateLoss(nil), sf.losses...)
}

// evictedList returns the evicted keys heard of so far.
func (sf *stateFaults) evictedList() []evictedKey {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return append([]evictedKey(nil), sf.evicted...)
}

// heldObjects are the objects whose holds a state loss ends: the locks
// (the MultiLock's members included), the read-write lock and the
// election.
func heldObjects() []string {
	objs := append(append([]string(nil), lockNames...), multiNames...)
	return append(objs, rwName, electionName)
}

// objectOfKey returns the workload object whose state key k is ("" for
// none): a lock's hash, the read-write lock's hash or a reader's timeout
// key, the election's lock.
func objectOfKey(k string) string {
	for _, o := range heldObjects() {
		if k == o {
			return o
		}
	}
	if strings.HasPrefix(k, "{"+rwName+"}:") && strings.Contains(k, "rwlock_timeout") {
		return rwName
	}
	return ""
}

// listenEvictions subscribes to the server's notifications of evicted
// keys (single topology) and records them until stopped.
func (r *run) listenEvictions() {
	rdb, ok := r.adminRDB.(*redis.Client)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ps := rdb.Subscribe(ctx, "__keyevent@0__:evicted")
	sf := &r.state
	sf.stopSub, sf.subDone = func() { cancel(); _ = ps.Close() }, make(chan struct{})
	go func() {
		defer close(sf.subDone)
		ch := ps.Channel()
		for m := range ch {
			at := r.h.Now()
			sf.mu.Lock()
			sf.evicted = append(sf.evicted, evictedKey{key: m.Payload, at: at})
			sf.mu.Unlock()
			if o := objectOfKey(m.Payload); o != "" {
				// The object's state vanished between the fault's start
				// and now: the models free it.
				start := at
				if n := len(sf.lossesList()); n > 0 {
					start = sf.lossesList()[n-1].start
				}
				r.h.Add(Op{Worker: -1, Object: o, Kind: Wiped, Call: start, Return: at, Err: "evicted " + m.Payload})
			}
		}
	}()
}

// stopEvictions ends the evicted-key listener.
func (r *run) stopEvictions() {
	if r.state.stopSub != nil {
		r.state.stopSub()
		<-r.state.subDone
		r.state.stopSub = nil
	}
}

// semIdleWait is how long a state-loss fault waits for the semaphores to
// be idle before it gives up (and injects a plain restart instead).
const semIdleWait = 12 * time.Second

// quiesceSemaphores stops the workers acquiring the semaphores and waits
// until none holds or calls on them; it reports whether they are idle
// (else it lets the workers go on).
func (r *run) quiesceSemaphores() bool {
	r.state.gated.Store(true)
	deadline := time.Now().Add(semIdleWait)
	for time.Now().Before(deadline) {
		idle := true
		for _, w := range r.workers {
			s := w.state.snap()
			if s.inflight == semName || s.inflight == xsemName || s.holds[semName].n > 0 || s.holds[xsemName].n > 0 {
				idle = false
				break
			}
		}
		if idle {
			// and a moment for the releases' replies and background work
			time.Sleep(200 * time.Millisecond)
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.state.gated.Store(false)
	return false
}

// restore sets the semaphores and the rate limiter again after a state
// loss (each only if its state vanished), then lets the workers use the
// semaphores again. It returns what it set.
func (r *run) restore() string {
	defer r.state.gated.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var set []string
	if ok, err := semaphore.New(r.clients[0], semName).TrySetPermits(ctx, r.cfg.Permits); ok || err != nil {
		set = append(set, fmt.Sprintf("semaphore %v", errOr(err, "set")))
	}
	if ok, err := semaphore.NewExpirable(r.clients[0], xsemName).TrySetPermits(ctx, r.cfg.Permits); ok || err != nil {
		set = append(set, fmt.Sprintf("expirable semaphore %v", errOr(err, "set")))
	}
	if ok, err := ratelimit.New(r.clients[0], rateName).TrySetRate(ctx, ratelimit.Overall, rateLimit, rateInterval); ok || err != nil {
		set = append(set, fmt.Sprintf("rate limiter %v", errOr(err, "set")))
	}
	if len(set) == 0 {
		return "nothing to set again"
	}
	return "set again: " + strings.Join(set, ", ")
}

func errOr(err error, s string) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return s
}

// restartEmpty is the FaultWipe fault: the semaphores idle, the server
// killed, its data deleted, started empty; then the semaphores set again.
func (in *injector) restartEmpty(f Fault) Fault {
	r, t := in.r, in.t
	f.Client = -1
	if !r.quiesceSemaphores() {
		r.srv.Restart(t)
		f.Kind, f.Detail = FaultRestart, r.srv.Addr()+" (the semaphores were not idle: restarted with its data instead of empty)"
		f.End = r.h.Now()
		return f
	}
	held := r.waitAcross()
	k0 := r.h.Now()
	f.Start = k0
	r.srv.Stop(t)
	dead := r.h.Now()
	r.srv.RestartEmpty(t)
	back := r.h.Now()
	for _, o := range append(heldObjects(), latchNames...) {
		r.h.Add(Op{Worker: -1, Object: o, Kind: Wiped, Call: k0, Return: dead, Err: "restarted without its data"})
	}
	r.state.mu.Lock()
	r.state.losses = append(r.state.losses, stateLoss{kind: FaultWipe, start: k0, dead: dead, end: back})
	r.state.mu.Unlock()
	f.Detail = fmt.Sprintf("%s killed, its data deleted, back empty after %v; %s; a Wait on a latch set to 1 across it: %s", r.srv.Addr(),
		time.Duration(back-k0).Round(time.Millisecond), r.restore(), <-held)
	f.End = r.h.Now()
	return f
}

// heldLatch is a latch nobody counts down: set to 1 before each restart
// without data, waited for across it.
const heldLatch = "chaos:latch:held"

// waitAcross sets heldLatch to 1 (client 1) and starts a Wait on it
// (client 2) that has read it set; the Wait must not return nil once the
// latch vanished with the server (ErrStateLost): the channel gets what it
// returned, once it did (at most 10 s after the restart).
func (r *run) waitAcross() <-chan string {
	out := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ok, err := countdown.New(r.clients[1%len(r.clients)], heldLatch).TrySetCount(ctx, 1); !ok || err != nil {
		out <- fmt.Sprintf("not set (%v, %v)", ok, err)
		return out
	}
	l := countdown.New(r.clients[2%len(r.clients)], heldLatch)
	go func() {
		wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer wcancel()
		err := l.Wait(wctx)
		switch {
		case err == nil:
			r.violate(Violation{At: r.h.Now(), Check: "restart without data", Detail: fmt.Sprintf(
				"a Wait on latch %s, set to 1 and counted down by nobody, returned nil after the server restarted without its data", heldLatch)})
			out <- "returned nil (a violation)"
		case errors.Is(err, redisync.ErrStateLost):
			r.state.waitsErr.Add(1)
			out <- "ErrStateLost"
		default:
			out <- "error: " + err.Error()
		}
	}()
	time.Sleep(200 * time.Millisecond) // it has read the latch set
	return out
}

// fillerChunk is the size of one filler value.
const fillerChunk = 32 << 10

// memoryPressure is the FaultEvict fault: the semaphores idle, maxmemory
// set just above the memory used, then filler keys (no TTL) written for
// 1 to 2.5 s, up to 256 KiB to 4 MiB: Redis evicts the keys with a TTL,
// least recently used first, and refuses writes (OOM) once none is left;
// after 0.5 to 1.5 s more the limit is removed and the fillers deleted.
func (in *injector) memoryPressure(f Fault) Fault {
	r, rng := in.r, in.rng
	f.Client = -1
	if !r.quiesceSemaphores() {
		f.Detail = "skipped: the semaphores were not idle"
		f.End = r.h.Now()
		return f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	used := usedMemory(ctx, r.adminRDB)
	limit := used + 128<<10
	f.Start = r.h.Now()
	r.state.mu.Lock()
	r.state.losses = append(r.state.losses, stateLoss{kind: FaultEvict, start: f.Start, end: 1 << 62})
	before := len(r.state.evicted)
	r.state.mu.Unlock()
	setErr := r.adminRDB.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err()
	total := int64(between(rng, 256<<10, 4<<20))
	fill := between(rng, time.Second, 2500*time.Millisecond)
	value := strings.Repeat("x", fillerChunk)
	var written, refused int64
	var fillers []string
	step := fill / time.Duration(max(total/fillerChunk, 1))
	for n := 0; written < total; n++ {
		k := "chaos:filler:" + strconv.Itoa(n)
		if err := r.adminRDB.Set(ctx, k, value, 0).Err(); err != nil {
			refused++
		} else {
			written += fillerChunk
			fillers = append(fillers, k)
		}
		if refused > 20 {
			break
		}
		time.Sleep(step)
	}
	time.Sleep(between(rng, 500*time.Millisecond, 1500*time.Millisecond))
	resetErr := r.adminRDB.ConfigSet(ctx, "maxmemory", "0").Err()
	if len(fillers) > 0 {
		_ = r.adminRDB.Del(ctx, fillers...).Err()
	}
	time.Sleep(100 * time.Millisecond) // the last notifications
	f.End = r.h.Now()
	r.state.mu.Lock()
	r.state.losses[len(r.state.losses)-1].end = f.End
	ev := r.state.evicted[before:]
	r.state.mu.Unlock()
	var holds []string
	for _, e := range ev {
		if objectOfKey(e.key) != "" {
			holds = append(holds, e.key)
		}
	}
	f.Detail = fmt.Sprintf("maxmemory %d KiB (used %d KiB; set: %v), %d KiB of fillers written, %d refused (OOM), %d keys evicted, of which lock keys %v; limit removed (%v); %s",
		limit>>10, used>>10, errOr(setErr, "ok"), written>>10, refused, len(ev), holds, errOr(resetErr, "ok"), r.restore())
	return f
}

// usedMemory reads INFO memory's used_memory (0 if it cannot).
func usedMemory(ctx context.Context, rdb redis.UniversalClient) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// lossFloor is the earliest a hold acquired at acqCall can end: its
// lease less the library's margin (earliestLoss), or a state loss under
// way then or starting before that.
func (r *run) lossFloor(acqCall int64) int64 {
	lo := acqCall + int64(r.earliestLoss())
	for _, s := range r.state.lossesList() {
		if s.end >= acqCall && s.start < lo {
			lo = max(s.start, acqCall)
		}
	}
	return lo
}
