package lua

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Runner runs a script with its KEYS and ARGV. The bindings (the Run
// method of each <Script>Args, bindings_gen.go) send their scripts through
// one, so the caller chooses how: Direct, or the engine's runner that waits
// for replicas (internal/core/pipeline.Pipeline.Runner).
type Runner interface {
	Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd
}

// CommandRunner is a Runner that also sends a binding's call as the
// binding built it, one EVALSHA command (Command), instead of its KEYS and
// ARGV apart: go-redis's EvalSha would copy them into a command of its own
// and box the command's name and the script's SHA1 again, at every call.
// The bindings use RunCommand when their Runner has it.
type CommandRunner interface {
	Runner
	RunCommand(ctx context.Context, c Command) *redis.Cmd
}

// Processor sends a go-redis command: a client (redis.UniversalClient) or
// a pipeline.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Command is one script call built whole: Args are the arguments of
// EVALSHA as (*redis.Script).Run sends them first: "evalsha", the
// script's SHA1, the number of keys (an int), the KEYS, then the ARGV.
type Command struct {
	Script *redis.Script
	Args   []any
}

// NewCommand returns the command of script with keys and args.
func NewCommand(script *redis.Script, keys []string, args []any) Command {
	a := make([]any, 3, 3+len(keys)+len(args))
	a[0], a[1], a[2] = evalsha, sha(script), len(keys)
	for _, k := range keys {
		a = append(a, k)
	}
	return Command{Script: script, Args: append(a, args...)}
}

// NumKeys returns the number of KEYS.
func (c Command) NumKeys() int { return c.Args[2].(int) }

// Keys returns the KEYS, in a slice of their own.
func (c Command) Keys() []string {
	keys := make([]string, c.NumKeys())
	for i := range keys {
		keys[i] = argString(c.Args[3+i])
	}
	return keys
}

// argString reads a string argument: the generated commands pass a
// pointer to it (no boxing per call), Cmd a string.
func argString(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case *string:
		return *v
	}
	return ""
}

// ArgValues returns args with the pointers the generated commands pass
// (*string, *int64) replaced by their values: for whoever keeps or
// compares a command's arguments (tests, hooks). go-redis writes both
// forms alike.
func ArgValues(args []any) []any {
	out := make([]any, len(args))
	for i, x := range args {
		switch v := x.(type) {
		case *string:
			out[i] = *v
		case *int64:
			out[i] = *v
		default:
			out[i] = x
		}
	}
	return out
}

// FirstKey returns KEYS[1], "" without keys.
func (c Command) FirstKey() string {
	if c.NumKeys() == 0 {
		return ""
	}
	return argString(c.Args[3])
}

// Argv returns the ARGV (sharing c's storage).
func (c Command) Argv() []any { return c.Args[3+c.NumKeys():] }

// EvalSha returns the EVALSHA command, not sent.
func (c Command) EvalSha(ctx context.Context) *redis.Cmd {
	return c.cmd(ctx, c.Args)
}

// Eval returns the EVAL command with the script's source (for a server
// that lacks the script), not sent.
func (c Command) Eval(ctx context.Context) *redis.Cmd {
	a := append([]any(nil), c.Args...) // the EVALSHA command keeps its own
	a[0], a[1] = "eval", source(c.Script)
	return c.cmd(ctx, a)
}

func (c Command) cmd(ctx context.Context, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if c.NumKeys() > 0 {
		cmd.SetFirstKeyPos(3) // as go-redis's EvalSha: a Cluster routes by KEYS[1]
	}
	return cmd
}

// Run sends c on p as (*redis.Script).Run does: EVALSHA, then EVAL when
// the server answers NOSCRIPT.
func (c Command) Run(ctx context.Context, p Processor) *redis.Cmd {
	cmd := c.EvalSha(ctx)
	_ = p.Process(ctx, cmd)
	if NoScript(cmd.Err()) {
		cmd = c.Eval(ctx)
		_ = p.Process(ctx, cmd)
	}
	return cmd
}

// NoScript reports whether err says that the server lacks the script.
func NoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// run sends a binding's call c on r: as one command when r is a
// CommandRunner, else with its KEYS and ARGV apart.
func run(ctx context.Context, r Runner, c Command) *redis.Cmd {
	if cr, ok := r.(CommandRunner); ok {
		return cr.RunCommand(ctx, c)
	}
	return r.Run(ctx, c.Script, c.Keys(), c.Argv()...)
}

// evalsha is the command of a Command.
const evalsha = "evalsha"

// boxedScript is a script's SHA1 and composed source, boxed once (load).
type boxedScript struct{ sha, src any }

// boxedScripts holds every loaded script's (load; read only afterwards).
var boxedScripts = map[*redis.Script]boxedScript{}

// sha returns script's SHA1 as a command argument, boxed once.
func sha(script *redis.Script) any {
	if b, ok := boxedScripts[script]; ok {
		return b.sha
	}
	return script.Hash()
}

// source returns script's composed source, for EVAL.
func source(script *redis.Script) any {
	return boxedScripts[script].src
}

// Direct runs scripts on a go-redis client as (*redis.Script).Run does:
// EVALSHA, then EVAL when the server answers NOSCRIPT.
type Direct struct {
	Client redis.Scripter
}

// Run implements Runner. A script of this package is sent with its
// recorded digest (see load): go-redis's Run of a script without a digest
// computed in Go would send EVALSHA twice before its EVAL.
func (d Direct) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	b, ok := boxedScripts[script]
	if !ok {
		return script.Run(ctx, d.Client, keys, args...)
	}
	if p, ok := d.Client.(Processor); ok {
		return NewCommand(script, keys, args).Run(ctx, p)
	}
	cmd := d.Client.EvalSha(ctx, b.sha.(string), keys, args...)
	if NoScript(cmd.Err()) {
		cmd = d.Client.Eval(ctx, b.src.(string), keys, args...)
	}
	return cmd
}

// RunCommand implements CommandRunner: the same commands as Run, built
// once (a client that cannot Process gets Run).
func (d Direct) RunCommand(ctx context.Context, c Command) *redis.Cmd {
	if p, ok := d.Client.(Processor); ok {
		return c.Run(ctx, p)
	}
	return d.Run(ctx, c.Script, c.Keys(), c.Argv()...)
}

// Script arguments boxed once: passing a string to a script as an any
// allocates otherwise, at every call.
var (
	flags = [2]any{"0", "1"}
	boxed = map[string]any{"": "", "0": "0", "1": "1", "publish": "publish", "spublish": "spublish"}
	_     = CommandRunner(Direct{})
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
