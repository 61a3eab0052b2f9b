// Package integration holds redisync's tests across deployments and
// clients: every primitive on a Redis Cluster (keys of one primitive share a
// slot, waiters are woken through cluster pub/sub, the watchdog batches per
// slot) and through Sentinel, with real redis-server and redis-sentinel
// processes started by internal/redistest. It has no non-test code.
package integration
