package lua

// Scripts of package rwlock. Its write holds renew with RenewLock (the
// writer's field is a lock owner field); its read holds with RenewRead.
var (
	// RWReadAcquire takes one read hold; see rwlock_read_acquire.lua.
	RWReadAcquire = load("rwlock_read_acquire.lua", types, request, rwlockHelpers)
	// RWWriteAcquire takes one write hold or refuses an upgrade; see
	// rwlock_write_acquire.lua.
	RWWriteAcquire = load("rwlock_write_acquire.lua", types, request, rwlockHelpers, wake)
	// RWReadRelease releases one read hold or undoes a lost read
	// acquisition; see rwlock_read_release.lua.
	RWReadRelease = load("rwlock_read_release.lua", request, rwlockHelpers, wake)
	// RWWriteRelease releases one write hold or undoes a lost write
	// acquisition; see rwlock_write_release.lua.
	RWWriteRelease = load("rwlock_write_release.lua", request, rwlockHelpers, wake)
	// RWWriteAcquireFresh takes a fresh write hold (an owner's only hold,
	// no record needed while it lasts); see rwlock_write_acquire_fresh.lua.
	RWWriteAcquireFresh = load("rwlock_write_acquire_fresh.lua", types, wake)
	// RWWriteReleaseFresh releases a fresh write hold or undoes its lost
	// acquisition; see rwlock_write_release_fresh.lua.
	RWWriteReleaseFresh = load("rwlock_write_release_fresh.lua", rwlockHelpers, wake)
	// RWWriteHandoff releases a fresh write hold and takes one for the
	// next owner in one step; see rwlock_write_handoff.lua.
	RWWriteHandoff = load("rwlock_write_handoff.lua", rwlockHelpers, wake)
	// RWForceUnlock deletes a read-write lock in either mode; see
	// rwlock_force_unlock.lua.
	RWForceUnlock = load("rwlock_force_unlock.lua", types, request, wake)
	// RWReadCount returns an owner's live read hold count; see
	// rwlock_read_count.lua.
	RWReadCount = load("rwlock_read_count.lua", types)
	// RenewRead renews watchdog-held read holds in batches; see
	// renew_read.lua.
	RenewRead = load("renew_read.lua")
)
