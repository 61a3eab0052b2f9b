package core

import "errors"

// The sentinel errors. The root package re-exports them under the same
// names; they live here so that internal packages can return them.
var (
	ErrNotHeld         = errors.New("redisync: not held")
	ErrLockLost        = errors.New("redisync: lock lost")
	ErrClosed          = errors.New("redisync: client closed")
	ErrInvalidArgument = errors.New("redisync: invalid argument")
	ErrUpgrade         = errors.New("redisync: write lock requested while holding only the read lock")
	ErrNotReplicated   = errors.New("redisync: not acknowledged by enough replicas")
)
