// Package testtools is a separate module for heavy test-only tools that the
// redisync library module must not depend on, so that library users never
// download them (testcontainers-go and its Docker client, for example).
//
// Commands:
//
//   - cmd/rediscontainer starts a Redis container for the test harness in
//     internal/redistest when no local redis-server is installed but a Docker
//     engine is reachable.
package testtools
