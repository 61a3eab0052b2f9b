// Package integration holds redisync's tests across deployments and
// clients: every primitive on a Redis Cluster (keys of one primitive share a
// slot, waiters are woken through cluster pub/sub, the watchdog batches per
// slot) and through Sentinel, with real redis-server and redis-sentinel
// processes started by internal/redistest. It also holds the contract
// model (model_test.go): an executable model of the public contract of the
// lock kinds, the read-write lock, the semaphores and the latch, checked
// against random call sequences (pgregory.net/rapid's state machines) on a
// real redis-server, with the sequences it found as regression tests
// (model_regress_test.go). It has no non-test code.
package integration
