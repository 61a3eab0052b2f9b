package integration

import (
	"context"
	"fmt"
	"sort"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/rwlock"
)

// The model of rwlock: one read-write lock, its handles, its writer and
// its readers with their hold counts.
//
// Without a context owner a handle is a sync.RWMutex: its read holds are
// its own owner's (counted), its write hold a fresh owner's; here both are
// named by the handle. The ownerless rule is taken per side: a handle that
// took a read (write) hold without an owner answers for its own read
// (write) holds; one that never did acts for its Client's.

// rwhandle is one read-write lock handle.
type rwhandle struct {
	id, client   int
	short        bool
	api          *rwlock.RWLock
	tookR, tookW bool
	rbusy        int  // read holds without an owner not unlocked yet (lost or not)
	wbusy        bool // a write hold without an owner not unlocked yet (lost or not)
	seq          int  // when it took its latest hold without an owner
	latest       *mhold
}

func (h *rwhandle) String() string {
	s := fmt.Sprintf("rw%d(c%d)", h.id, h.client)
	if h.short {
		s += "[short lease]"
	}
	return s
}

// rside is one owner's holds on one side.
type rside struct {
	count int64
	hold  *mhold
	seq   int // order of the read holds' acquisitions (latest: largest)
}

// mrw is the model of one read-write lock.
type mrw struct {
	name    string
	handles []*rwhandle
	writer  *lowner
	wside   rside
	readers map[lowner]*rside
	seq     int
}

func (m *mrw) closeClient(int) {}

func (m *mrw) shutdownClient(c int) {
	if m.writer != nil && m.writer.client == c {
		m.writer, m.wside = nil, rside{}
	}
	for o := range m.readers {
		if o.client == c {
			delete(m.readers, o)
		}
	}
}

// actingR returns the handle a read-side call without an owner through h
// acts for: h once it took a read hold without an owner; else the handle
// of h's Client that took a hold without an owner latest and has read
// holds not unlocked yet (lost or not); else h. As for mlock.acting.
func (m *mrw) actingR(h *rwhandle) *rwhandle {
	if h.tookR && !(modelKnown["ownerless-fallback"] && h.rbusy == 0) {
		return h
	}
	return m.latestBusy(h, func(x *rwhandle) bool { return x.rbusy > 0 })
}

// actingW is actingR for the write side.
func (m *mrw) actingW(h *rwhandle) *rwhandle {
	if h.tookW && !(modelKnown["ownerless-fallback"] && !h.wbusy) {
		return h
	}
	return m.latestBusy(h, func(x *rwhandle) bool { return x.wbusy })
}

// latestBusy returns the handle of h's Client, other than h, that took a
// hold without an owner latest among those busy says, or h.
func (m *mrw) latestBusy(h *rwhandle, busy func(*rwhandle) bool) *rwhandle {
	best := h
	for _, x := range m.handles {
		if x != h && x.client == h.client && busy(x) && (best == h || x.seq > best.seq) {
			best = x
		}
	}
	return best
}

func (w *world) rwOwner(h *rwhandle, o int, write bool) lowner {
	if o != noOwner {
		return w.ctxOwner(h.client, o)
	}
	a := w.rw.actingR(h)
	if write {
		a = w.rw.actingW(h)
	}
	return lowner{client: a.client, handle: a.id}
}

func (w *world) drawRWHandle(allowShort bool) *rwhandle {
	m := w.rw
	i := rapid.IntRange(0, len(m.handles)).Draw(w.t, "rw handle")
	if i < len(m.handles) {
		h := m.handles[i]
		if h.short && !allowShort {
			w.t.Skip("a short-lease handle acquires only in rw/LeaseRunsOut")
		}
		return h
	}
	return w.newRWHandle(w.drawClient("client"), false)
}

func (w *world) newRWHandle(c int, short bool) *rwhandle {
	m := w.rw
	var opts []rwlock.Option
	if short {
		opts = append(opts, rwlock.WithLease(modelShortLease))
	}
	h := &rwhandle{id: len(m.handles), client: c, short: short, api: rwlock.New(w.clients[c].c, m.name, opts...)}
	m.handles = append(m.handles, h)
	w.stepf("new rw handle %v", h)
	return h
}

// rwCanTake says whether an acquisition of a side through h with owner o
// succeeds now; err is ErrUpgrade where the write side is refused at once.
func (w *world) rwCanTake(h *rwhandle, o int, write bool) (ok bool, err error) {
	m := w.rw
	if o == noOwner {
		// The handle is a sync.RWMutex: its own holds not unlocked yet,
		// even lost ones, keep it locked.
		if write {
			return !h.wbusy && h.rbusy == 0 && m.writer == nil && len(m.readers) == 0, nil
		}
		return !h.wbusy && m.writer == nil, nil
	}
	own := w.ctxOwner(h.client, o)
	if write {
		if m.writer != nil && *m.writer == own {
			return true, nil
		}
		if m.readers[own] != nil {
			return false, redisync.ErrUpgrade
		}
		return m.writer == nil && len(m.readers) == 0, nil
	}
	return m.writer == nil || *m.writer == own, nil
}

// rwTook records an acquisition of a side through h with owner o.
func (w *world) rwTook(h *rwhandle, o int, ctx context.Context, write bool) {
	m := w.rw
	own := lowner{client: h.client, handle: h.id}
	if o != noOwner {
		own = w.ctxOwner(h.client, o)
	}
	name := fmt.Sprintf("rw %v %s", h, ownerName(o))
	if o == noOwner {
		m.seq++
		h.seq = m.seq
		if write {
			h.wbusy = true
		} else {
			h.rbusy++
		}
	}
	w.call()
	if write {
		if o == noOwner {
			h.tookW = true
		}
		if m.writer != nil {
			m.wside.count++
		} else {
			m.writer = &own
			m.wside = rside{count: 1, hold: w.newHold(name+" write", h.client, h.api.WriteHold(ctx))}
		}
		if got := h.api.WriteHold(ctx); got != m.wside.hold.real {
			w.failf("%s: WriteHold after Lock is %p, not the hold %p", name, got, m.wside.hold.real)
		}
		h.latest = m.wside.hold
		return
	}
	if o == noOwner {
		h.tookR = true
	}
	if m.readers == nil {
		m.readers = make(map[lowner]*rside)
	}
	m.seq++
	s := m.readers[own]
	if s == nil {
		s = &rside{hold: w.newHold(name+" read", h.client, h.api.ReadHold(ctx))}
		m.readers[own] = s
	}
	s.count++
	s.seq = m.seq
	if got := h.api.ReadHold(ctx); got != s.hold.real {
		w.failf("%s: ReadHold after RLock is %p, not the hold %p", name, got, s.hold.real)
	}
	h.latest = s.hold
}

func (w *world) rwActions() map[string]func() {
	return map[string]func(){
		"rw/TryLock":        func() { w.rwTry(true) },
		"rw/TryRLock":       func() { w.rwTry(false) },
		"rw/Lock":           func() { w.rwLock(true) },
		"rw/RLock":          func() { w.rwLock(false) },
		"rw/Unlock":         func() { w.rwUnlock(true) },
		"rw/RUnlock":        func() { w.rwUnlock(false) },
		"rw/ForceUnlock":    w.rwForceUnlock,
		"rw/Query":          w.rwQuery,
		"rw/LeaseRunsOut":   w.rwLeaseRunsOut,
		"rw/WaitForRelease": w.rwWaitForRelease,
	}
}

func sideName(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

func (w *world) rwTry(write bool) {
	h := w.drawRWHandle(false)
	o := w.drawOwner("owner")
	ctx := w.ownerCtx(o)
	ok, werr := w.rwCanTake(h, o, write)
	wait := time.Duration(0)
	if !ok && rapid.Bool().Draw(w.t, "wait") {
		wait = modelBusyWait
	}
	w.stepf("rw %v %s: Try %s (%v)", h, ownerName(o), sideName(write), wait)
	w.call()
	var got bool
	var err error
	if write {
		got, err = h.api.TryLock(ctx, wait)
	} else {
		got, err = h.api.TryRLock(ctx, wait)
	}
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("rw Try on a closed Client", err, cerr)
		return
	}
	w.wantErr(fmt.Sprintf("rw %v %s: Try %s", h, ownerName(o), sideName(write)), err, werr)
	if got != ok {
		w.failf("rw %v %s: Try %s = %v, the model says %v (writer %v, readers %v)", h, ownerName(o), sideName(write), got, ok, w.rw.writer, w.rw.readerList())
	}
	if ok {
		w.rwTook(h, o, ctx, write)
	}
}

func (w *world) rwLock(write bool) {
	h := w.drawRWHandle(false)
	o := w.drawOwner("owner")
	ok, werr := w.rwCanTake(h, o, write)
	if !ok && werr == nil && !w.clients[h.client].closed {
		w.t.Skip("it would wait: rw/WaitForRelease covers it")
	}
	ctx := w.ownerCtx(o)
	w.stepf("rw %v %s: %s Lock", h, ownerName(o), sideName(write))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w.call()
	var err error
	if write {
		err = h.api.Lock(cctx)
	} else {
		err = h.api.RLock(cctx)
	}
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("rw Lock on a closed Client", err, cerr)
		return
	}
	w.wantErr(fmt.Sprintf("rw %v %s: %s Lock", h, ownerName(o), sideName(write)), err, werr)
	if ok {
		w.rwTook(h, o, ctx, write)
	}
}

func (w *world) rwUnlock(write bool) {
	h := w.drawRWHandle(true)
	o := w.drawOwner("owner")
	w.stepf("rw %v %s: %s Unlock", h, ownerName(o), sideName(write))
	w.rwUnlockAs(h, o, write)
}

func (w *world) rwUnlockAs(h *rwhandle, o int, write bool) {
	w.t.Helper()
	m := w.rw
	own := w.rwOwner(h, o, write)
	what := fmt.Sprintf("rw %v %s: %s Unlock (acting for %v; writer %v, readers %v)", h, ownerName(o), sideName(write), own, m.writer, m.readerList())
	w.call()
	var err error
	if write {
		err = h.api.Unlock(w.ownerCtx(o))
	} else {
		err = h.api.RUnlock(w.ownerCtx(o))
	}
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("rw Unlock on a closed Client", err, cerr)
		return
	}
	if o == noOwner {
		a := m.handles[own.handle]
		if write {
			a.wbusy = false
		} else if a.rbusy > 0 {
			a.rbusy--
		}
	}
	if write {
		if m.writer == nil || *m.writer != own {
			w.wantErr(what, err, redisync.ErrNotHeld)
			return
		}
		w.wantErr(what, err, nil)
		if m.wside.count--; m.wside.count == 0 {
			m.wside.hold.end(holdReleased)
			m.writer, m.wside = nil, rside{}
		}
		return
	}
	s := m.readers[own]
	if s == nil {
		w.wantErr(what, err, redisync.ErrNotHeld)
		return
	}
	w.wantErr(what, err, nil)
	if s.count--; s.count == 0 {
		s.hold.end(holdReleased)
		delete(m.readers, own)
	}
}

// readerList lists the readers for messages.
func (m *mrw) readerList() []string {
	var out []string
	for o, s := range m.readers {
		out = append(out, fmt.Sprintf("%v:%d", o, s.count))
	}
	sort.Strings(out)
	return out
}

func (w *world) rwForceUnlock() {
	h := w.drawRWHandle(true)
	m := w.rw
	w.stepf("rw %v: ForceUnlock", h)
	w.call()
	got, err := h.api.ForceUnlock(w.ctx)
	if cerr := w.closedErr(h.client); cerr != nil {
		w.wantErr("ForceUnlock on a closed Client", err, cerr)
		return
	}
	w.wantErr("rw ForceUnlock", err, nil)
	if want := m.writer != nil || len(m.readers) > 0; got != want {
		w.failf("rw %v: ForceUnlock = %v, the model says the lock existed: %v", h, got, want)
	}
	w.rwLoseAll()
}

// rwLoseAll ends every hold of the lock as lost.
func (w *world) rwLoseAll() {
	m := w.rw
	if m.writer != nil {
		m.wside.hold.end(holdLost)
	}
	for _, s := range m.readers {
		s.hold.end(holdLost)
	}
	m.writer, m.wside, m.readers = nil, rside{}, nil
}

func (w *world) rwQuery() {
	h := w.drawRWHandle(true)
	o := w.drawOwner("owner")
	ctx := w.ownerCtx(o)
	m := w.rw
	cerr := w.closedErr(h.client)
	w.stepf("rw %v %s: IsReadLocked, IsWriteLocked, ReadHoldCount, WriteHoldCount, ReadHold, WriteHold", h, ownerName(o))
	w.call()
	rl, err := h.api.IsReadLocked(ctx)
	w.wantErr("IsReadLocked", err, cerr)
	if want := m.writer == nil && len(m.readers) > 0; cerr == nil && rl != want {
		w.failf("rw %v: IsReadLocked = %v, the model says %v", h, rl, want)
	}
	w.call()
	wl, err := h.api.IsWriteLocked(ctx)
	w.wantErr("IsWriteLocked", err, cerr)
	if want := m.writer != nil; cerr == nil && wl != want {
		w.failf("rw %v: IsWriteLocked = %v, the model says %v", h, wl, want)
	}
	rown, wown := w.rwOwner(h, o, false), w.rwOwner(h, o, true)
	var rs, ws *rside
	if s := m.readers[rown]; s != nil {
		rs = s
	}
	if m.writer != nil && *m.writer == wown {
		ws = &m.wside
	}
	w.call()
	rc, err := h.api.ReadHoldCount(ctx)
	w.wantErr("ReadHoldCount", err, cerr)
	if want := sideCount(rs); cerr == nil && rc != want {
		w.failf("rw %v %s: ReadHoldCount = %d, the model says %d (acting for %v; readers %v)", h, ownerName(o), rc, want, rown, m.readerList())
	}
	w.call()
	wc, err := h.api.WriteHoldCount(ctx)
	w.wantErr("WriteHoldCount", err, cerr)
	if want := sideCount(ws); cerr == nil && wc != want {
		w.failf("rw %v %s: WriteHoldCount = %d, the model says %d (acting for %v; writer %v)", h, ownerName(o), wc, want, wown, m.writer)
	}
	if cerr != nil {
		return
	}
	w.call()
	w.compareHold(fmt.Sprintf("rw %v %s: ReadHold", h, ownerName(o)), h.api.ReadHold(ctx), rs)
	w.call()
	w.compareHold(fmt.Sprintf("rw %v %s: WriteHold", h, ownerName(o)), h.api.WriteHold(ctx), ws)
}

func sideCount(s *rside) int64 {
	if s == nil {
		return 0
	}
	return s.count
}

// compareHold compares a Hold a handle gave with the model's.
func (w *world) compareHold(what string, got *redisync.Hold, s *rside) {
	w.t.Helper()
	switch {
	case s != nil && got != s.hold.real:
		w.failf("%s = %p, the model says the hold %s (%p)", what, got, s.hold.name, s.hold.real)
	case s == nil && got != nil:
		w.failf("%s = %p (Err %v), the model says none", what, got, got.Err())
	}
}

func (w *world) rwLeaseRunsOut() {
	m := w.rw
	if m.writer != nil || len(m.readers) > 0 {
		w.t.Skip("the lock is taken")
	}
	c := rapid.SampledFrom(w.openClients()).Draw(w.t, "client")
	h := w.newRWHandle(c, true)
	o := w.drawOwner("owner")
	write := rapid.Bool().Draw(w.t, "write")
	ctx := w.ownerCtx(o)
	w.stepf("rw %v %s: Try %s (0), then sleep past its lease", h, ownerName(o), sideName(write))
	w.call()
	var ok bool
	var err error
	if write {
		ok, err = h.api.TryLock(ctx, 0)
	} else {
		ok, err = h.api.TryRLock(ctx, 0)
	}
	w.wantErr("rw Try", err, nil)
	if !ok {
		w.failf("rw %v: Try %s on the free lock = false", h, sideName(write))
	}
	w.rwTook(h, o, ctx, write)
	time.Sleep(3 * modelShortLease)
	w.rwLoseAll()
}

// rwWaitForRelease has a caller wait for a side in a goroutine, releases
// every hold of the lock, and expects the waiter to get the side.
func (w *world) rwWaitForRelease() {
	m := w.rw
	if m.writer == nil && len(m.readers) == 0 {
		w.t.Skip("the lock is free")
	}
	if m.writer != nil && w.clients[m.writer.client].closed {
		w.t.Skip("a holder's Client is closed")
	}
	for o := range m.readers {
		if w.clients[o.client].closed {
			w.t.Skip("a holder's Client is closed")
		}
	}
	h := w.drawRWHandle(false)
	o := w.drawOwner("waiter owner")
	write := rapid.Bool().Draw(w.t, "write")
	if w.clients[h.client].closed {
		w.t.Skip("the waiter's Client is closed")
	}
	if ok, err := w.rwCanTake(h, o, write); ok || err != nil {
		w.t.Skip("the waiter would not wait")
	}
	// The waiter must not be one of the holders (it would wait for itself).
	if o != noOwner {
		own := w.ctxOwner(h.client, o)
		if m.readers[own] != nil || (m.writer != nil && *m.writer == own) {
			w.t.Skip("the waiter holds")
		}
	} else if h.rbusy > 0 || h.wbusy {
		w.t.Skip("the waiter holds")
	}
	ctx := w.ownerCtx(o)
	w.stepf("rw %v %s: %s Lock in a goroutine; every holder releases (writer %v, readers %v)", h, ownerName(o), sideName(write), m.writer, m.readerList())
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	w.call()
	go func() {
		if write {
			res <- h.api.Lock(wctx)
		} else {
			res <- h.api.RLock(wctx)
		}
	}()
	if err, done := waitResult(res, modelStillWaiting); done {
		w.failf("rw %v %s: %s Lock returned %v while the lock was taken", h, ownerName(o), sideName(write), err)
	}
	// Every holder releases: the writer, then the readers.
	for m.writer != nil {
		rh, ro := w.rwReleaserOf(*m.writer)
		w.rwUnlockAs(rh, ro, true)
	}
	for len(m.readers) > 0 {
		for own := range m.readers {
			rh, ro := w.rwReleaserOf(own)
			w.rwUnlockAs(rh, ro, false)
			break
		}
	}
	err, done := waitResult(res, modelWakeWithin)
	if !done {
		cancel()
		<-res
		w.failf("rw %v %s: %s Lock still waiting %v after the releases", h, ownerName(o), sideName(write), modelWakeWithin)
	}
	w.wantErr("rw Lock after the releases", err, nil)
	w.rwTook(h, o, ctx, write)
}

func (w *world) rwReleaserOf(own lowner) (*rwhandle, int) {
	m := w.rw
	if own.token == 0 {
		return m.handles[own.handle], noOwner
	}
	o := 0
	for i, x := range w.owners {
		if x.token == own.token {
			o = i
		}
	}
	for _, h := range m.handles {
		if h.client == own.client && !h.short {
			return h, o
		}
	}
	return w.newRWHandle(own.client, false), o
}

func (w *world) checkRW() {
	m := w.rw
	for _, h := range m.handles {
		if h.latest == nil {
			continue // a handle that never acquired: which side it follows is not said
		}
		w.call()
		w.checkHandle(fmt.Sprintf("rw handle %v", h), h.api.Done(), h.api.Err(), h.latest)
	}
	w.call()
	info, err := rwlock.New(w.obs, m.name).Inspect(w.ctx)
	if err != nil {
		w.failf("rw Inspect: %v", err)
	}
	wantMode := ""
	switch {
	case m.writer != nil:
		wantMode = "write"
	case len(m.readers) > 0:
		wantMode = "read"
	}
	if info.Mode != wantMode {
		w.failf("rw: Redis's mode is %q, the model says %q (writer %v, readers %v)", info.Mode, wantMode, m.writer, m.readerList())
	}
	if m.writer != nil && (info.Writer == nil || info.Writer.Count != m.wside.count) {
		w.failf("rw: Redis's writer is %+v, the model says count %d", info.Writer, m.wside.count)
	}
	var counts []int64
	for _, s := range m.readers {
		counts = append(counts, s.count)
	}
	var got []int64
	for _, r := range info.Readers {
		got = append(got, r.Count)
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i] < counts[j] })
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if fmt.Sprint(counts) != fmt.Sprint(got) {
		w.failf("rw: Redis's readers are %+v, the model says %v", info.Readers, m.readerList())
	}
}
