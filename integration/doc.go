// Package integration holds redisync's tests across packages, deployments
// and clients, with real redis-server and redis-sentinel processes started
// by internal/redistest. It has no non-test code.
//
// Across deployments: every primitive on a Redis Cluster (keys of one
// primitive share a slot, waiters are woken through cluster pub/sub, the
// watchdog batches per slot) and through Sentinel, failovers, split
// brains, replicas and ACL users. Across packages: the contract every
// primitive keeps at its edges (zero values and nil contexts, keys of
// another type, durations out of bounds, names without a hash tag on a
// Cluster, long names, a server that cannot run scripts, outages, the
// snapshots of Inspect). The tests of package redisync's own API (the
// Client, its options, Shutdown, the Observer and Stats) and its Examples
// stay beside it in the repository's root. It also holds the contract
// model (model_test.go): an executable model of the public contract of the
// lock kinds, the read-write lock, the semaphores and the latch, checked
// against random call sequences (pgregory.net/rapid's state machines) on a
// real redis-server, with the sequences it found as regression tests
// (model_regress_test.go).
package integration
