package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rlock"
)

// The model of rlock's lock kinds (Lock, FairLock, SpinLock): one lock,
// its handles on every Client, its holder and hold count.

// lockAPI is what the three lock kinds share.
type lockAPI interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context, wait time.Duration) (bool, error)
	Unlock(ctx context.Context) error
	ForceUnlock(ctx context.Context) (bool, error)
	IsLocked(ctx context.Context) (bool, error)
	IsHeld(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int64, error)
	Hold(ctx context.Context) *redisync.Hold
	Done() <-chan struct{}
	Err() error
	Inspect(ctx context.Context) (rlock.Info, error)
}

func newLockAPI(kind string, c *redisync.Client, name string, opts ...rlock.Option) lockAPI {
	switch kind {
	case "fair":
		return rlock.NewFair(c, name, opts...)
	case "spin":
		return rlock.NewSpin(c, name, opts...)
	}
	return rlock.New(c, name, opts...)
}

// lhandle is one lock handle.
type lhandle struct {
	id     int
	client int
	short  bool // WithLease(modelShortLease): its holds run out
	api    lockAPI
	took   bool   // it took a hold without a context owner
	busy   bool   // its hold without an owner is not unlocked yet (lost or not)
	own    *mhold // its latest hold without an owner
	latest *mhold // the hold of its latest acquisition
	seq    int    // when it took its latest hold without an owner
}

func (h *lhandle) String() string {
	s := fmt.Sprintf("h%d(c%d)", h.id, h.client)
	if h.short {
		s += "[short lease]"
	}
	return s
}

// lowner is a lock owner: a context owner on a Client (handle -1), or a
// handle's own owner (token 0).
type lowner struct {
	client int
	token  uint64
	handle int
}

// mlock is the model of one lock.
type mlock struct {
	kind    string
	name    string
	handles []*lhandle
	holder  *lowner // nil: free
	count   int64
	hold    *mhold
	seq     int
}

// closeClient keeps the holds of a closed Client in Redis (their lease
// outlives the check): the lock stays taken.
func (l *mlock) closeClient(int) {}

// shutdownClient frees the lock when Client c held it.
func (l *mlock) shutdownClient(c int) {
	if l.holder != nil && l.holder.client == c {
		l.holder, l.count, l.hold = nil, 0, nil
	}
}

// ctxOwner returns context owner o on Client c.
func (w *world) ctxOwner(c, o int) lowner {
	return lowner{client: c, token: w.owners[o].token, handle: -1}
}

// acting returns the handle that a call without a context owner through h
// acts for: h once it took a hold without an owner (API.md, "Changed for
// this round"); else the handle of h's Client that took a hold without an
// owner latest and has not been unlocked (a hold that was lost keeps its
// handle busy until an Unlock through it, as a sync.Mutex stays locked
// until its holder unlocks); else h.
func (l *mlock) acting(h *lhandle) *lhandle {
	if h.took && !(modelKnown["ownerless-fallback"] && !h.busy) {
		return h
	}
	best := h
	for _, x := range l.handles {
		if x != h && x.client == h.client && x.busy && (best == h || x.seq > best.seq) {
			best = x
		}
	}
	return best
}

// ownerOf returns the owner a call through h with owner o acts for.
func (w *world) lockOwnerOf(h *lhandle, o int) lowner {
	if o != noOwner {
		return w.ctxOwner(h.client, o)
	}
	a := w.lock.acting(h)
	return lowner{client: a.client, handle: a.id}
}

// drawLockHandle draws a handle of the lock, or makes a new one (with a
// watchdog lease) on a drawn Client.
func (w *world) drawLockHandle(allowShort bool) *lhandle {
	l := w.lock
	i := rapid.IntRange(0, len(l.handles)).Draw(w.t, "lock handle")
	if i < len(l.handles) {
		h := l.handles[i]
		if h.short && !allowShort {
			w.t.Skip("a short-lease handle acquires only in lock/LeaseRunsOut")
		}
		return h
	}
	return w.newLockHandle(w.drawClient("client"), false)
}

func (w *world) newLockHandle(c int, short bool) *lhandle {
	l := w.lock
	var opts []rlock.Option
	if short {
		opts = append(opts, rlock.WithLease(modelShortLease))
	}
	h := &lhandle{id: len(l.handles), client: c, short: short, api: newLockAPI(l.kind, w.clients[c].c, l.name, opts...)}
	l.handles = append(l.handles, h)
	w.stepf("new lock handle %v", h)
	return h
}

// lockCanTake reports whether an acquisition through h with owner o
// succeeds now, and whether it is a re-entry.
func (w *world) lockCanTake(h *lhandle, o int) (ok, reentry bool) {
	l := w.lock
	if l.holder == nil {
		return true, false
	}
	if o != noOwner && *l.holder == w.ctxOwner(h.client, o) {
		return true, true
	}
	return false, false
}

// lockCanTakeAs is lockCanTake, where a handle whose hold without an
// owner was not unlocked yet (even if lost) refuses another without one.
func (w *world) lockCanTakeAs(h *lhandle, o int) (ok, reentry bool) {
	if o == noOwner && h.busy {
		return false, false
	}
	return w.lockCanTake(h, o)
}

// lockTook records an acquisition through h with owner o.
func (w *world) lockTook(h *lhandle, o int, ctx context.Context, reentry bool) {
	l := w.lock
	if reentry {
		l.count++
		h.latest = l.hold
		if got := h.api.Hold(ctx); got != l.hold.real {
			w.failf("lock %v: Hold after a re-entry is %p, not the owner's hold %p", h, got, l.hold.real)
		}
		return
	}
	var own lowner
	if o == noOwner {
		own = lowner{client: h.client, handle: h.id}
		h.took, h.busy = true, true
		l.seq++
		h.seq = l.seq
	} else {
		own = w.ctxOwner(h.client, o)
	}
	l.holder, l.count = &own, 1
	w.call()
	l.hold = w.newHold(fmt.Sprintf("lock %v %s", h, ownerName(o)), h.client, h.api.Hold(ctx))
	h.latest = l.hold
	if o == noOwner {
		h.own = l.hold
	}
}

func (w *world) lockActions() map[string]func() {
	return map[string]func(){
		"lock/TryLock":        w.lockTryLock,
		"lock/Lock":           w.lockLock,
		"lock/Unlock":         w.lockUnlock,
		"lock/ForceUnlock":    w.lockForceUnlock,
		"lock/Query":          w.lockQuery,
		"lock/LeaseRunsOut":   w.lockLeaseRunsOut,
		"lock/WaitForRelease": w.lockWaitForRelease,
		"lock/RaceTryLock":    w.lockRaceTryLock,
		"lock/ShutdownWakes":  w.lockShutdownWakes,
		"lock/FairOrder":      w.lockFairOrder,
	}
}

// lockShutdownWakes has a caller of another Client Lock the taken lock in
// a goroutine, then shuts the holder's Client down: its holds are
// released, so the waiter gets the lock at once; a waiter of the Client
// shut down (drawn) ends with ErrClosed instead.
func (w *world) lockShutdownWakes() {
	l := w.lock
	if l.holder == nil || w.clients[l.holder.client].closed || len(w.openClients()) < 2 {
		w.t.Skip("no holder to shut down, or no other Client")
	}
	hc := l.holder.client
	h := w.drawLockHandle(false)
	o := w.drawOwner("waiter owner")
	if h.client == hc || w.clients[h.client].closed {
		w.t.Skip("the waiter must be of another open Client")
	}
	if o == noOwner && h.busy {
		w.t.Skip("the waiter's handle holds")
	}
	// A second waiter on the Client shut down, without a context owner
	// (the holder's would re-enter), whose wait ends.
	var ch *lhandle
	if rapid.Bool().Draw(w.t, "a waiter on the Client shut down") {
		ch = w.drawLockHandle(false)
		if ch.client != hc || ch.busy {
			w.t.Skip("not a waiter of the Client shut down")
		}
	}
	ctx := w.ownerCtx(o)
	w.stepf("lock %v %s: Lock in a goroutine (and %v of the holder's Client: %v); Shutdown of the holder's Client c%d", h, ownerName(o), ch, ch != nil, hc)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, cres := make(chan error, 1), make(chan error, 1)
	w.call()
	go func() { res <- h.api.Lock(wctx) }()
	if ch != nil {
		w.call()
		cctx, ccancel := context.WithTimeout(w.ctx, 10*time.Second)
		defer ccancel()
		go func() { cres <- ch.api.Lock(cctx) }()
	}
	if err, done := waitResult(res, modelStillWaiting); done {
		w.failf("lock %v: Lock returned %v while the lock was held", h, err)
	}
	sctx, scancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer scancel()
	w.call()
	w.wantErr("Shutdown", w.clients[hc].c.Shutdown(sctx), nil)
	w.clients[hc].closed = true
	w.endHoldsOf(hc, holdShutdown)
	w.lock.shutdownClient(hc)
	w.rw.shutdownClient(hc)
	err, done := waitResult(res, modelWakeWithin)
	if !done {
		cancel()
		<-res // the cancelled wait ends
		w.failf("lock %v: Lock still waiting %v after the holder's Client shut down", h, modelWakeWithin)
	}
	w.wantErr("Lock after the holder's Shutdown", err, nil)
	if ch != nil {
		err, done := waitResult(cres, modelWakeWithin)
		if !done {
			cancel()
			<-cres // the cancelled wait ends
			w.failf("lock %v: a wait of the Client shut down still waiting %v after Shutdown", ch, modelWakeWithin)
		}
		// It ends with ErrClosed, or it acquired just before the Client
		// closed and Shutdown released that hold too.
		if err != nil {
			w.wantErr("a wait of the Client shut down", err, redisync.ErrClosed)
		}
	}
	w.lockTook(h, o, ctx, false)
}

// lockFairOrder, on a fair lock held by one owner, starts two waiters of
// other owners one after the other (the second once the first is in the
// queue), releases: the first gets the lock and the second waits; releases
// again: the second gets it.
func (w *world) lockFairOrder() {
	l := w.lock
	if l.kind != "fair" || l.holder == nil || w.clients[l.holder.client].closed {
		w.t.Skip("not a fair lock held by a releasable holder")
	}
	type waiter struct {
		h   *lhandle
		o   int
		own lowner
		ctx context.Context
		res chan error
	}
	var ws []*waiter
	for i := range 2 {
		h := w.drawLockHandle(false)
		o := w.drawOwner(fmt.Sprintf("waiter %d owner", i))
		own := lowner{client: h.client, handle: h.id}
		if o != noOwner {
			own = w.ctxOwner(h.client, o)
		}
		if w.clients[h.client].closed || own == *l.holder || (o == noOwner && h.busy) || (i == 1 && own == ws[0].own) ||
			(i == 1 && o == noOwner && h == ws[0].h) {
			w.t.Skip("a waiter that would not wait in Redis's queue")
		}
		ws = append(ws, &waiter{h: h, o: o, own: own, ctx: w.ownerCtx(o), res: make(chan error, 1)})
	}
	w.stepf("fair lock: %v %s, then %v %s, wait; the holder %v releases twice", ws[0].h, ownerName(ws[0].o), ws[1].h, ownerName(ws[1].o), *l.holder)
	insp := newLockAPI(l.kind, w.obs, l.name)
	for i, x := range ws {
		w.call()
		lctx, lcancel := context.WithTimeout(x.ctx, 10*time.Second)
		defer lcancel()
		go func() { x.res <- x.h.api.Lock(lctx) }()
		deadline := time.Now().Add(modelWakeWithin)
		for {
			info, err := insp.Inspect(w.ctx)
			w.wantErr("Inspect", err, nil)
			if len(info.Queue) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				w.failf("fair lock: waiter %d not in the queue after %v: %v", i, modelWakeWithin, info.Queue)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i, x := range ws {
		rh, ro := w.lockReleaserOf(*l.holder)
		for l.holder != nil {
			w.lockUnlockAs(rh, ro)
		}
		err, done := waitResult(x.res, modelWakeWithin)
		if !done {
			w.failf("fair lock: waiter %d still waiting %v after the release", i, modelWakeWithin)
		}
		w.wantErr("a fair waiter", err, nil)
		w.lockTook(x.h, x.o, x.ctx, false)
		if i == 0 {
			if err, done := waitResult(ws[1].res, modelStillWaiting); done {
				w.failf("fair lock: the second waiter returned %v before the first released", err)
			}
		}
	}
}

// lockRaceTryLock has 2 to 4 goroutines TryLock the free lock at once,
// each through a drawn handle (the same one or not) with a drawn owner
// (distinct owners): exactly one gets it.
func (w *world) lockRaceTryLock() {
	l := w.lock
	if l.holder != nil {
		w.t.Skip("the lock is taken")
	}
	n := rapid.IntRange(2, 4).Draw(w.t, "goroutines")
	type racer struct {
		h *lhandle
		o int
	}
	var rs []racer
	used := map[lowner]bool{}
	for range n {
		h := w.drawLockHandle(false)
		o := w.drawOwner("owner")
		own := lowner{client: h.client, handle: h.id}
		if o != noOwner {
			own = w.ctxOwner(h.client, o)
		}
		if w.clients[h.client].closed || (o == noOwner && h.busy) || used[own] {
			w.t.Skip("a racer that cannot take the lock, or the same owner twice")
		}
		used[own] = true
		rs = append(rs, racer{h, o})
	}
	w.stepf("lock: %d goroutines TryLock(0) at once: %v", n, rs)
	type result struct {
		ok  bool
		err error
		ctx context.Context
	}
	results := make([]result, n)
	done := make(chan struct{})
	start := make(chan struct{})
	for i, r := range rs {
		ctx := w.ownerCtx(r.o)
		results[i].ctx = ctx
		w.call()
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			results[i].ok, results[i].err = r.h.api.TryLock(ctx, 0)
		}()
	}
	close(start)
	for range rs {
		<-done
	}
	winner := -1
	for i, r := range results {
		w.wantErr("a racing TryLock", r.err, nil)
		if r.ok {
			if winner >= 0 {
				w.failf("lock: two racing TryLocks got the lock: %v and %v", rs[winner], rs[i])
			}
			winner = i
		}
	}
	if winner < 0 {
		w.failf("lock: none of %d racing TryLocks on the free lock got it", n)
	}
	w.lockTook(rs[winner].h, rs[winner].o, results[winner].ctx, false)
}

func (w *world) lockTryLock() {
	h := w.drawLockHandle(false)
	o := w.drawOwner("owner")
	ctx := w.ownerCtx(o)
	ok, reentry := w.lockCanTakeAs(h, o)
	wait := time.Duration(0)
	if !ok && rapid.Bool().Draw(w.t, "wait") {
		wait = modelBusyWait
	}
	w.stepf("lock %v %s: TryLock(%v)", h, ownerName(o), wait)
	w.call()
	got, err := h.api.TryLock(ctx, wait)
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("TryLock on a closed Client", err, cerr)
		return
	}
	w.wantErr("TryLock", err, nil)
	if got != ok {
		w.failf("lock %v %s: TryLock = %v, the model says %v (holder %v, count %d)", h, ownerName(o), got, ok, w.lock.holder, w.lock.count)
	}
	if ok {
		w.lockTook(h, o, ctx, reentry)
	}
}

// lockLock calls Lock where the model says it succeeds at once.
func (w *world) lockLock() {
	h := w.drawLockHandle(false)
	o := w.drawOwner("owner")
	ok, reentry := w.lockCanTakeAs(h, o)
	if !ok && !w.clients[h.client].closed {
		w.t.Skip("Lock would wait: lock/WaitForRelease covers it")
	}
	ctx := w.ownerCtx(o)
	w.stepf("lock %v %s: Lock", h, ownerName(o))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w.call()
	err := h.api.Lock(cctx)
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("Lock on a closed Client", err, cerr)
		return
	}
	w.wantErr("Lock", err, nil)
	w.lockTook(h, o, ctx, reentry)
}

func (w *world) lockUnlock() {
	h := w.drawLockHandle(true)
	o := w.drawOwner("owner")
	w.stepf("lock %v %s: Unlock", h, ownerName(o))
	w.lockUnlockAs(h, o)
}

// lockUnlockAs unlocks once through h with owner o and checks the reply.
func (w *world) lockUnlockAs(h *lhandle, o int) {
	w.t.Helper()
	l := w.lock
	own := w.lockOwnerOf(h, o)
	w.call()
	err := h.api.Unlock(w.ownerCtx(o))
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("Unlock on a closed Client", err, cerr)
		return
	}
	if o == noOwner {
		l.handles[own.handle].busy = false
	}
	if l.holder == nil || *l.holder != own {
		w.wantErr(fmt.Sprintf("lock %v %s: Unlock (holder %v, acting for %v)", h, ownerName(o), l.holder, own), err, redisync.ErrNotHeld)
		return
	}
	w.wantErr(fmt.Sprintf("lock %v %s: Unlock", h, ownerName(o)), err, nil)
	l.count--
	if l.count == 0 {
		l.hold.end(holdReleased)
		l.holder, l.hold = nil, nil
	}
}

func (w *world) lockForceUnlock() {
	h := w.drawLockHandle(true)
	w.stepf("lock %v: ForceUnlock", h)
	l := w.lock
	w.call()
	got, err := h.api.ForceUnlock(w.ctx)
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("ForceUnlock on a closed Client", err, cerr)
		return
	}
	w.wantErr("ForceUnlock", err, nil)
	if want := l.holder != nil; got != want {
		w.failf("lock %v: ForceUnlock = %v, the model says the lock existed: %v", h, got, want)
	}
	if l.holder != nil {
		l.hold.end(holdLost)
		l.holder, l.count, l.hold = nil, 0, nil
	}
}

// lockQuery compares IsLocked, IsHeld, HoldCount and Hold through a
// handle with an owner.
func (w *world) lockQuery() {
	h := w.drawLockHandle(true)
	o := w.drawOwner("owner")
	ctx := w.ownerCtx(o)
	l := w.lock
	own := w.lockOwnerOf(h, o)
	held := l.holder != nil && *l.holder == own
	w.stepf("lock %v %s: IsLocked, IsHeld, HoldCount, Hold", h, ownerName(o))
	w.call()
	locked, err := h.api.IsLocked(ctx)
	cerr := w.closedErr(h.client)
	w.wantErr("IsLocked", err, cerr)
	if cerr == nil && locked != (l.holder != nil) {
		w.failf("lock %v: IsLocked = %v, the model says %v", h, locked, l.holder != nil)
	}
	w.call()
	isHeld, err := h.api.IsHeld(ctx)
	w.wantErr("IsHeld", err, cerr)
	if cerr == nil && isHeld != held {
		w.failf("lock %v %s: IsHeld = %v, the model says %v (holder %v, acting for %v)", h, ownerName(o), isHeld, held, l.holder, own)
	}
	w.call()
	n, err := h.api.HoldCount(ctx)
	w.wantErr("HoldCount", err, cerr)
	want := int64(0)
	if held {
		want = l.count
	}
	if cerr == nil && n != want {
		w.failf("lock %v %s: HoldCount = %d, the model says %d", h, ownerName(o), n, want)
	}
	if cerr != nil {
		return
	}
	w.call()
	hold := h.api.Hold(ctx)
	switch {
	case held && hold != l.hold.real:
		w.failf("lock %v %s: Hold = %p, the model says the hold %s (%p)", h, ownerName(o), hold, l.hold.name, l.hold.real)
	case !held && hold != nil:
		w.failf("lock %v %s: Hold = %p (Err %v), the model says none", h, ownerName(o), hold, hold.Err())
	}
}

// lockLeaseRunsOut takes the free lock through a handle with a 30 ms
// lease, sleeps past it, and expects the hold lost.
func (w *world) lockLeaseRunsOut() {
	l := w.lock
	if l.holder != nil {
		w.t.Skip("the lock is taken")
	}
	open := w.openClients()
	c := rapid.SampledFrom(open).Draw(w.t, "client")
	h := w.newLockHandle(c, true)
	o := w.drawOwner("owner")
	ctx := w.ownerCtx(o)
	w.stepf("lock %v %s: TryLock(0), then sleep past its lease", h, ownerName(o))
	w.call()
	ok, err := h.api.TryLock(ctx, 0)
	w.wantErr("TryLock", err, nil)
	if !ok {
		w.failf("lock %v: TryLock on the free lock = false", h)
	}
	w.lockTook(h, o, ctx, false)
	hold := l.hold
	w.call()
	_ = hold.real.Done() // watched, as a user would
	time.Sleep(3 * modelShortLease)
	hold.end(holdLost)
	l.holder, l.count, l.hold = nil, 0, nil
}

// lockWaitForRelease has a caller Lock the taken lock in a goroutine,
// checks it waits, releases the holder's holds, and expects the waiter to
// get the lock within modelWakeWithin.
func (w *world) lockWaitForRelease() {
	l := w.lock
	if l.holder == nil || w.clients[l.holder.client].closed {
		w.t.Skip("no releasable holder")
	}
	h := w.drawLockHandle(false)
	o := w.drawOwner("waiter owner")
	if w.clients[h.client].closed {
		w.t.Skip("the waiter's Client is closed")
	}
	if o == noOwner && h.busy {
		w.t.Skip("the waiter holds through its handle")
	}
	if ok, _ := w.lockCanTake(h, o); ok {
		w.t.Skip("the waiter would not wait")
	}
	ctx := w.ownerCtx(o)
	w.stepf("lock %v %s: Lock in a goroutine; the holder %v releases", h, ownerName(o), *l.holder)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	w.call()
	go func() { res <- h.api.Lock(wctx) }()
	if err, done := waitResult(res, modelStillWaiting); done {
		w.failf("lock %v %s: Lock returned %v while %v held the lock", h, ownerName(o), err, *l.holder)
	}
	// The holder releases every hold it has.
	rh, ro := w.lockReleaserOf(*l.holder)
	for l.holder != nil {
		w.lockUnlockAs(rh, ro)
	}
	err, done := waitResult(res, modelWakeWithin)
	if !done {
		cancel()
		<-res
		w.failf("lock %v %s: Lock still waiting %v after the release", h, ownerName(o), modelWakeWithin)
	}
	w.wantErr("Lock after the release", err, nil)
	w.lockTook(h, o, ctx, false)
}

// lockReleaserOf returns a handle and owner that release the holds of
// owner own: its own handle, or a handle on its Client with its context.
func (w *world) lockReleaserOf(own lowner) (*lhandle, int) {
	l := w.lock
	if own.token == 0 {
		return l.handles[own.handle], noOwner
	}
	o := 0
	for i, x := range w.owners {
		if x.token == own.token {
			o = i
		}
	}
	for _, h := range l.handles {
		if h.client == own.client && !h.short {
			return h, o
		}
	}
	return w.newLockHandle(own.client, false), o
}

// checkLock compares every handle's Done and Err, and what Redis holds,
// with the model.
func (w *world) checkLock() {
	l := w.lock
	for _, h := range l.handles {
		follows := h.latest
		if follows == nil && !w.clients[h.client].closed {
			// A handle that never acquired acts for its Client's
			// hold without a context owner, if any.
			if a := l.acting(h); a != h {
				follows = a.own
				if modelKnown["never-acquired-follows-latest"] {
					follows = a.latest
				}
			}
		}
		w.call()
		w.checkHandle(fmt.Sprintf("lock handle %v", h), h.api.Done(), h.api.Err(), follows)
	}
	w.call()
	info, err := newLockAPI(l.kind, w.obs, l.name).Inspect(w.ctx)
	if err != nil {
		w.failf("lock Inspect: %v", err)
	}
	if l.holder == nil {
		if len(info.Holders) != 0 {
			w.failf("lock: Redis holds %+v, the model says the lock is free", info.Holders)
		}
	} else {
		own := *l.holder
		if len(info.Holders) != 1 || info.Holders[0].Count != l.count {
			w.failf("lock: Redis holds %+v, the model says %v with count %d", info.Holders, own, l.count)
		}
		prefix := w.clients[own.client].c.ID() + ":"
		if own.token != 0 && info.Holders[0].Owner != fmt.Sprintf("%s%d", prefix, own.token) ||
			!strings.HasPrefix(info.Holders[0].Owner, prefix) {
			w.failf("lock: Redis's holder is %s, the model says %v (client id %s)", info.Holders[0].Owner, own, prefix)
		}
		if info.TTL <= 0 {
			w.failf("lock: held with TTL %v", info.TTL)
		}
	}
	if len(info.Queue) != 0 {
		w.failf("lock: the fair lock's queue holds %v with no waiter", info.Queue)
	}
}
