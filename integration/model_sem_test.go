package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/semaphore"
)

// The models of the counted semaphore, the expirable semaphore and the
// latch. They have no owners: any Client's handle acts on the same count.

// msem is the model of a counted semaphore.
type msem struct {
	name   string
	exists bool
	avail  int64
}

func (w *world) semActions() map[string]func() {
	return map[string]func(){
		"sem/TrySetPermits":   w.semTrySet,
		"sem/AddPermits":      w.semAdd,
		"sem/TryAcquire":      w.semTryAcquire,
		"sem/Release":         w.semRelease,
		"sem/ReleaseIfExists": w.semReleaseIfExists,
		"sem/Drain":           w.semDrain,
		"sem/Delete":          w.semDelete,
		"sem/AcquireWaits":    w.semAcquireWaits,
		"sem/RaceTryAcquire":  w.semRaceTryAcquire,
	}
}

// semRaceTryAcquire has 2 to 4 goroutines TryAcquire(1) at once, through
// drawn Clients: exactly as many get a permit as were available (at most
// one each).
func (w *world) semRaceTryAcquire() {
	m := w.sem
	n := rapid.IntRange(2, 4).Draw(w.t, "goroutines")
	var cs []int
	for range n {
		cs = append(cs, rapid.SampledFrom(w.openClients()).Draw(w.t, "client"))
	}
	w.stepf("sem: %d goroutines on Clients %v TryAcquire(1, 0) at once, %d available", n, cs, m.avail)
	oks := make([]bool, n)
	errs := make([]error, n)
	done := make(chan struct{})
	start := make(chan struct{})
	for i, c := range cs {
		s := semaphore.New(w.clients[c].c, m.name)
		w.call()
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			oks[i], errs[i] = s.TryAcquire(w.ctx, 1, 0)
		}()
	}
	close(start)
	for range cs {
		<-done
	}
	got := int64(0)
	for i := range cs {
		w.wantErr("a racing TryAcquire", errs[i], nil)
		if oks[i] {
			got++
		}
	}
	want := min(max(m.avail, 0), int64(n))
	if modelKnown["zero-wait-line"] && got < want && got > 0 {
		want = got // fewer, when racers of one Client met in its line
	}
	if got != want {
		w.failf("sem: %d of %d racing TryAcquire(1) got a permit, the model says %d (%d available)", got, n, want, m.avail)
	}
	m.avail -= got
}

// semHandle draws a Client and returns a new handle on it (handles of a
// semaphore hold nothing of their own).
func (w *world) semHandle() (*semaphore.Semaphore, int) {
	c := w.drawClient("client")
	return semaphore.New(w.clients[c].c, w.sem.name), c
}

func (w *world) semTrySet() {
	s, c := w.semHandle()
	n := rapid.Int64Range(0, 3).Draw(w.t, "n")
	w.stepf("sem c%d: TrySetPermits(%d)", c, n)
	w.call()
	got, err := s.TrySetPermits(w.ctx, n)
	if w.semClosed(c, err) {
		return
	}
	m := w.sem
	if got == m.exists {
		w.failf("sem: TrySetPermits = %v, the model says the semaphore exists: %v (%d available)", got, m.exists, m.avail)
	}
	if !m.exists {
		m.exists, m.avail = true, n
	}
}

// semClosed checks err against the Client's state: ErrClosed when it is
// closed (and reports true), else nil.
func (w *world) semClosed(c int, err error) bool {
	w.t.Helper()
	cerr := w.closedErr(c)
	w.wantErr("semaphore call", err, cerr)
	return cerr != nil
}

func (w *world) semAdd() {
	s, c := w.semHandle()
	n := rapid.SampledFrom([]int64{-2, -1, 1, 2, 3}).Draw(w.t, "n")
	w.stepf("sem c%d: AddPermits(%d)", c, n)
	w.call()
	if w.semClosed(c, s.AddPermits(w.ctx, n)) {
		return
	}
	w.sem.exists = true
	w.sem.avail += n
}

func (w *world) semTryAcquire() {
	s, c := w.semHandle()
	n := rapid.Int64Range(1, 3).Draw(w.t, "n")
	m := w.sem
	ok := m.avail >= n
	wait := time.Duration(0)
	if !ok && rapid.Bool().Draw(w.t, "wait") {
		wait = modelBusyWait
	}
	w.stepf("sem c%d: TryAcquire(%d, %v)", c, n, wait)
	w.call()
	got, err := s.TryAcquire(w.ctx, n, wait)
	if w.semClosed(c, err) {
		return
	}
	if got != ok {
		w.failf("sem: TryAcquire(%d) = %v, the model says %v (%d available)", n, got, ok, m.avail)
	}
	if ok {
		m.avail -= n
	}
}

func (w *world) semRelease() {
	s, c := w.semHandle()
	n := rapid.Int64Range(1, 3).Draw(w.t, "n")
	w.stepf("sem c%d: Release(%d)", c, n)
	w.call()
	if w.semClosed(c, s.Release(w.ctx, n)) {
		return
	}
	w.sem.exists = true
	w.sem.avail += n
}

func (w *world) semReleaseIfExists() {
	s, c := w.semHandle()
	n := rapid.Int64Range(1, 3).Draw(w.t, "n")
	w.stepf("sem c%d: ReleaseIfExists(%d)", c, n)
	w.call()
	got, err := s.ReleaseIfExists(w.ctx, n)
	if w.semClosed(c, err) {
		return
	}
	m := w.sem
	if got != m.exists {
		w.failf("sem: ReleaseIfExists = %v, the model says the semaphore exists: %v", got, m.exists)
	}
	if m.exists {
		m.avail += n
	}
}

func (w *world) semDrain() {
	s, c := w.semHandle()
	w.stepf("sem c%d: DrainPermits", c)
	w.call()
	got, err := s.DrainPermits(w.ctx)
	if w.semClosed(c, err) {
		return
	}
	m := w.sem
	if got != m.avail {
		w.failf("sem: DrainPermits = %d, the model says %d", got, m.avail)
	}
	m.avail = 0
}

func (w *world) semDelete() {
	s, c := w.semHandle()
	w.stepf("sem c%d: Delete", c)
	w.call()
	got, err := s.Delete(w.ctx)
	if w.semClosed(c, err) {
		return
	}
	m := w.sem
	if got != m.exists {
		w.failf("sem: Delete = %v, the model says the semaphore exists: %v", got, m.exists)
	}
	m.exists, m.avail = false, 0
}

// semAcquireWaits has Acquire(n) wait in a goroutine while fewer than n
// permits are available, releases the missing permits through another
// Client, and expects the Acquire to return.
func (w *world) semAcquireWaits() {
	m := w.sem
	open := w.openClients()
	n := rapid.Int64Range(1, 3).Draw(w.t, "n")
	if m.avail >= n {
		w.t.Skip("Acquire would not wait")
	}
	wc := rapid.SampledFrom(open).Draw(w.t, "waiter client")
	rc := rapid.SampledFrom(open).Draw(w.t, "releaser client")
	s := semaphore.New(w.clients[wc].c, m.name)
	w.stepf("sem c%d: Acquire(%d) in a goroutine; c%d releases %d", wc, n, rc, n-m.avail)
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	w.call()
	go func() { res <- s.Acquire(ctx, n) }()
	if err, done := waitResult(res, modelStillWaiting); done {
		w.failf("sem: Acquire(%d) returned %v with %d available", n, err, m.avail)
	}
	w.call()
	w.wantErr("sem Release", semaphore.New(w.clients[rc].c, m.name).Release(w.ctx, n-m.avail), nil)
	m.exists = true
	err, done := waitResult(res, modelWakeWithin)
	if !done {
		cancel()
		<-res
		w.failf("sem: Acquire(%d) still waiting %v after the release", n, modelWakeWithin)
	}
	w.wantErr("sem Acquire after the release", err, nil)
	m.avail = 0
}

func (w *world) checkSem() {
	w.call()
	got, err := semaphore.New(w.obs, w.sem.name).AvailablePermits(w.ctx)
	w.wantErr("sem AvailablePermits", err, nil)
	if got != w.sem.avail {
		w.failf("sem: AvailablePermits = %d, the model says %d", got, w.sem.avail)
	}
}

// mxsem is the model of an expirable semaphore.
type mxsem struct {
	name   string
	exists bool
	avail  int64
	ids    map[string]bool // acquired ids: true never expires
	dead   []string        // released, expired or deleted ids
}

func (w *world) xsemActions() map[string]func() {
	return map[string]func(){
		"xsem/TrySetPermits": w.xsemTrySet,
		"xsem/SetPermits":    w.xsemSet,
		"xsem/AddPermits":    w.xsemAdd,
		"xsem/TryAcquireN":   w.xsemTryAcquire,
		"xsem/Release":       w.xsemRelease,
		"xsem/Lease":         w.xsemLease,
		"xsem/Delete":        w.xsemDelete,
		"xsem/PermitExpires": w.xsemExpires,
		"xsem/AcquireWaits":  w.xsemAcquireWaits,
	}
}

// xsemAcquireWaits has AcquireN(n) wait in a goroutine while fewer than n
// permits are available, then gives permits back through another Client
// (releasing held ids when there are, else AddPermits), and expects the
// AcquireN to return n ids.
func (w *world) xsemAcquireWaits() {
	m := w.xsem
	open := w.openClients()
	n := rapid.Int64Range(1, 2).Draw(w.t, "n")
	if m.avail >= n {
		w.t.Skip("AcquireN would not wait")
	}
	wc := rapid.SampledFrom(open).Draw(w.t, "waiter client")
	rc := rapid.SampledFrom(open).Draw(w.t, "releaser client")
	missing := n - m.avail
	live := m.liveIDs()
	release := live[:min(int64(len(live)), missing)]
	add := missing - int64(len(release))
	w.stepf("xsem c%d: AcquireN(%d) in a goroutine; c%d releases %d ids and adds %d permits", wc, n, rc, len(release), add)
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	type result struct {
		ids []string
		err error
	}
	res := make(chan result, 1)
	w.call()
	go func() {
		ids, err := semaphore.NewExpirable(w.clients[wc].c, m.name).AcquireN(ctx, n, time.Minute)
		res <- result{ids, err}
	}()
	select {
	case r := <-res:
		w.failf("xsem: AcquireN(%d) returned %v with %d available", n, r.err, m.avail)
	case <-time.After(modelStillWaiting):
	}
	s := semaphore.NewExpirable(w.clients[rc].c, m.name)
	if len(release) > 0 {
		w.call()
		w.wantErr("xsem Release", s.Release(w.ctx, release...), nil)
		for _, id := range release {
			delete(m.ids, id)
			m.dead = append(m.dead, id)
		}
	}
	if add > 0 {
		w.call()
		w.wantErr("xsem AddPermits", s.AddPermits(w.ctx, add), nil)
		m.exists = true
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(modelWakeWithin):
		cancel()
		<-res
		w.failf("xsem: AcquireN(%d) still waiting %v after the permits came back", n, modelWakeWithin)
	}
	w.wantErr("xsem AcquireN after the release", r.err, nil)
	if int64(len(r.ids)) != n {
		w.failf("xsem: AcquireN(%d) gave %d ids", n, len(r.ids))
	}
	m.avail = 0
	if m.ids == nil {
		m.ids = make(map[string]bool)
	}
	for _, id := range r.ids {
		m.ids[id] = false
	}
}

func (w *world) xsemHandle() (*semaphore.ExpirableSemaphore, int) {
	c := w.drawClient("client")
	return semaphore.NewExpirable(w.clients[c].c, w.xsem.name), c
}

func (w *world) xsemTrySet() {
	s, c := w.xsemHandle()
	n := rapid.Int64Range(0, 3).Draw(w.t, "n")
	w.stepf("xsem c%d: TrySetPermits(%d)", c, n)
	w.call()
	got, err := s.TrySetPermits(w.ctx, n)
	if w.semClosed(c, err) {
		return
	}
	m := w.xsem
	if got == m.exists {
		w.failf("xsem: TrySetPermits = %v, the model says the semaphore exists: %v", got, m.exists)
	}
	if !m.exists {
		m.exists, m.avail = true, n
	}
}

func (w *world) xsemSet() {
	s, c := w.xsemHandle()
	n := rapid.Int64Range(0, 4).Draw(w.t, "n")
	w.stepf("xsem c%d: SetPermits(%d)", c, n)
	w.call()
	if w.semClosed(c, s.SetPermits(w.ctx, n)) {
		return
	}
	m := w.xsem
	m.exists, m.avail = true, n-int64(len(m.ids))
}

func (w *world) xsemAdd() {
	s, c := w.xsemHandle()
	n := rapid.SampledFrom([]int64{-2, -1, 1, 2, 3}).Draw(w.t, "n")
	w.stepf("xsem c%d: AddPermits(%d)", c, n)
	w.call()
	if w.semClosed(c, s.AddPermits(w.ctx, n)) {
		return
	}
	w.xsem.exists = true
	w.xsem.avail += n
}

func (w *world) xsemTryAcquire() {
	s, c := w.xsemHandle()
	n := rapid.Int64Range(1, 2).Draw(w.t, "n")
	never := rapid.Bool().Draw(w.t, "lease never expires")
	lease := time.Duration(0)
	if !never {
		lease = time.Minute
	}
	m := w.xsem
	ok := m.avail >= n
	wait := time.Duration(0)
	if !ok && rapid.Bool().Draw(w.t, "wait") {
		wait = modelBusyWait
	}
	w.stepf("xsem c%d: TryAcquireN(%d, %v, lease %v)", c, n, wait, lease)
	w.call()
	ids, got, err := s.TryAcquireN(w.ctx, n, wait, lease)
	if w.semClosed(c, err) {
		return
	}
	if got != ok {
		w.failf("xsem: TryAcquireN(%d) = %v, the model says %v (%d available)", n, got, ok, m.avail)
	}
	if !ok {
		return
	}
	if int64(len(ids)) != n {
		w.failf("xsem: TryAcquireN(%d) gave %d ids", n, len(ids))
	}
	m.avail -= n
	if m.ids == nil {
		m.ids = make(map[string]bool)
	}
	for _, id := range ids {
		if _, dup := m.ids[id]; dup || len(id) != 32 {
			w.failf("xsem: TryAcquireN gave id %q (a duplicate, or not 32 hex characters)", id)
		}
		m.ids[id] = never
	}
}

// xsemDrawIDs draws ids to release: live ones, dead ones, and an unknown
// one, each at most once.
func (w *world) xsemDrawIDs() []string {
	m := w.xsem
	pool := m.liveIDs()
	pool = append(pool, m.dead...)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	pool = append(pool, hex.EncodeToString(b))
	picked := rapid.SliceOfNDistinct(rapid.IntRange(0, len(pool)-1), 1, 3, rapid.ID[int]).Draw(w.t, "ids")
	var ids []string
	for _, i := range picked {
		ids = append(ids, pool[i])
	}
	return ids
}

func (m *mxsem) liveIDs() []string {
	var ids []string
	for id := range m.ids {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (w *world) xsemRelease() {
	s, c := w.xsemHandle()
	ids := w.xsemDrawIDs()
	m := w.xsem
	all := true
	for _, id := range ids {
		if _, ok := m.ids[id]; !ok {
			all = false
		}
	}
	w.stepf("xsem c%d: Release(%d ids, all live: %v)", c, len(ids), all)
	w.call()
	err := s.Release(w.ctx, ids...)
	if cerr := w.closedErr(c); cerr != nil {
		w.wantErr("xsem Release on a closed Client", err, cerr)
		return
	}
	if !all {
		w.wantErr("xsem Release with an id not held", err, redisync.ErrNotHeld)
		return
	}
	w.wantErr("xsem Release", err, nil)
	for _, id := range ids {
		delete(m.ids, id)
		m.dead = append(m.dead, id)
	}
	m.avail += int64(len(ids))
}

// xsemLease reads LeaseTime, then UpdateLease to a minute.
func (w *world) xsemLease() {
	s, c := w.xsemHandle()
	m := w.xsem
	pool := append(m.liveIDs(), m.dead...)
	if len(pool) == 0 {
		w.t.Skip("no id")
	}
	id := rapid.SampledFrom(pool).Draw(w.t, "id")
	never, live := m.ids[id]
	w.stepf("xsem c%d: LeaseTime, UpdateLease(1m) of a permit (live: %v, never expires: %v)", c, live, never)
	w.call()
	d, err := s.LeaseTime(w.ctx, id)
	cerr := w.closedErr(c)
	if cerr != nil {
		w.wantErr("LeaseTime on a closed Client", err, cerr)
		return
	}
	switch {
	case !live:
		w.wantErr("xsem LeaseTime of a permit not held", err, redisync.ErrNotHeld)
	case never:
		w.wantErr("xsem LeaseTime", err, nil)
		if d != -1 {
			w.failf("xsem: LeaseTime of a permit that never expires = %v, want -1", d)
		}
	default:
		w.wantErr("xsem LeaseTime", err, nil)
		if d <= 0 || d > time.Minute {
			w.failf("xsem: LeaseTime of a permit with a minute's lease = %v", d)
		}
	}
	w.call()
	ok, err := s.UpdateLease(w.ctx, id, time.Minute)
	w.wantErr("xsem UpdateLease", err, nil)
	if ok != live {
		w.failf("xsem: UpdateLease = %v, the model says the permit is held: %v", ok, live)
	}
	if live {
		m.ids[id] = false
	}
}

func (w *world) xsemDelete() {
	s, c := w.xsemHandle()
	w.stepf("xsem c%d: Delete", c)
	w.call()
	got, err := s.Delete(w.ctx)
	if w.semClosed(c, err) {
		return
	}
	m := w.xsem
	if want := m.exists || len(m.ids) > 0; got != want {
		w.failf("xsem: Delete = %v, the model says the semaphore exists: %v", got, want)
	}
	m.dead = append(m.dead, m.liveIDs()...)
	m.exists, m.avail, m.ids = false, 0, nil
}

// xsemExpires acquires a permit with a 30 ms lease and sleeps past it: the
// permit returns by itself.
func (w *world) xsemExpires() {
	m := w.xsem
	if m.avail < 1 {
		w.t.Skip("no permit available")
	}
	c := rapid.SampledFrom(w.openClients()).Draw(w.t, "client")
	s := semaphore.NewExpirable(w.clients[c].c, m.name)
	w.stepf("xsem c%d: TryAcquire(0, lease %v), then sleep past it", c, modelShortLease)
	w.call()
	id, ok, err := s.TryAcquire(w.ctx, 0, modelShortLease)
	w.wantErr("xsem TryAcquire", err, nil)
	if !ok {
		w.failf("xsem: TryAcquire with %d available = false", m.avail)
	}
	time.Sleep(3 * modelShortLease)
	m.dead = append(m.dead, id)
}

func (w *world) checkXSem() {
	s := semaphore.NewExpirable(w.obs, w.xsem.name)
	m := w.xsem
	w.call()
	avail, err := s.AvailablePermits(w.ctx)
	w.wantErr("xsem AvailablePermits", err, nil)
	w.call()
	acq, err := s.AcquiredPermits(w.ctx)
	w.wantErr("xsem AcquiredPermits", err, nil)
	w.call()
	total, err := s.Permits(w.ctx)
	w.wantErr("xsem Permits", err, nil)
	if avail != m.avail || acq != int64(len(m.ids)) || total != avail+acq {
		w.failf("xsem: available %d, acquired %d, permits %d; the model says %d available, %d acquired", avail, acq, total, m.avail, len(m.ids))
	}
}

// mlatch is the model of a latch: its count, 0 when not set.
type mlatch struct {
	name  string
	count int64
}

func (w *world) latchActions() map[string]func() {
	return map[string]func(){
		"latch/TrySetCount": w.latchTrySet,
		"latch/CountDown":   w.latchCountDown,
		"latch/TryWait":     w.latchTryWait,
		"latch/Delete":      w.latchDelete,
		"latch/WaitOpens":   w.latchWaitOpens,
	}
}

func (w *world) latchHandle() (*countdown.Latch, int) {
	c := w.drawClient("client")
	return countdown.New(w.clients[c].c, w.latch.name), c
}

func (w *world) latchTrySet() {
	l, c := w.latchHandle()
	n := rapid.Int64Range(1, 3).Draw(w.t, "n")
	w.stepf("latch c%d: TrySetCount(%d)", c, n)
	w.call()
	got, err := l.TrySetCount(w.ctx, n)
	if w.semClosed(c, err) {
		return
	}
	m := w.latch
	if want := m.count == 0; got != want {
		w.failf("latch: TrySetCount = %v, the model says %v (count %d)", got, want, m.count)
	}
	if m.count == 0 {
		m.count = n
	}
}

func (w *world) latchCountDown() {
	l, c := w.latchHandle()
	w.stepf("latch c%d: CountDown", c)
	w.call()
	if w.semClosed(c, l.CountDown(w.ctx)) {
		return
	}
	if w.latch.count > 0 {
		w.latch.count--
	}
}

func (w *world) latchTryWait() {
	l, c := w.latchHandle()
	m := w.latch
	wait := time.Duration(0)
	if m.count > 0 && rapid.Bool().Draw(w.t, "wait") {
		wait = modelBusyWait
	}
	w.stepf("latch c%d: TryWait(%v)", c, wait)
	w.call()
	got, err := l.TryWait(w.ctx, wait)
	if w.semClosed(c, err) {
		return
	}
	if want := m.count == 0; got != want {
		w.failf("latch: TryWait = %v, the model says %v (count %d)", got, want, m.count)
	}
}

func (w *world) latchDelete() {
	l, c := w.latchHandle()
	w.stepf("latch c%d: Delete", c)
	w.call()
	got, err := l.Delete(w.ctx)
	if w.semClosed(c, err) {
		return
	}
	if want := w.latch.count > 0; got != want {
		w.failf("latch: Delete = %v, the model says the latch is set: %v", got, want)
	}
	w.latch.count = 0
}

// latchWaitOpens has Wait block in a goroutine while the count is above
// zero, counts it down to zero through another Client, and expects Wait
// to return nil.
func (w *world) latchWaitOpens() {
	m := w.latch
	if m.count == 0 {
		w.t.Skip("the latch is open")
	}
	open := w.openClients()
	wc := rapid.SampledFrom(open).Draw(w.t, "waiter client")
	rc := rapid.SampledFrom(open).Draw(w.t, "counting client")
	w.stepf("latch c%d: Wait in a goroutine; c%d counts down %d times", wc, rc, m.count)
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	w.call()
	go func() { res <- countdown.New(w.clients[wc].c, m.name).Wait(ctx) }()
	if err, done := waitResult(res, modelStillWaiting); done {
		w.failf("latch: Wait returned %v with count %d", err, m.count)
	}
	l := countdown.New(w.clients[rc].c, m.name)
	if rapid.Bool().Draw(w.t, "open with Delete") {
		w.stepf("latch c%d: Delete instead", rc)
		w.call()
		ok, err := l.Delete(w.ctx)
		w.wantErr("latch Delete", err, nil)
		if !ok {
			w.failf("latch: Delete of a set latch = false")
		}
		m.count = 0
	}
	for m.count > 0 {
		w.call()
		w.wantErr("latch CountDown", l.CountDown(w.ctx), nil)
		m.count--
	}
	err, done := waitResult(res, modelWakeWithin)
	if !done {
		cancel()
		<-res
		w.failf("latch: Wait still waiting %v after the count reached zero", modelWakeWithin)
	}
	w.wantErr("latch Wait after the count reached zero", err, nil)
}

func (w *world) checkLatch() {
	w.call()
	got, err := countdown.New(w.obs, w.latch.name).Count(w.ctx)
	w.wantErr("latch Count", err, nil)
	if got != w.latch.count {
		w.failf("latch: Count = %d, the model says %d", got, w.latch.count)
	}
}
