package lua

// Scripts of package countdown (the count-down latch).
var (
	// LatchTrySetCount sets a latch's count when it is not set; see latch_try_set_count.lua.
	LatchTrySetCount = load("latch_try_set_count.lua", types, request)
	// LatchCountDown counts a latch down by one; see latch_count_down.lua.
	LatchCountDown = load("latch_count_down.lua", types, request)
	// LatchCount reads a latch's count as a write (a fence for WAIT); see latch_count.lua.
	LatchCount = load("latch_count.lua", types)
	// LatchWait is a waiter's read of a latch's count and of the server's
	// identity; see latch_wait.lua.
	LatchWait = load("latch_wait.lua", types)
	// LatchDelete deletes a latch; see latch_delete.lua.
	LatchDelete = load("latch_delete.lua", types, request)
)
