// Package gocronlock runs github.com/go-co-op/gocron/v2 jobs once across
// schedulers, on redisync: a Locker (one lock per job) and an Elector
// (one scheduler leads and runs every job). It is a module of its own, so
// the library does not depend on gocron.
//
// # Locker
//
// Every scheduler runs each job at its tick; the Locker lets one of them
// through per tick. gocron asks a Locker to "handle time splay between
// schedulers": a scheduler whose clock is a little behind reaches the
// tick after the first run already ended, and would run the job again.
// So each job's lock is held at least a minimum time from its acquisition
// (rlock.WithMinHold, ShedLock's lockAtLeastFor): an Unlock before it
// leaves the lock to expire then. Set it from the job's interval with
// ForInterval, which uses half the interval: schedulers whose clocks
// differ by less than that run each tick once, and the lock is free again
// well before the next tick.
//
//	locker := gocronlock.NewLocker(client)
//	s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(report),
//		gocron.WithName("report"),
//		gocron.WithDistributedJobLocker(locker.ForInterval(time.Minute)))
//
// A job's lock is an rlock.Lock (Redisson's layout) named the lock prefix
// (WithLockPrefix, "gocron:" by default) followed by the job's name, held
// by the watchdog while the job runs (WithLease, else the job's interval
// with ForInterval, else the Client's lease), and fenced with ForInterval.
//
// # Elector
//
// An Elector campaigns in a redisync election (package election) for as
// long as it runs; IsLeader says whether this scheduler leads now. gocron
// asks it before every run, so only the leader runs jobs, and when the
// leader dies or stalls past its lease another scheduler takes over.
//
// # Failures
//
// A scheduler that dies during a job keeps the job's lock until its lease
// runs out: with ForInterval the lease is the job's interval (WithLease
// sets another), so the kill delays the job's next run by at most about
// one interval. A tick that falls within it runs nowhere: every
// scheduler that finds the lock held by a run of an earlier tick counts
// the tick (Locker.Unrun) and calls WithOnUnrun's hook, on which an
// alert can be built; a job still running past its interval is reported
// the same way. A scheduler stalled past its lease loses the lock while its
// job may still be running, and the next tick runs elsewhere; gocron does
// not tell the job, so a job whose runs must not overlap passes the hold's
// fencing token to what it writes (see rlock.WithFencing), or runs under
// the leadership's Context with an Elector.
package gocronlock
