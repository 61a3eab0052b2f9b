package lua

// Scripts of package rlock (and of the write side of rwlock, whose renewal
// is the lock's).
var (
	// LockAcquire takes a reentrant lock; see lock_acquire.lua.
	LockAcquire = load("lock_acquire.lua", types, request, lockHelpers, wake)
	// LockRelease releases one hold or undoes a lost acquisition; see lock_release.lua.
	LockRelease = load("lock_release.lua", request, lockHelpers, wake)
	// LockAcquireFresh takes a fresh hold (an owner's only hold, no
	// record needed while it lasts); see lock_acquire_fresh.lua.
	LockAcquireFresh = load("lock_acquire_fresh.lua", types, wake)
	// LockReleaseFresh releases a fresh hold or undoes its lost
	// acquisition; see lock_release_fresh.lua.
	LockReleaseFresh = load("lock_release_fresh.lua", wake)
	// LockHandoff releases a fresh hold and takes one for the next owner
	// in one step; see lock_handoff.lua.
	LockHandoff = load("lock_handoff.lua", wake)
	// LockWaitLeave takes a Client out of a lock's queue of waiting
	// Clients; see lock_wait_leave.lua.
	LockWaitLeave = load("lock_wait_leave.lua", wake)
	// LockForceUnlock deletes a lock whoever holds it; see lock_force_unlock.lua.
	LockForceUnlock = load("lock_force_unlock.lua", types, request, lockHelpers, wake)
	// RenewLock renews watchdog-held locks in batches; see renew_lock.lua.
	RenewLock = load("renew_lock.lua")
)
