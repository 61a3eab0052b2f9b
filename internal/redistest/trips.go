package redistest

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Trips is a go-redis hook that records the command names, in lower case,
// of each round trip a client makes: one command, or a pipeline's
// commands. Add it to a client with AddHook and read it with Names; the
// zero value is ready to use.
type Trips struct {
	mu    sync.Mutex
	names [][]string
}

// Names returns the round trips recorded so far, oldest first.
func (tr *Trips) Names() [][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([][]string(nil), tr.names...)
}

func (tr *Trips) add(cmds ...redis.Cmder) {
	names := make([]string, 0, len(cmds))
	for _, cmd := range cmds {
		names = append(names, strings.ToLower(cmd.Name()))
	}
	tr.mu.Lock()
	tr.names = append(tr.names, names)
	tr.mu.Unlock()
}

// DialHook implements redis.Hook; dials are not recorded.
func (*Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: a command sent alone is a round trip.
func (tr *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		tr.add(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook: a pipeline is one round trip.
func (tr *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		tr.add(cmds...)
		return next(ctx, cmds)
	}
}
