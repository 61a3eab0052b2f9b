package rlock

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/lua"
)

// lockOutcome reads the replies of lock_acquire, lock_acquire_fresh and
// fair_acquire with lock_acquire's codes: the scripts must keep sharing
// them.
func TestAcquireScriptsShareCodes(t *testing.T) {
	assert.EqualValues(t, lua.LockAcquireAcquired, lua.LockAcquireFreshAcquired)
	assert.EqualValues(t, lua.LockAcquireAcquired, lua.FairAcquireAcquired)
	assert.EqualValues(t, lua.LockAcquireLost, lua.FairAcquireLost)
	assert.EqualValues(t, lua.LockAcquireCancelled, lua.LockAcquireFreshCancelled)
	assert.EqualValues(t, lua.LockAcquireCancelled, lua.FairAcquireCancelled)
}
