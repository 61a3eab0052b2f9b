package chaos

import "time"

// Config is one run of the fault suite.
type Config struct {
	Seed     int64         // seeds the workload's choices and the fault schedule
	Topology Topology      // Single (the default), Replicated or Cluster
	Duration time.Duration // the fault phase; the settle, liveness and check phases come after it
	Clients  int           // redisync clients, each with its own go-redis client and proxy. The default is 4.
	Workers  int           // worker goroutines per client, each its own owner. The default is 3.

	// Lease is the clients' watchdog timeout: the lock lease. The default
	// is 2s, and 8s for every third seed (seed % 3 == 0): a lease longer
	// than the clients' request lifetime (7s) plus two seconds lets the
	// fresh holds of the workers' handles without a context owner keep no
	// record (see internal/core's "Fresh holds"), while with 2s their
	// acquisitions record themselves.
	Lease time.Duration
	// PermitLease is the expirable semaphore's permit lease. The default is
	// 3s.
	PermitLease time.Duration
	// Recheck is the clients' re-check interval, the liveness bound's base.
	// The default is 1s.
	Recheck time.Duration
	// Permits is the total of each semaphore. The default is 3.
	Permits int64

	// LateDelivery adds the late-delivery fault: stalls longer than the
	// request record TTL, up to LateMax (default 30s).
	LateDelivery bool
	LateMax      time.Duration

	// PermitAccounting is how strictly counted permits lost for good are judged
	// (see lostPermits). The default is PermitsAll: every permit lost is a
	// violation.
	PermitAccounting PermitAccounting

	// NoSplitBrain leaves out the netns topology's faults that give two
	// primaries at once (split-brain, sentinel-oneway).
	NoSplitBrain bool
	// Foreign runs the foreign client (foreign.go: node-redisson on the
	// workload's plain locks) in the single topology.
	Foreign bool

	// ClockForward adds the clock faults no lease survives to the netns
	// topology (a server's wall clock stepped forward past a lease, or
	// running 50% fast); what the checks find in their windows is
	// counted apart (Report.Unsurvivable).
	ClockForward bool

	// BeliefMargin is how long two holders' beliefs may overlap before
	// the belief check reports it (see beliefs.go). The default is 50ms.
	BeliefMargin time.Duration

	// OutDir is where porcupine's HTML goes when a model check fails.
	OutDir string
	// Logf, if set, logs faults and phases as they happen.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.Workers == 0 {
		c.Workers = 3
	}
	if c.Lease == 0 {
		c.Lease = 2 * time.Second
		if c.Seed%3 == 0 {
			c.Lease = 8 * time.Second
		}
	}
	if c.PermitLease == 0 {
		c.PermitLease = 3 * time.Second
	}
	if c.Recheck == 0 {
		c.Recheck = time.Second
	}
	if c.Permits == 0 {
		c.Permits = 3
	}
	if c.LateMax == 0 {
		c.LateMax = 30 * time.Second
	}
	if c.BeliefMargin == 0 {
		c.BeliefMargin = defaultBeliefMargin
	}
	if c.Topology == "" {
		c.Topology = Single
	}
}

// PermitAccounting is how strictly the counted semaphore's permits lost
// for good are judged once nothing is held.
type PermitAccounting int

const (
	// PermitsAll makes every permit lost a violation (the default):
	// a failed acquisition's undo and a failed release go on until Redis
	// answers, and the client's ledger on the counted semaphore tells
	// them, however late, whether the request ran.
	PermitsAll PermitAccounting = iota
	// PermitsStrict makes a permit lost a violation unless releases that
	// failed explain it, which is a finding naming them.
	PermitsStrict
	// PermitsLoose lets failed acquisitions explain a loss as well (a
	// finding).
	PermitsLoose
)
