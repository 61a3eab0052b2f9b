package lua_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/lua"
)

// recorder is a go-redis hook keeping the arguments of every command sent.
type recorder struct{ sent [][]any }

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.sent = append(r.sent, lua.ArgValues(cmd.Args()))
		return next(ctx, cmd)
	}
}

// splitRunner is a Runner without RunCommand: the bindings give it their
// KEYS and ARGV apart, which (*redis.Script).Run sends.
type splitRunner struct{ d lua.Direct }

func (s splitRunner) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.d.Run(ctx, script, keys, args...)
}

// A binding's command (RunCommand) sends what (*redis.Script).Run sends
// for its KEYS and ARGV: EVALSHA, then EVAL after a NOSCRIPT, argument for
// argument.
func TestCommandOnTheWire(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	rec := &recorder{}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	rdb.AddHook(rec)
	t.Cleanup(func() { _ = rdb.Close() })
	a := lua.LockAcquireFreshArgs{Lock: "l", Request: "req:c:1", LeaseMillis: 30000, FieldAt: 5,
		Deadline: 1 << 41, Fenced: true, Counter: "ctr"}

	sent := func(r lua.Runner) [][]any {
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		rec.sent = nil
		_, err := a.Run(ctx, r)
		require.NoError(t, err)
		got := rec.sent
		require.NoError(t, rdb.Del(ctx, "l", "req:c:1", "ctr").Err())
		return got
	}
	split := sent(splitRunner{lua.Direct{Client: rdb}})
	whole := sent(lua.Direct{Client: rdb})
	require.Len(t, split, 2, "EVALSHA, NOSCRIPT, then EVAL")
	assert.Equal(t, "evalsha", split[0][0])
	assert.Equal(t, "eval", split[1][0])
	assert.Equal(t, split, whole)
	assert.Equal(t, split[0][2:], split[1][2:], "EVAL: the same numbers of keys, keys and args")
	assert.Equal(t, []any{"evalsha", lua.LockAcquireFresh.Hash(), 3, "l", "req:c:1", "ctr", int64(30000), int64(5), int64(1 << 41), "1"}, whole[0])

	a.Counter, a.Fenced = "", false // an optional key left out
	split, whole = sent(splitRunner{lua.Direct{Client: rdb}}), sent(lua.Direct{Client: rdb})
	assert.Equal(t, split, whole)
	assert.Equal(t, 2, whole[0][2])
}
