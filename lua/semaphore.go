package lua

// Scripts of package semaphore: the counted semaphore (Redisson RSemaphore)
// and the permit-expirable one (RPermitExpirableSemaphore). The permit
// scripts give expired permits back before anything else, by the Redis
// server's clock.
var (
	// SemaphoreAcquire takes n permits of a counted semaphore; see semaphore_acquire.lua.
	SemaphoreAcquire = load("semaphore_acquire.lua", types, request, ledger, wake)
	// SemaphoreRelease gives n permits back or undoes a lost acquisition; see semaphore_release.lua.
	SemaphoreRelease = load("semaphore_release.lua", types, request, ledger, wake)
	// SemaphoreReleaseIfExists gives n permits back only when the semaphore exists;
	// see semaphore_release_if_exists.lua.
	SemaphoreReleaseIfExists = load("semaphore_release_if_exists.lua", types, request, ledger, wake)
	// SemaphoreTrySet sets the permits of an unset semaphore (both kinds); see semaphore_try_set.lua.
	SemaphoreTrySet = load("semaphore_try_set.lua", types, request, permits)
	// SemaphoreAdd adds to the available permits (both kinds); see semaphore_add.lua.
	SemaphoreAdd = load("semaphore_add.lua", types, request)
	// SemaphoreDrain takes every available permit of a counted semaphore; see semaphore_drain.lua.
	SemaphoreDrain = load("semaphore_drain.lua", types, request)
	// SemaphoreDelete deletes a semaphore's keys (both kinds); see semaphore_delete.lua.
	SemaphoreDelete = load("semaphore_delete.lua", types, request)

	// SemaphorePermitAcquire takes n expirable permits; see semaphore_permit_acquire.lua.
	SemaphorePermitAcquire = load("semaphore_permit_acquire.lua", types, request, permits, wake)
	// SemaphorePermitRelease releases permits by id, all or nothing, or undoes a lost
	// acquisition; see semaphore_permit_release.lua.
	SemaphorePermitRelease = load("semaphore_permit_release.lua", types, request, permits, wake)
	// SemaphorePermitSet sets the total number of expirable permits; see semaphore_permit_set.lua.
	SemaphorePermitSet = load("semaphore_permit_set.lua", types, request, permits)
	// SemaphorePermitUpdateLease renews a permit's lease; see semaphore_permit_update_lease.lua.
	SemaphorePermitUpdateLease = load("semaphore_permit_update_lease.lua", types, request, permits)
	// SemaphorePermitLeaseTime reports a permit's remaining lease; see semaphore_permit_lease_time.lua.
	SemaphorePermitLeaseTime = load("semaphore_permit_lease_time.lua", types, permits)
	// SemaphorePermitState reports available and acquired permits; see semaphore_permit_state.lua.
	SemaphorePermitState = load("semaphore_permit_state.lua", types, permits)
)
