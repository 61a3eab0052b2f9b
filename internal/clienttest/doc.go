// Package clienttest gives tests redisync clients, closed when the test
// ends, and waits on their pub/sub multiplexers. It is apart from
// internal/redistest because it imports the root package, which imports
// internal/core, whose own tests use redistest: redistest importing the
// root package would be an import cycle.
package clienttest
