package redistest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// Recorder is a go-redis hook that keeps the arguments of the script calls
// (EVALSHA, EVAL) a client sends, so that a test can deliver an identical
// copy of one later: what a request held up in the network looks like when
// it finally reaches Redis. It also keeps the command names of each round
// trip (Trips). Add it to a client with AddHook; the zero value is ready
// to use.
type Recorder struct {
	mu    sync.Mutex
	calls [][]any
	trips [][]string
}

// Reset forgets the calls and round trips recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
	r.trips = nil
}

// Trips returns the command names, in lower case, of each round trip
// recorded so far, oldest first: a command sent alone, or a pipeline's
// commands.
func (r *Recorder) Trips() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.trips...)
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

// add records one round trip: cmds sent together. The client's
// background work is no round trip of the caller's and is left out
// (background): a new connection's handshake (whether a call finds an
// idle connection or dials one depends on what else the client has in
// flight at that moment) and the Client's sample of the server's clock.
func (r *Recorder) add(cmds ...redis.Cmder) {
	if background(cmds) {
		return
	}
	names := make([]string, 0, len(cmds))
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cmd := range cmds {
		name := strings.ToLower(cmd.Name())
		names = append(names, name)
		if name == "evalsha" || name == "eval" {
			r.calls = append(r.calls, lua.ArgValues(cmd.Args()))
		}
	}
	r.trips = append(r.trips, names)
}

// background reports whether cmds are a round trip of the client's own
// rather than of an operation: a new connection's handshake, or a TIME
// sent alone, which is how a redisync Client samples the server's clock
// (in the background when a sample is due: internal/core/request).
func background(cmds []redis.Cmder) bool {
	if len(cmds) == 1 && strings.EqualFold(cmds[0].Name(), "time") {
		return true
	}
	return handshake(cmds)
}

// probe reports whether cmds are one of the probes a Client sends alone,
// in the background, after a dial or a first use: INFO (the primary's
// replicas), CONFIG GET (its eviction policy, its
// notify-keyspace-events). They may arrive after the operation that
// started them returned, so a [Counter] leaves them out; a [Recorder]
// keeps them, for the tests that count them.
func probe(cmds []redis.Cmder) bool {
	if len(cmds) != 1 {
		return false
	}
	args := cmds[0].Args()
	switch name := strings.ToLower(cmds[0].Name()); {
	case name == "info":
		return true
	case name == "config" && len(args) >= 2:
		return strings.EqualFold(fmt.Sprint(args[1]), "get")
	}
	return false
}

// handshake reports whether cmds are a new connection's handshake, as
// go-redis 9.22 sends it: HELLO, CLIENT MAINT_NOTIFICATIONS, then the
// CLIENT SETINFO pipeline.
func handshake(cmds []redis.Cmder) bool {
	for _, cmd := range cmds {
		name := strings.ToLower(cmd.Name())
		if args := cmd.Args(); name == "client" && len(args) >= 2 {
			name += " " + strings.ToLower(fmt.Sprint(args[1]))
		}
		switch name {
		case "hello", "client setinfo", "client maint_notifications":
		default:
			return false
		}
	}
	return len(cmds) > 0
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
		r.add(cmds...)
		return next(ctx, cmds)
	}
}
