package redistest

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// Recorder is a go-redis hook that keeps the arguments of the script calls
// (EVALSHA, EVAL) a client sends, so that a test can deliver an identical
// copy of one later: what a request held up in the network looks like when
// it finally reaches Redis.
type Recorder struct {
	mu    sync.Mutex
	calls [][]any
}

// Reset forgets the calls recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// Last returns the arguments of the latest script call, or nil.
func (r *Recorder) Last() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return nil
	}
	return r.calls[len(r.calls)-1]
}

func (r *Recorder) add(cmd redis.Cmder) {
	switch strings.ToLower(cmd.Name()) {
	case "evalsha", "eval":
		r.mu.Lock()
		r.calls = append(r.calls, lua.ArgValues(cmd.Args()))
		r.mu.Unlock()
	}
}

// DialHook implements redis.Hook.
func (r *Recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *Recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (r *Recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			r.add(cmd)
		}
		return next(ctx, cmds)
	}
}
