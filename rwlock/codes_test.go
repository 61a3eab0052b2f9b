package rwlock

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/lua"
)

// outcome reads the replies of rwlock_read_acquire, rwlock_write_acquire
// and rwlock_write_acquire_fresh with rwlock_write_acquire's codes: the
// scripts must keep sharing them.
func TestAcquireScriptsShareCodes(t *testing.T) {
	assert.EqualValues(t, lua.RWWriteAcquireAcquired, lua.RWReadAcquireAcquired)
	assert.EqualValues(t, lua.RWWriteAcquireAcquired, lua.RWWriteAcquireFreshAcquired)
	assert.EqualValues(t, lua.RWWriteAcquireLost, lua.RWReadAcquireLost)
	assert.EqualValues(t, lua.RWWriteAcquireCancelled, lua.RWReadAcquireCancelled)
	assert.EqualValues(t, lua.RWWriteAcquireCancelled, lua.RWWriteAcquireFreshCancelled)
}
