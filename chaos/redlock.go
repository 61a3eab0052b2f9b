package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// The RedLock of the workload: a lock of one name on redlockMasters
// independent masters (standalone servers, no replication between them),
// each reached by every client through a proxy of its own and a redisync
// Client of its own, held when a majority is (multilock.NewRedLock). The
// RedLock is judged as one lock (redlockName: the lock model, the belief
// check); its faults take one master away at a time, a minority: cut from
// every client for longer than the lease (redlock-cut), from one client
// only (redlock-cut-one), or stopped (redlock-sigstop). Every topology but
// netns has it (the netns clients reach nothing outside their namespaces).
const (
	redlockName    = "chaos:redlock"
	redlockMasters = 3
)

// The RedLock's faults.
const (
	FaultRedlockCut    FaultKind = "redlock-cut"     // one RedLock master cut from every client, longer than the lease
	FaultRedlockCutOne FaultKind = "redlock-cut-one" // one RedLock master cut from one client, longer than the lease
	FaultRedlockPause  FaultKind = "redlock-sigstop" // SIGSTOP, then SIGCONT of one RedLock master
)

// redlockKinds are the RedLock's fault kinds, added where it runs.
var redlockKinds = []FaultKind{FaultRedlockCut, FaultRedlockCutOne, FaultRedlockPause}

// redlockLab is the RedLock's masters and, per client, its proxies in
// front of them, go-redis clients and redisync Clients.
type redlockLab struct {
	servers []*redistest.Server
	proxies [][]*redistest.Proxy // per client, per master
	rdbs    [][]*redis.Client    // per client, per master
	clients [][]*redisync.Client // per client, per master, made by openClients
}

// startRedlock starts the RedLock's masters and each client's proxies and
// go-redis clients in front of them.
func (r *run) startRedlock(t testing.TB) {
	t.Helper()
	rl := &redlockLab{}
	for range redlockMasters {
		rl.servers = append(rl.servers, redistest.Start(t, redistest.WithArgs(serverArgs...)))
	}
	for range r.cfg.Clients {
		var ps []*redistest.Proxy
		var rdbs []*redis.Client
		for _, s := range rl.servers {
			p := redistest.NewProxy(t, s.Addr())
			ps = append(ps, p)
			rdbs = append(rdbs, redis.NewClient(&redis.Options{
				Addr: p.Addr(), ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1,
			}))
		}
		rl.proxies = append(rl.proxies, ps)
		rl.rdbs = append(rl.rdbs, rdbs)
	}
	r.rl = rl
}

// openRedlockClients makes client i's redisync Clients on the RedLock's
// masters, with opts.
func (r *run) openRedlockClients(i int, opts ...redisync.Option) {
	var cs []*redisync.Client
	for m, rdb := range r.rl.rdbs[i] {
		cs = append(cs, redisync.New(rdb, append([]redisync.Option{
			redisync.WithID(fmt.Sprintf("chaos-c%d-%d-rl%d", i, r.cfg.Seed, m))}, opts...)...))
	}
	r.rl.clients = append(r.rl.clients, cs)
}

// closeRedlockClients closes client i's Clients and connections on the
// RedLock's masters.
func (r *run) closeRedlockClients(i int) {
	if r.rl == nil || i >= len(r.rl.clients) {
		return
	}
	for m, c := range r.rl.clients[i] {
		_ = c.Close()
		_ = r.rl.rdbs[i][m].Close()
	}
}

// newRedLock returns client i's RedLock on redlockName and its members,
// in the masters' order (the same in every process).
func (r *run) newRedLock(i int) (*multilock.MultiLock, []*rlock.Lock) {
	var ms []redisync.Locker
	var locks []*rlock.Lock
	for _, c := range r.rl.clients[i] {
		l := rlock.New(c, redlockName)
		locks = append(locks, l)
		ms = append(ms, l)
	}
	return multilock.NewRedLock(ms...), locks
}

// injectRedlock injects a RedLock fault of kind k on f and reports
// whether k was one.
func (in *injector) injectRedlock(k FaultKind, f *Fault) bool {
	r, rng := in.r, in.rng
	switch k {
	case FaultRedlockCut, FaultRedlockCutOne:
		m := rng.IntN(redlockMasters)
		var ps []*redistest.Proxy
		who := "every client"
		if k == FaultRedlockCutOne {
			ps = append(ps, r.rl.proxies[f.Client][m])
			who = fmt.Sprintf("client %d", f.Client)
		} else {
			f.Client = -1
			for c := range r.rl.proxies {
				ps = append(ps, r.rl.proxies[c][m])
			}
		}
		f.Target = "redlock"
		f.Detail = fmt.Sprintf("master %d (%s) cut from %s: %s", m, r.rl.servers[m].Addr(), who, in.partition(ps))
	case FaultRedlockPause:
		m := rng.IntN(redlockMasters)
		f.Client, f.Target = -1, "redlock"
		f.Detail = fmt.Sprintf("master %d: %s", m, in.pause(r.rl.servers[m], pauseMin, pauseMax))
	default:
		return false
	}
	return true
}

// redlockOp takes the RedLock for the worker's owner (TryLock), holds it
// and releases it, recorded as one lock (redlockName). The hold is
// believed until the release call or until so many of the members it
// got have ended that fewer than a majority are held.
func (w *worker) redlockOp() {
	ctx, cancel := w.opContext(false)
	defer cancel()
	w.state.begin(redlockName)
	call := w.run.h.Now()
	ok, err := w.redlock.TryLock(ctx, w.acquireWait())
	ret := w.run.h.Now()
	w.run.h.Add(Op{Worker: w.id, Object: redlockName, Kind: LockAcquire, Outcome: outcome(ok, err), Err: errText(err), Call: call, Return: ret})
	if !ok {
		w.state.end(redlockName, held{})
		return
	}
	w.state.end(redlockName, held{n: 1, since: call})
	lostAt := w.keepMajority(w.holdTime())
	w.state.begin(redlockName)
	rc := w.run.h.Now()
	w.believed(belief{object: redlockName, mode: beliefExclusive, from: ret, acqCall: call}, rc, lostAt, nil)
	err = w.redlock.Unlock(w.ctx)
	w.released(redlockName, LockRelease, LockLoss, call, rc, err, lostAt)
	w.state.end(redlockName, held{})
}

// keepMajority holds the RedLock for d, cut short when fewer than a
// majority of its members are still held, and reports when that was
// seen, or zero.
func (w *worker) keepMajority(d time.Duration) (lostAt int64) {
	var done []<-chan struct{}
	for _, m := range w.rlMembers {
		if h := m.Hold(w.ctx); h != nil {
			done = append(done, h.Done())
		}
	}
	quorum := redlockMasters/2 + 1
	ended := make(chan struct{}, len(done))
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range done {
		go func() {
			select {
			case <-ch:
				ended <- struct{}{}
			case <-stop:
			}
		}()
	}
	live := len(done)
	if live < quorum {
		return w.run.h.Now()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return 0
		case <-ended:
			if live--; live < quorum {
				return w.run.h.Now()
			}
		}
	}
}
