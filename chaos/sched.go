package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/gocronlock"
)

// The job schedulers (module extra/gocronlock): schedulers, each with a
// redisync Client of its own on one of the first clients' connections (so
// that client's faults act on it), run one job every interval (500 ms,
// 750 ms or 1 s by seed), the interval's ticks aligned on the history's
// clock, through Locker.ForInterval, as gocron calls a distributed job
// locker: Lock(job) at each tick, the job (20 to 100 ms), Unlock. Now and
// then a scheduler is killed while it runs the job: its Client is closed
// without releasing the job's lock (the lock is left to its lease, the
// interval, as after a process's death), and it comes back 0.5 to 2 s
// later with a new Client.
//
// The checks: at most one run per tick (of the runs whose Lock was called
// within half an interval of the tick: ForInterval's promise covers
// schedulers whose clocks differ by less than that; a tick run twice
// because a Lock returned more than half an interval late is counted
// apart: Lock bounds its attempt by a quarter of the interval, but only a
// go-redis client with ContextTimeoutEnabled cuts a request on its way,
// and the suite's clients are the workers', without it); after a kill, the
// job runs again within two intervals and half a second (the lock's lease
// is the interval, and the next tick after it runs), judged when no fault
// acted on the servers or on every other live scheduler's client meanwhile,
// and no Lock call failed meanwhile: a Lock that returns an error (Redis
// did not answer, or did not confirm the write on its replicas in time,
// as after a primary's restart while its replica resynchronizes) is the
// library's outage rule at work, not a job forgotten; such kills are
// counted apart in the report with the first error. The report gives the
// ticks unrun and what the Lockers counted (Locker.Unrun).

// schedWorker is the history's worker number of the first scheduler.
const schedWorker = 3000

// jobName is the schedulers' job; its lock is jobPrefix + jobName.
const (
	jobName   = "job"
	jobPrefix = "chaos:gocron:"
)

// schedulers runs the schedulers of one run.
type schedulers struct {
	r     *run
	every time.Duration
	n     int
	stop  chan struct{}
	wg    sync.WaitGroup

	stopped int64 // when the schedulers were stopped (history clock)

	mu      sync.Mutex
	lockers []*gocronlock.Locker // every incarnation's, for Unrun
	born    [][]int64            // per scheduler, when each incarnation's Client was created
	taken   int                  // Lock calls that found the job taken
	failed  int                  // Lock calls that failed (Redis), or took the lock too late (ErrLockLate)
	fails   []failedLock         // the Lock calls that failed, in call order per scheduler
}

// failedLock is a Lock call that returned an error other than
// ErrJobTaken alone (an error from Redis, the Lock's budget run out, or
// ErrLockLate: the lock came past half the minimum hold): when it was called and returned (history clock), and the
// error.
type failedLock struct {
	call, ret int64
	err       string
}

// startSchedulers starts the schedulers: one per client, at most three.
func (r *run) startSchedulers() {
	s := &schedulers{r: r, every: 500*time.Millisecond + time.Duration(r.cfg.Seed%3)*250*time.Millisecond,
		n: min(3, len(r.rdbs)), stop: make(chan struct{})}
	r.parts.sched = s
	s.born = make([][]int64, s.n)
	for i := range s.n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.run(i)
		}()
	}
	r.logf("schedulers: %d, a job every %v", s.n, s.every)
}

// stopSchedulers stops the schedulers and waits for them.
func (r *run) stopSchedulers() {
	if s := r.parts.sched; s != nil && s.stop != nil {
		s.stopped = r.h.Now()
		close(s.stop)
		s.wg.Wait()
		s.stop = nil
	}
}

// run is scheduler i: incarnation after incarnation until stopped.
func (s *schedulers) run(i int) {
	rng := rand.New(rand.NewPCG(uint64(s.r.cfg.Seed), uint64(schedWorker+i)))
	for inc := 0; ; inc++ {
		c := redisync.New(s.r.rdbs[i], redisync.WithID(fmt.Sprintf("chaos-s%d-%d-%d", i, s.r.cfg.Seed, inc)),
			redisync.WithRecheckInterval(s.r.cfg.Recheck), redisync.WithLogger(s.r.logger(i)))
		l := gocronlock.NewLocker(c, gocronlock.WithLockPrefix(jobPrefix)).ForInterval(s.every)
		s.mu.Lock()
		s.lockers = append(s.lockers, l)
		s.born[i] = append(s.born[i], s.r.h.Now())
		s.mu.Unlock()
		killed := s.ticks(i, rng, l, c)
		if !killed {
			_ = c.Close()
			return
		}
		select {
		case <-s.stop:
			return
		case <-time.After(between(rng, 500*time.Millisecond, 2*time.Second)):
		}
	}
}

// ticks runs the job at every tick until stopped (false) or killed (true:
// the Client closed while the job ran, its lock left to its lease).
func (s *schedulers) ticks(i int, rng *rand.Rand, l *gocronlock.Locker, c *redisync.Client) bool {
	r := s.r
	for {
		now := r.h.Now()
		tick := now/int64(s.every) + 1
		t := time.NewTimer(time.Duration(tick*int64(s.every) - now))
		select {
		case <-s.stop:
			t.Stop()
			return false
		case <-t.C:
		}
		call := r.h.Now()
		lk, err := l.Lock(context.Background(), jobName)
		ret := r.h.Now()
		switch {
		case errors.Is(err, gocronlock.ErrJobTaken) && !errors.Is(err, gocronlock.ErrLockLate):
			s.count(&s.taken)
			continue
		case err != nil:
			s.mu.Lock()
			s.failed++
			s.fails = append(s.fails, failedLock{call: call, ret: ret, err: err.Error()})
			s.mu.Unlock()
			continue
		}
		op := Op{Worker: schedWorker + i, Object: jobName, Kind: JobRun, N: tick, Outcome: OK, Call: call, Return: ret}
		r.h.Add(op)
		time.Sleep(between(rng, 20*time.Millisecond, 100*time.Millisecond))
		if rng.IntN(8) == 0 {
			_ = c.Close() // killed while it runs the job: the lock is left to its lease
			r.h.Add(Op{Worker: schedWorker + i, Object: jobName, Kind: JobKill, N: tick, Outcome: OK, Call: r.h.Now(), Return: r.h.Now()})
			return true
		}
		_ = lk.Unlock(context.Background())
	}
}

func (s *schedulers) count(n *int) {
	s.mu.Lock()
	*n++
	s.mu.Unlock()
}

// checkSchedulers checks the runs and the kills and returns the summary
// line.
func (hc historyCheck) checkSchedulers(ops []Op) string {
	r := hc.r
	s := r.parts.sched
	if s == nil {
		return ""
	}
	var runs, kills []Op
	for _, op := range ops {
		switch op.Kind {
		case JobRun:
			runs = append(runs, op)
		case JobKill:
			kills = append(kills, op)
		}
	}
	byTick := map[int64][]Op{}
	first, last := int64(1<<62), int64(0)
	for _, op := range runs {
		first, last = min(first, op.N), max(last, op.N)
		if op.Call-op.N*int64(s.every) <= int64(s.every/2) {
			byTick[op.N] = append(byTick[op.N], op)
		}
	}
	lateRuns := 0
	for _, op := range runs {
		if op.Return-op.N*int64(s.every) > int64(s.every/2) {
			lateRuns++
		}
	}
	double := hc.doubleRuns(byTick, s)
	unrun := 0
	for tick := first; tick <= last; tick++ {
		if len(byTick[tick]) == 0 {
			unrun++
		}
	}
	judged, late, refused, firstErr := hc.kills(runs, kills, s)
	var counted int64
	s.mu.Lock()
	for _, l := range s.lockers {
		counted += l.Unrun()
	}
	taken, failed := s.taken, s.failed
	s.mu.Unlock()
	line := fmt.Sprintf("jobs: %d schedulers, a job every %v: %d runs (%d of them acquired more than half an interval after their tick), %d ticks run twice, %d of %d ticks unrun (the Lockers counted %d unrun: Locker.Unrun), %d Lock calls found it taken, %d failed; %d kills, %d judged, %d not run again within %v",
		s.n, s.every, len(runs), lateRuns, double, unrun, max(last-first+1, 0), counted, taken, failed, len(kills), judged, late, 2*s.every+500*time.Millisecond)
	if refused > 0 {
		line += fmt.Sprintf("; %d kills not judged: a Lock call failed within their bound (first: %s)", refused, firstErr)
	}
	return line
}

// doubleRuns reports the ticks of byTick run more than once and returns
// how many.
func (hc historyCheck) doubleRuns(byTick map[int64][]Op, s *schedulers) int {
	every := s.every
	double := 0
	for tick, rs := range byTick {
		if len(rs) < 2 {
			continue
		}
		double++
		v := Violation{At: rs[1].Call, Check: "jobs", Detail: fmt.Sprintf("tick %d (%.3fs) run %d times", tick, sec(tick*int64(every)), len(rs)),
			Excerpt: opStrings(rs)}
		for _, op := range rs {
			if why := hc.r.bornInFailover(s, op); why != "" {
				v.Apart = why
			}
			if late := time.Duration(op.Return - tick*int64(every)); late > every/2 {
				// Lock bounds its attempt by a quarter of the interval,
				// but only a go-redis client with ContextTimeoutEnabled
				// cuts a request on its way (gocronlock's doc); the
				// suite's clients have not.
				v.Apart = fmt.Sprintf("w%d's Lock returned %v after the tick: its request was not cut (no ContextTimeoutEnabled)",
					op.Worker, late.Round(time.Millisecond))
			}
		}
		hc.r.violate(v)
	}
	return double
}

// bornInFailover names why run op may have taken the job's lock without
// its primary's replicas ("" if not): its scheduler's Client was created
// during a server fault of a topology with replicas (a failover, a split
// brain). A Client waits for the replicas it has seen on a primary; one
// whose first primary is the old primary of a split brain, or a
// promoted replica, counts none there and waits for none (the library's
// documented limit), so a lock taken on the old primary is not refused.
func (r *run) bornInFailover(s *schedulers, op Op) string {
	if r.cfg.Topology == Single {
		return ""
	}
	s.mu.Lock()
	born := append([]int64(nil), s.born[op.Worker-schedWorker]...)
	s.mu.Unlock()
	var since int64
	for _, b := range born {
		if b <= op.Call {
			since = b
		}
	}
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	for _, f := range r.faults {
		if f.Client < 0 && f.Kind != FaultScriptFlush && f.Kind != FaultKillPubSub && f.Target != "redlock" && since >= f.Start && since <= f.End {
			return fmt.Sprintf("scheduler %d's Client was created at %.3fs during %s: it counts the replicas it has seen on a primary, none there", op.Worker-schedWorker, sec(since), f.Kind)
		}
	}
	return ""
}

// kills checks that the job ran again within its bound after each kill
// judged (no fault acting on the servers or on every other scheduler's
// client meanwhile, no Lock call failing meanwhile); it returns the kills
// judged, those late, and those not judged because a Lock call failed
// within their bound, with the first such failure.
func (hc historyCheck) kills(runs, kills []Op, s *schedulers) (judged, late, refused int, firstErr string) {
	r := hc.r
	bound := int64(2*s.every + 500*time.Millisecond)
	sort.Slice(runs, func(i, j int) bool { return runs[i].Call < runs[j].Call })
	for _, k := range kills {
		if k.Call+bound > s.stopped {
			continue // the schedulers stopped before its bound
		}
		if !r.schedulersReachable(k.Worker-schedWorker, s.n, kills, k.Call, k.Call+bound) {
			continue
		}
		if f, ok := s.failedWithin(k.Call, k.Call+bound); ok {
			// Redis answered a Lock with an error (an outage is an
			// error): the job unrun meanwhile is the outage's
			refused++
			if firstErr == "" {
				firstErr = fmt.Sprintf("%.3fs: %s", sec(f.call), f.err)
			}
			continue
		}
		judged++
		i := sort.Search(len(runs), func(i int) bool { return runs[i].Call > k.Call })
		if i < len(runs) && runs[i].Call <= k.Call+bound {
			continue
		}
		late++
		next := "none"
		if i < len(runs) {
			next = runs[i].String()
		}
		r.violate(Violation{At: k.Call, Check: "jobs", Detail: fmt.Sprintf(
			"scheduler %d killed at %.3fs while it ran the job: no run within %v (next: %s)", k.Worker-schedWorker, sec(k.Call), time.Duration(bound), next)})
	}
	return judged, late, refused, firstErr
}

// failedWithin returns a Lock call that failed, called between from and
// to (history clock), if any.
func (s *schedulers) failedWithin(from, to int64) (failedLock, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.fails {
		if f.call >= from && f.call <= to {
			return f, true
		}
	}
	return failedLock{}, false
}

// schedulersReachable tells whether, between from and to, no fault acted
// on the servers (but a SCRIPT FLUSH, a pub/sub kill or the RedLock's)
// and some scheduler other than killed (of n) was alive (not killed in
// the 2 s before; kills) and had a client no fault acted on.
func (r *run) schedulersReachable(killed, n int, kills []Op, from, to int64) bool {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	faulted := map[int]bool{}
	for _, k := range kills {
		if k.Call >= from-int64(2*time.Second) && k.Call <= to {
			faulted[k.Worker-schedWorker] = true
		}
	}
	for _, f := range r.faults {
		if f.End < from || f.Start > to || f.Kind == FaultScriptFlush || f.Kind == FaultKillPubSub || f.Target == "redlock" {
			continue
		}
		if f.Client < 0 {
			return false
		}
		faulted[f.Client] = true
	}
	for i := range n {
		if i != killed && !faulted[i] {
			return true
		}
	}
	return false
}

func opStrings(ops []Op) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.String())
	}
	return out
}
