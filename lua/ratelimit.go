package lua

// Scripts of package ratelimit: the rate limiter in Redisson RRateLimiter's
// layout, and the GCRA limiter. Both read the Redis server's clock.
var (
	// RateAcquire takes n permits of a rate limiter; see ratelimit_acquire.lua.
	RateAcquire = load("ratelimit_acquire.lua", request, rateHelpers)
	// RateRelease gives n permits back or undoes a lost acquisition; see ratelimit_release.lua.
	RateRelease = load("ratelimit_release.lua", request, rateHelpers)
	// RateAvailable reports the permits left; see ratelimit_available.lua.
	RateAvailable = load("ratelimit_available.lua", rateHelpers)
	// RateSetRate sets, replaces or updates the configuration; see ratelimit_set_rate.lua.
	RateSetRate = load("ratelimit_set_rate.lua", request, rateHelpers)
	// RateDelete deletes a rate limiter and every client's keys; see ratelimit_delete.lua.
	RateDelete = load("ratelimit_delete.lua", request)

	// GCRATake takes n events of a GCRA limiter, now or within a delay; see gcra_take.lua.
	GCRATake = load("gcra_take.lua")
	// GCRACancel gives back what a reservation took; see gcra_cancel.lua.
	GCRACancel = load("gcra_cancel.lua", request)
	// GCRAReset deletes a GCRA limiter's key, refusing one of another type; see gcra_reset.lua.
	GCRAReset = load("gcra_reset.lua")
)

// rateHelpers: the rate limiter's grants, settling and expiry
// (prelude_ratelimit.lua), for its scripts.
const rateHelpers = "prelude_ratelimit.lua"

// The prelude is listed here rather than in lua.go's list, so that this
// file is the rate limiter's only change to the package.
func init() { preludes = append(preludes, rateHelpers) }
