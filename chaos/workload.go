package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Names of the primitives the workload uses. lockNames holds two locks, a
// fair lock (fairName) and a spin lock (spinName). On a Cluster whose three
// masters serve equal contiguous shares of the slots they are spread over
// the masters: chaos:lock:2, chaos:semaphore and chaos:latch:2 on the
// first, chaos:fair, chaos:xsem and chaos:latch:0 on the second,
// chaos:lock:0 and chaos:rw on the third.
var (
	lockNames  = []string{"chaos:lock:0", "chaos:lock:2", fairName, spinName}
	rwName     = "chaos:rw"
	semName    = "chaos:semaphore"
	xsemName   = "chaos:xsem"
	latchNames = []string{"chaos:latch:0", "chaos:latch:2"}
)

// fairName is the fair lock and spinName the spin lock, among lockNames;
// rateName is the rate limiter (rateLimit permits per rateInterval, for
// every client).
const (
	fairName     = "chaos:fair"
	spinName     = "chaos:spin"
	rateName     = "chaos:rate"
	rateLimit    = 5
	rateInterval = time.Second
)

// gcraName is the GCRA limiter (ratelimit.GCRA), with gcraLimit: at most
// gcraLimit.Burst plus one per emission interval (200ms) in any window.
const gcraName = "chaos:gcra"

var gcraLimit = ratelimit.Limit{Rate: 5, Period: time.Second, Burst: 2}

// multiNames are the members of the workers' MultiLock (multilock.New):
// plain locks taken only through it.
var multiNames = []string{"chaos:multi:a", "chaos:multi:b"}

// fairWaiterTimeout is the fair lock's waiter timeout: a queued waiter
// whose leave was lost to a fault holds up the queue for at most this
// long, well within the liveness bound.
const fairWaiterTimeout = time.Second

// chaosLock is what the workload needs of a lock or a fair lock handle.
type chaosLock interface {
	redisync.Locker
	loser
	FencingToken() int64
}

// openLock returns a handle on lock name (a fair lock for fairName), with
// fencing.
func openLock(c *redisync.Client, name string) chaosLock {
	switch name {
	case fairName:
		return rlock.NewFair(c, name, rlock.WithFencing(), rlock.WithWaiterTimeout(fairWaiterTimeout))
	case spinName:
		return rlock.NewSpin(c, name, rlock.WithFencing(), rlock.WithBackoff(time.Millisecond, 64*time.Millisecond))
	}
	return rlock.New(c, name, rlock.WithFencing())
}

// opTimeout bounds every call of the random workload, so a partition or a
// paused server ends calls with an error rather than hanging the worker.
const opTimeout = 10 * time.Second

// held is what a worker believes it holds on one primitive.
type held struct {
	n       int64    // holds or permits
	ids     []string // expirable permit ids
	since   int64    // when the acquisition was called: what it wrote expires no earlier than since plus its lease
	noLease bool     // expirable permits without a lease
}

// workerState is what the sampler may read of a worker: what it believes
// it holds and which primitive it is calling, with a version that changes
// whenever either changes.
type workerState struct {
	mu       sync.Mutex
	ver      uint64
	inflight string
	holds    map[string]held
}

type workerSnap struct {
	ver      uint64
	inflight string
	holds    map[string]held
}

func (s *workerState) snap() workerSnap {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := make(map[string]held, len(s.holds))
	for k, v := range s.holds {
		h[k] = v
	}
	return workerSnap{ver: s.ver, inflight: s.inflight, holds: h}
}

// begin marks a call on object in flight; hold, if not nil, replaces the
// belief about object first (a release drops it before it is sent).
func (s *workerState) begin(object string) {
	s.mu.Lock()
	s.ver++
	s.inflight = object
	delete(s.holds, object)
	s.mu.Unlock()
}

// end ends the call in flight, believing h afterwards (nothing if h.n == 0).
func (s *workerState) end(object string, h held) {
	s.mu.Lock()
	s.ver++
	s.inflight = ""
	if h.n > 0 {
		s.holds[object] = h
	}
	s.mu.Unlock()
}

// register is a fenced register: it accepts a write only with a token at
// least as high as the highest it accepted (equal only from the same
// worker), as a storage service protected by a fenced lock would.
type register struct {
	mu                 sync.Mutex
	last               int64
	lastWorker         int
	accepted, rejected int
}

func (r *register) write(worker int, token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token > r.last || token == r.last && worker == r.lastWorker {
		r.last, r.lastWorker = token, worker
		r.accepted++
		return true
	}
	r.rejected++
	return false
}

// worker is one goroutine of the workload: an owner of its own on one
// client, with its own handles.
type worker struct {
	id    int
	run   *run
	c     *redisync.Client
	ctx   context.Context // carries the worker's owner
	rng   *rand.Rand
	state workerState

	locks   []chaosLock    // used with ctx: the worker's owner
	fresh   []chaosLock    // used without a context owner (fresh holds; the fair lock's handle owner)
	rw      *rwlock.RWLock // used with ctx
	rwFresh *rwlock.RWLock // written without a context owner: fresh writes
	sem     *semaphore.Semaphore
	xsem    *semaphore.ExpirableSemaphore
	latches []*countdown.Latch
	rate    *ratelimit.Limiter
	gcra    *ratelimit.GCRA
	multi   *multilock.MultiLock
	members []*rlock.Lock // multi's
	// redlock is the client's RedLock (redlock.go), nil in Netns;
	// rlMembers its members, one per master.
	redlock   *multilock.MultiLock
	rlMembers []*rlock.Lock
	// election is the workload's election (parts.go), fences the fenced
	// values its lock holders write (one per lock of lockNames).
	election *election.Election
	fences   []*fence.Value
}

func newWorker(r *run, id int, c *redisync.Client) *worker {
	w := &worker{
		id:    id,
		run:   r,
		c:     c,
		ctx:   redisync.WithOwner(context.Background()),
		rng:   rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(id)+1)),
		state: workerState{holds: map[string]held{}},
		rw:    rwlock.New(c, rwName),
		// A handle of its own, as a caller without an owner has.
		rwFresh:  rwlock.New(c, rwName),
		sem:      semaphore.New(c, semName),
		xsem:     semaphore.NewExpirable(c, xsemName),
		rate:     ratelimit.New(c, rateName),
		gcra:     ratelimit.NewGCRA(c, gcraName, gcraLimit),
		election: election.New(c, electionName),
	}
	for _, n := range lockNames {
		w.locks = append(w.locks, openLock(c, n))
		w.fresh = append(w.fresh, openLock(c, n))
		w.fences = append(w.fences, fence.New(c, fenceName(n)))
	}
	for _, n := range latchNames {
		w.latches = append(w.latches, countdown.New(c, n))
	}
	var ms []redisync.Locker
	for _, n := range multiNames {
		l := rlock.New(c, n)
		w.members = append(w.members, l)
		ms = append(ms, l)
	}
	w.multi = multilock.New(ms...)
	return w
}

// owner returns the worker's owner name as it appears in lock hashes.
func (w *worker) owner() string {
	t, _ := redisync.OwnerToken(w.ctx)
	return w.c.ID() + ":" + itoa(int64(t))
}

// between returns a random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// holdTime is how long a worker keeps what it acquired: mostly short, now
// and then across a fault.
func (w *worker) holdTime() time.Duration {
	if w.rng.IntN(10) == 0 {
		return between(w.rng, 300*time.Millisecond, 2500*time.Millisecond)
	}
	return between(w.rng, 10*time.Millisecond, 300*time.Millisecond)
}

// loop runs random operations until stop is closed.
func (w *worker) loop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch k := w.pick(); {
		case k < 25:
			w.lockOp(w.rng.IntN(len(w.locks)), false)
		case k < 40:
			w.rwOp(w.rng.IntN(2) == 0, false)
		case k < 55:
			w.semOp(false)
		case k < 70:
			w.xsemOp(false)
		case k < 74:
			w.rateOp()
		case k < 78:
			w.gcraOp()
		case k < 81:
			w.multiOp()
		case k < 84:
			if w.redlock != nil {
				w.redlockOp()
			} else {
				w.multiOp()
			}
		case k < 87:
			w.electionOp()
		default:
			w.latchOp(w.rng.IntN(len(w.latches)))
		}
	}
}

// pick picks the next operation (see loop): a number below 100; while
// the semaphores are left alone (a state loss, statefaults.go), a lock
// operation instead of theirs.
func (w *worker) pick() int {
	k := w.rng.IntN(100)
	if k >= 40 && k < 70 && w.run.state.gated.Load() {
		return 0
	}
	return k
}

// outcome classifies a call's error.
func outcome(ok bool, err error) Outcome {
	switch {
	case errors.Is(err, redisync.ErrNotHeld):
		return NotHeld
	case err != nil:
		return Unknown
	case ok:
		return OK
	}
	return Refused
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// opContext returns the context of one call: the worker's owner, bounded by
// opTimeout, or by the liveness bound in the liveness round.
func (w *worker) opContext(live bool) (context.Context, context.CancelFunc) {
	return w.opContextOf(w.ctx, live)
}

// opContextOf is opContext from ctx (without the worker's owner, for
// fresh holds).
func (w *worker) opContextOf(ctx context.Context, live bool) (context.Context, context.CancelFunc) {
	if live {
		return context.WithTimeout(ctx, w.run.liveBound)
	}
	return context.WithTimeout(ctx, opTimeout)
}

// acquireWait is the wait of a TryX: none at times, up to a second.
func (w *worker) acquireWait() time.Duration {
	if w.rng.IntN(4) == 0 {
		return 0
	}
	return between(w.rng, 0, time.Second)
}

// loser is a lock hold's Done and Err.
type loser interface {
	Done() <-chan struct{}
	Err() error
}

// addLoss records loss (its worker, object, kind and return set), seen
// by then at the latest, from lo on (the earliest it can have happened):
// a loss seen before lo is marked earlyLoss.
func (r *run) addLoss(loss Op, lo int64) {
	loss.Outcome, loss.Call = OK, lo
	if loss.Return < lo {
		loss.Call, loss.Err = loss.Return, earlyLoss
	}
	r.h.Add(loss)
}

// keep holds for d (cut short if the hold ends) and reports when the hold
// was seen lost, or zero.
func (w *worker) keep(l loser, d time.Duration) (lostAt int64) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-l.Done():
		return w.run.h.Now()
	}
}

// watchDone watches the hold l from now on; the function it returns stops
// watching and gives when l's Done closed (0: not before the stop).
func (w *worker) watchDone(l loser) func() int64 {
	var at atomic.Int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-l.Done():
			at.Store(w.run.h.Now())
		case <-quit:
		}
	}()
	return func() int64 {
		close(quit)
		<-done
		return at.Load()
	}
}

// believed records what w believed it held, b, from b.from until the
// release call rc or the moment lostAt (if not 0) it saw the hold's Done
// close, whichever was first; l (nil for permits) is the hold, whose Err
// then says why it ended.
func (w *worker) believed(b belief, rc, lostAt int64, l loser) {
	b.worker, b.to = w.id, rc
	if lostAt != 0 && lostAt < rc {
		b.to, b.lost = lostAt, true
		if l != nil {
			if err := l.Err(); err != nil {
				b.cause, b.lockLost = err.Error(), errors.Is(err, redisync.ErrLockLost)
			}
		}
	}
	w.run.beliefs.add(b)
}

// released records a release and, when it found the hold gone or the hold
// was seen lost, the loss: between the acquisition's call plus the lease
// less the library's margin (earliestLoss: neither Redis nor the library
// can have ended it before), or a state loss before that (lossFloor), and
// the release's return.
func (w *worker) released(object string, rel, loss Kind, acqCall int64, call int64, err error, lostAt int64) {
	ret := w.run.h.Now()
	out := outcome(true, err)
	w.run.h.Add(Op{Worker: w.id, Object: object, Kind: rel, Outcome: out, Err: errText(err), Call: call, Return: ret, AcqCall: acqCall})
	if out == NotHeld || lostAt != 0 && out != Unknown {
		w.run.addLoss(Op{Worker: w.id, Object: object, Kind: loss, Return: ret}, w.run.lossFloor(acqCall))
	}
}

// lockOp takes lock i (TryLock, or Lock in the liveness round), writes the
// fenced register with its token, holds, writes again and unlocks. Half the
// time it does so through the worker's handle used without a context owner
// (a fresh hold).
func (w *worker) lockOp(i int, live bool) {
	l, name, octx := w.locks[i], lockNames[i], w.ctx
	if w.rng.IntN(2) == 0 {
		l, octx = w.fresh[i], context.Background()
	}
	ctx, cancel := w.opContextOf(octx, live)
	defer cancel()
	w.state.begin(name)
	w.run.goCall.call(name)
	call := w.run.h.Now()
	var ok bool
	var err error
	if live {
		err = l.Lock(ctx)
		ok = err == nil
	} else {
		ok, err = l.TryLock(ctx, w.acquireWait())
	}
	ret := w.run.h.Now()
	w.run.goCall.returned(name, err)
	op := Op{Worker: w.id, Object: name, Kind: LockAcquire, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret}
	if ok {
		op.Token = l.FencingToken()
	}
	w.run.h.Add(op)
	w.run.live(w.id, name, live, call, ret, err)
	if !ok {
		w.state.end(name, held{})
		return
	}
	w.state.end(name, held{n: 1, since: call})
	// The belief lasts until Done closes, also while the fence is written
	// (a fence call can wait up to fenceTimeout, past the hold's end).
	doneAt := w.watchDone(l)
	reg := w.run.registers[i]
	w.writeRegister(reg, name, op.Token)
	w.writeFence(i, op.Token, live)
	d := w.holdTime()
	if live {
		d = liveHold
	}
	lostAt := w.keep(l, d)
	w.writeRegister(reg, name, op.Token)
	w.writeFence(i, op.Token, live)
	w.state.begin(name)
	rc := w.run.h.Now()
	if at := doneAt(); at != 0 && (lostAt == 0 || at < lostAt) {
		lostAt = at
	}
	w.believed(belief{object: name, mode: beliefExclusive, from: ret, token: op.Token, acqCall: call}, rc, lostAt, l)
	w.run.goCall.call(name)
	err = l.Unlock(octx)
	w.run.goCall.returned(name, err)
	w.released(name, LockRelease, LockLoss, call, rc, err, lostAt)
	w.state.end(name, held{})
}

func (w *worker) writeRegister(reg *register, name string, token int64) {
	t := w.run.h.Now()
	ok := reg.write(w.id, token)
	out := OK
	if !ok {
		out = Refused
	}
	w.run.h.Add(Op{Worker: w.id, Object: name, Kind: RegisterWrite, Token: token, Outcome: out, Call: t, Return: t})
}

// rwOp takes a read or a write hold of the read-write lock, holds and
// releases it. Half the writes go through the worker's handle used
// without a context owner (a fresh write hold, handed on in-process
// between the client's writers).
func (w *worker) rwOp(read, live bool) {
	rw, octx := w.rw, w.ctx
	if !read && w.rng.IntN(2) == 0 {
		rw, octx = w.rwFresh, context.Background()
	}
	ctx, cancel := w.opContextOf(octx, live)
	defer cancel()
	acq, rel, loss := WriteAcquire, WriteRelease, WriteLoss
	if read {
		acq, rel, loss = ReadAcquire, ReadRelease, ReadLoss
	}
	w.state.begin(rwName)
	call := w.run.h.Now()
	var ok bool
	var err error
	switch {
	case live && read:
		err = rw.RLock(ctx)
		ok = err == nil
	case live:
		err = rw.Lock(ctx)
		ok = err == nil
	case read:
		ok, err = rw.TryRLock(ctx, w.acquireWait())
	default:
		ok, err = rw.TryLock(ctx, w.acquireWait())
	}
	ret := w.run.h.Now()
	w.run.h.Add(Op{Worker: w.id, Object: rwName, Kind: acq, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret})
	w.run.live(w.id, rwName, live, call, ret, err)
	if !ok {
		w.state.end(rwName, held{})
		return
	}
	w.state.end(rwName, held{n: 1, since: call})
	d := w.holdTime()
	if live {
		d = liveHold
	}
	lostAt := w.keep(rw, d)
	w.state.begin(rwName)
	rc := w.run.h.Now()
	mode := beliefExclusive
	if read {
		mode = beliefRead
	}
	w.believed(belief{object: rwName, mode: mode, from: ret, acqCall: call}, rc, lostAt, rw)
	if read {
		err = rw.RUnlock(octx)
	} else {
		err = rw.Unlock(octx)
	}
	w.released(rwName, rel, loss, call, rc, err, lostAt)
	w.state.end(rwName, held{})
}

// semOp acquires one or two permits of the counted semaphore, holds and
// releases them.
func (w *worker) semOp(live bool) {
	ctx, cancel := w.opContext(live)
	defer cancel()
	n := int64(1 + w.rng.IntN(2))
	if live {
		n = 1
	}
	w.state.begin(semName)
	call := w.run.h.Now()
	var ok bool
	var err error
	if live {
		err = w.sem.Acquire(ctx, n)
		ok = err == nil
	} else {
		ok, err = w.sem.TryAcquire(ctx, n, w.acquireWait())
	}
	ret := w.run.h.Now()
	w.run.h.Add(Op{Worker: w.id, Object: semName, Kind: SemAcquire, N: n, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret})
	w.run.live(w.id, semName, live, call, ret, err)
	if !ok {
		w.state.end(semName, held{})
		return
	}
	w.state.end(semName, held{n: n, since: call})
	d := w.holdTime()
	if live {
		d = liveHold
	}
	time.Sleep(d)
	w.state.begin(semName)
	rc := w.run.h.Now()
	w.believed(belief{object: semName, mode: beliefPermits, n: n, from: ret, acqCall: call}, rc, 0, nil)
	err = w.sem.Release(w.ctx, n)
	w.run.h.Add(Op{Worker: w.id, Object: semName, Kind: SemRelease, N: n, Outcome: outcome(true, err), Err: errText(err), Call: rc, Return: w.run.h.Now()})
	w.state.end(semName, held{})
}

// xsemOp acquires one or two expirable permits, half the time without a
// lease (they never expire), holds and releases them once, as their
// holder should: a release that ends with an error goes on in the
// background until Redis answers (Stats.ReleasesFailed counts those that
// could not), so a permit without a lease that stays taken is a finding of
// the checks.
func (w *worker) xsemOp(live bool) {
	ctx, cancel := w.opContext(live)
	defer cancel()
	n := int64(1 + w.rng.IntN(2))
	if live {
		n = 1
	}
	lease := w.run.cfg.PermitLease
	noLease := w.rng.IntN(2) == 0
	if noLease {
		lease = 0
	}
	w.state.begin(xsemName)
	call := w.run.h.Now()
	var ids []string
	var ok bool
	var err error
	if live {
		ids, err = w.xsem.AcquireN(ctx, n, lease)
		ok = err == nil
	} else {
		ids, ok, err = w.xsem.TryAcquireN(ctx, n, w.acquireWait(), lease)
	}
	ret := w.run.h.Now()
	w.run.h.Add(Op{Worker: w.id, Object: xsemName, Kind: XAcquire, N: n, IDs: ids, NoLease: noLease, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret})
	w.run.live(w.id, xsemName, live, call, ret, err)
	if !ok {
		w.state.end(xsemName, held{})
		return
	}
	w.state.end(xsemName, held{n: n, ids: ids, since: call, noLease: noLease})
	d := w.holdTime()
	if live {
		d = liveHold
	}
	time.Sleep(d)
	w.state.begin(xsemName)
	rc := w.run.h.Now()
	end := rc
	if !noLease {
		end = min(rc, call+int64(lease))
	}
	w.believed(belief{object: xsemName, mode: beliefPermits, n: n, from: ret, acqCall: call}, end, 0, nil)
	err = w.xsem.Release(w.ctx, ids...)
	w.run.h.Add(Op{Worker: w.id, Object: xsemName, Kind: XRelease, N: n, IDs: ids, Outcome: outcome(true, err), Err: errText(err), Call: rc, Return: w.run.h.Now()})
	w.state.end(xsemName, held{})
}

// multiOp takes the MultiLock of multiNames for the worker's owner, holds
// it and releases it. Each member is recorded as a lock of its own (an
// acquisition and a release per member, with the MultiLock's times), so
// the lock model and the belief check judge every member; the hold is
// believed until the release call or until a member's Done closes.
func (w *worker) multiOp() {
	ctx, cancel := w.opContext(false)
	defer cancel()
	for _, n := range multiNames {
		w.state.begin(n)
	}
	call := w.run.h.Now()
	ok, err := w.multi.TryLock(ctx, w.acquireWait())
	ret := w.run.h.Now()
	for _, n := range multiNames {
		w.run.h.Add(Op{Worker: w.id, Object: n, Kind: LockAcquire, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret})
	}
	if !ok {
		for _, n := range multiNames {
			w.state.end(n, held{})
		}
		return
	}
	for _, n := range multiNames {
		w.state.end(n, held{n: 1, since: call})
	}
	lostAt := w.keepAll(w.holdTime())
	for _, n := range multiNames {
		w.state.begin(n)
	}
	rc := w.run.h.Now()
	for i, n := range multiNames {
		b := belief{object: n, mode: beliefExclusive, from: ret, acqCall: call}
		if lostAt != 0 && !closed(w.members[i].Done()) {
			// Another member's Done closed: this one was believed until
			// then, and its loss (if any) is for its release to find.
			w.believed(b, lostAt, 0, nil)
			continue
		}
		w.believed(b, rc, lostAt, w.members[i])
	}
	err = w.multi.Unlock(w.ctx)
	for _, n := range multiNames {
		w.released(n, LockRelease, LockLoss, call, rc, err, lostAt)
		w.state.end(n, held{})
	}
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// keepAll holds the MultiLock's members for d (cut short if one of them
// ends) and reports when a member was seen lost, or zero.
func (w *worker) keepAll(d time.Duration) (lostAt int64) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-w.members[0].Done():
	case <-w.members[1].Done():
	}
	return w.run.h.Now()
}

// rateOp takes one permit of the rate limiter (TryAcquire, waiting up to
// 200ms at times).
func (w *worker) rateOp() {
	ctx, cancel := w.opContext(false)
	defer cancel()
	wait := time.Duration(0)
	if w.rng.IntN(2) == 0 {
		wait = between(w.rng, 0, 200*time.Millisecond)
	}
	w.state.begin(rateName)
	call := w.run.h.Now()
	ok, err := w.rate.TryAcquire(ctx, 1, wait)
	w.run.h.Add(Op{Worker: w.id, Object: rateName, Kind: RateAcquire, N: 1, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: w.run.h.Now()})
	w.state.end(rateName, held{})
}

// gcraOp takes one event of the GCRA limiter: Allow, or at times Wait
// bounded by up to 300ms.
func (w *worker) gcraOp() {
	ctx, cancel := w.opContext(false)
	defer cancel()
	w.state.begin(gcraName)
	call := w.run.h.Now()
	var ok bool
	var err error
	if w.rng.IntN(3) == 0 {
		wctx, wcancel := context.WithTimeout(ctx, between(w.rng, 50*time.Millisecond, 300*time.Millisecond))
		err = w.gcra.Wait(wctx)
		wcancel()
		ok = err == nil
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil // not admitted within the wait
		}
	} else {
		ok, err = w.gcra.Allow(ctx)
	}
	w.run.h.Add(Op{Worker: w.id, Object: gcraName, Kind: RateAcquire, N: 1, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: w.run.h.Now()})
	w.state.end(gcraName, held{})
}

// latchOp makes one random call on latch i.
func (w *worker) latchOp(i int) {
	l, name := w.latches[i], latchNames[i]
	ctx, cancel := w.opContext(false)
	defer cancel()
	w.state.begin(name)
	defer w.state.end(name, held{})
	call := w.run.h.Now()
	op := Op{Worker: w.id, Object: name, Call: call}
	switch k := w.rng.IntN(100); {
	case k < 40:
		err := l.CountDown(ctx)
		op.Kind, op.Outcome, op.Err = LatchDown, outcome(true, err), errText(err)
	case k < 60:
		op.N = 3
		ok, err := l.TrySetCount(ctx, op.N)
		op.Kind, op.Outcome, op.Err = LatchSet, outcome(ok, err), errText(err)
	case k < 85:
		ok, err := l.TryWait(ctx, w.acquireWait())
		op.Kind, op.Outcome, op.Err = LatchWait, outcome(ok, err), errText(err)
		if errors.Is(err, redisync.ErrStateLost) {
			w.run.state.waitsErr.Add(1)
		}
	default:
		n, err := l.Count(ctx)
		op.Kind, op.N, op.Outcome, op.Err = LatchCount, n, outcome(true, err), errText(err)
	}
	op.Return = w.run.h.Now()
	w.run.h.Add(op)
}

// liveHold is how long the liveness round holds what it acquires.
const liveHold = 5 * time.Millisecond

// liveRound is the liveness round: one blocking acquisition of every
// primitive, each of which must return within the liveness bound.
func (w *worker) liveRound() {
	for i := range w.locks {
		w.lockOp(i, true)
		w.lockOp(i, true)
	}
	w.rwOp(false, true)
	w.rwOp(true, true)
	if !w.run.skipSemLive {
		w.semOp(true)
	}
	w.xsemOp(true)
}
