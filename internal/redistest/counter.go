package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts the commands a client sends (each
// command of a pipeline counts): add it with rdb.AddHook to check that an
// operation sent nothing (a rejected argument) or exactly what it should.
// The client's background work is left out, as the Recorder leaves it
// out (background): a new connection's handshake (whether a call finds an
// idle connection or dials one depends on what else the client has in
// flight at that moment) and the Client's clock sample, and also the
// probes it sends in the background (probe: INFO, CONFIG GET), which may
// arrive after the operation that started them returned.
type Counter struct{ n atomic.Int64 }

// Load returns the number of commands sent so far.
func (c *Counter) Load() int64 { return c.n.Load() }

// DialHook implements redis.Hook; dials are not counted.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmds := []redis.Cmder{cmd}; !background(cmds) && !probe(cmds) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !background(cmds) && !probe(cmds) {
			c.n.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}
