// Package gate is a lock handle's local gate (Gate): the callers of one
// handle without a context owner, who all act for the handle's own owner,
// exclude each other there as sync.RWMutex's callers do, in arrival
// order, before anything is sent to Redis. It imports errs only.
package gate
