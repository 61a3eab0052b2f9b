package lua

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Runner runs a script with its KEYS and ARGV. The bindings (the Run
// method of each <Script>Args, bindings_gen.go) send their scripts through
// one, so the caller chooses how: Direct, or the engine's runner that waits
// for replicas (internal/core.Client.Runner).
type Runner interface {
	Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd
}

// Direct runs scripts on a go-redis client with (*redis.Script).Run:
// EVALSHA, then EVAL when the server answers NOSCRIPT.
type Direct struct {
	Client redis.Scripter
}

// Run implements Runner.
func (d Direct) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return script.Run(ctx, d.Client, keys, args...)
}

// Script arguments boxed once: passing a string to a script as an any
// allocates otherwise, at every call.
var (
	flags = [2]any{"0", "1"}
	boxed = map[string]any{"": "", "0": "0", "1": "1", "publish": "publish", "spublish": "spublish"}
	_     = Runner(Direct{})
)

// flag passes a bool as the scripts take flags: "1" for true, "0" for
// false.
func flag(b bool) any {
	if b {
		return flags[1]
	}
	return flags[0]
}

// str passes a string argument, without an allocation when it is one of
// the common constants.
func str(s string) any {
	if v, ok := boxed[s]; ok {
		return v
	}
	return s
}

// replyInt reads an integer element of a mixed reply (0 when it is not
// one).
func replyInt(x any) int64 {
	i, _ := x.(int64)
	return i
}

// replyString reads a string element of a mixed reply ("" when it is not
// one).
func replyString(x any) string {
	s, _ := x.(string)
	return s
}
