package lua

// Scripts of package rlock's FairLock. Its holds are the lock's (the same
// hash and owner fields), so the watchdog renews them with RenewLock.
var (
	// FairAcquire takes a fair lock or queues for it; see fair_acquire.lua.
	FairAcquire = load("fair_acquire.lua", types, request, lockHelpers, fairHelpers)
	// FairRelease releases one hold of a fair lock, or undoes a lost
	// acquisition, and wakes the head of the queue; see fair_release.lua.
	FairRelease = load("fair_release.lua", request, lockHelpers, fairHelpers)
	// FairLeave takes a waiter that gave up out of the queue; see
	// fair_leave.lua.
	FairLeave = load("fair_leave.lua", request, fairHelpers)
	// FairForceUnlock deletes a fair lock whoever holds it and wakes the
	// head of the queue; see fair_force_unlock.lua.
	FairForceUnlock = load("fair_force_unlock.lua", types, request, lockHelpers, fairHelpers)
)
