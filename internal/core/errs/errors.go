package errs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The sentinel errors. The root package re-exports them under the same
// names; they live here so that every internal package can return them.
var (
	ErrNotHeld         = errors.New("redisync: not held")
	ErrLockLost        = errors.New("redisync: lock lost")
	ErrClosed          = errors.New("redisync: client closed")
	ErrInvalidArgument = errors.New("redisync: invalid argument")
	ErrUpgrade         = errors.New("redisync: write lock requested while holding only the read lock")
	ErrNotReplicated   = errors.New("redisync: not acknowledged by enough replicas")
	ErrWrongType       = errors.New("redisync: key holds data of another type")
	ErrDuplicateID     = errors.New("redisync: client id in use by another live client")
	ErrStateLost       = errors.New("redisync: the primitive's state vanished with its server")
	ErrNoPermission    = errors.New("redisync: refused by the Redis user's ACL")
	ErrNoAuth          = errors.New("redisync: not authenticated to Redis")
	ErrOutOfMemory     = errors.New("redisync: Redis is out of memory (maxmemory)")
	ErrNoScripting     = errors.New("redisync: the server cannot run scripts")
	// ErrKeyspaceEventsOff: the key's node publishes no keyspace
	// notifications of deletions and expiries (package pubsub, Keyspace).
	ErrKeyspaceEventsOff = errors.New("redisync: keyspace notifications are off")
)

// noScriptingError is ErrNoScripting with what Redis said and what to do;
// errors.Is also finds ErrNoPermission when the ACL refused the script.
type noScriptingError struct {
	acl   bool
	reply error
}

func (e *noScriptingError) Error() string {
	return ErrNoScripting.Error() + " (" + e.reply.Error() + "): nothing was written; redisync runs every " +
		"operation as a Lua script with EVALSHA and EVAL: enable scripting on the server (Valkey: load its Lua " +
		"module; do not rename-command EVAL or EVALSHA away), allow +evalsha +eval to the ACL user (SECURITY.md), " +
		"or connect past the proxy that refuses them"
}

func (e *noScriptingError) Unwrap() []error {
	if e.acl {
		return []error{ErrNoScripting, ErrNoPermission, e.reply}
	}
	return []error{ErrNoScripting, e.reply}
}

// noScripting returns err as a noScriptingError when it is the reply by
// which a server that cannot run scripts refuses EVALSHA, EVAL or SCRIPT:
// an unknown command (no scripting engine, or renamed away with
// rename-command) or an ACL refusal of the command itself (NOPERM ... to
// run the 'evalsha' command); nil otherwise. A refusal of a script's keys
// or of a command the script calls is not one: the server runs scripts.
func noScripting(err error, msg string) error {
	lower := strings.ToLower(msg)
	for _, cmd := range []string{"'evalsha'", "'eval'", "'script'", "'script|"} {
		switch {
		case strings.HasPrefix(lower, "err unknown command "+cmd),
			strings.HasPrefix(lower, "err unknown command `"+strings.Trim(cmd, "'|")):
			return &noScriptingError{reply: err}
		case strings.HasPrefix(msg, "NOPERM") && strings.Contains(lower, "to run the "+cmd):
			return &noScriptingError{acl: true, reply: err}
		}
	}
	return nil
}

// refusals map the error replies by which Redis refuses a command for
// what the connection may do to the sentinels they stand for: NOPERM (a
// command, key or channel the ACL user lacks; inside a script, Redis 7.0
// says "ERR The user executing the script can't ..." instead), NOAUTH and
// OOM (a write above maxmemory, also from a script's redis.call).
var refusals = []struct {
	prefix   string
	sentinel error
}{
	{"NOPERM", ErrNoPermission},
	{"ERR The user executing the script can't", ErrNoPermission},
	{"NOAUTH", ErrNoAuth},
	{"OOM", ErrOutOfMemory},
}

// refusedError is a refusal's sentinel with Redis's reply: errors.Is finds
// the sentinel, errors.As the redis.Error, and the text is Redis's.
type refusedError struct {
	sentinel error
	reply    error
}

func (e *refusedError) Error() string   { return e.sentinel.Error() + ": " + e.reply.Error() }
func (e *refusedError) Unwrap() []error { return []error{e.sentinel, e.reply} }

// Refused returns err wrapped with the sentinel of the refusal it is
// (ErrNoScripting for a server that cannot run scripts, see noScripting;
// ErrNoPermission, ErrNoAuth or ErrOutOfMemory), keeping Redis's text, and
// nil when err is no such reply (or already wrapped).
func Refused(err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return nil
	}
	var done *refusedError
	var ns *noScriptingError
	if errors.As(err, &done) || errors.As(err, &ns) {
		return nil
	}
	msg := re.Error()
	if e := noScripting(err, msg); e != nil {
		return e
	}
	for _, r := range refusals {
		if strings.HasPrefix(msg, r.prefix) {
			return &refusedError{sentinel: r.sentinel, reply: err}
		}
	}
	return nil
}

// wrongTypeReplies start the error replies that mean a key holds another
// type than the script expects: Redis's own (a command on a key of another
// type) and the scripts' (wrong_type and number_at in
// lua/prelude_types.lua: a key of the right Redis type whose content is
// not the primitive's, which would otherwise fail in Lua, e.g. comparing a
// number with nil).
// INCRBY and DECR on a string that is not an integer answer "ERR value is
// not an integer or out of range" (the scripts send them integers only).
var wrongTypeReplies = []string{"WRONGTYPE", "REDISYNC_WRONGTYPE", "ERR value is not an integer"}

// wrongTypeError is ErrWrongType with what Redis said, cut before the
// script's name and line.
type wrongTypeError struct{ detail string }

func (e *wrongTypeError) Error() string {
	return ErrWrongType.Error() + " (" + e.detail + ")"
}

func (e *wrongTypeError) Unwrap() error { return ErrWrongType }

// ReplyError maps an error reply of a script or command to the redisync
// error it stands for: a wrong-type reply (WRONGTYPE, REDISYNC_WRONGTYPE)
// becomes an error wrapping ErrWrongType, without the script's sha and line;
// a refusal (NOPERM, NOAUTH, OOM) one wrapping its sentinel and the reply
// (Refused); any other error is returned as it is. Primitives pass every error of an
// operation through it where they wrap it with their kind and name (the
// lock engine in Lock.fail), after the engine has decided on undo and
// settle from the raw error (IsReply).
//
// A reply that should be a number but is not (a string key read with GET
// and parsed by go-redis: *strconv.NumError) is a wrong type too.
func ReplyError(err error) error {
	if err == nil {
		return nil
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return &wrongTypeError{detail: strconv.Quote(ne.Num) + " is not an integer"}
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	if r := Refused(err); r != nil {
		return r
	}
	msg := re.Error()
	for _, p := range wrongTypeReplies {
		if !strings.HasPrefix(msg, p) {
			continue
		}
		detail := strings.TrimPrefix(strings.TrimPrefix(msg, "ERR "), p+" ")
		if i := strings.Index(detail, " script: "); i >= 0 {
			detail = detail[:i]
		}
		return &wrongTypeError{detail: strings.TrimSpace(detail)}
	}
	return err
}

// CtxError is the error of a wait ended by ctx: errors.Is(err, ctx.Err())
// holds, and so does errors.Is(err, context.Cause(ctx)).
func CtxError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("redisync: wait ended: %w (%w)", ctx.Err(), cause)
	}
	return fmt.Errorf("redisync: wait ended: %w", ctx.Err())
}

// IsReply reports whether err is an error reply from Redis (the server ran
// the command and answered), as opposed to a network or context error after
// which the command may or may not have run.
func IsReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// NotRun reports whether err is an error reply by which Redis says it did
// not run the request at all (loading its data after a restart, busy with
// a script, a replica or a cluster not ready): re-sending is safe and may
// succeed.
func NotRun(err error) bool {
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "CLUSTERDOWN", "MOVED", "ASK"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// RefusedLate reports whether err is a script's refusal of a request that
// reached Redis after its deadline (lua/prelude_request.lua, refuse_late):
// the request changed nothing.
func RefusedLate(err error) bool { return redis.HasErrorPrefix(err, "REDISYNC_LATE") }

// MayHaveRun reports whether a state-changing request that failed with err
// may still have taken place, so that what it did must be undone or
// settled: when no reply came (a network error, a timeout), and also when
// the reply says only that the last copy did not run (LOADING, BUSY,
// READONLY, ...) or came too late (REDISYNC_LATE). go-redis re-sends a
// request after a network error and after such replies, so an earlier copy
// may have run before the server answered the last one — a primary killed
// after running it (its append-only file keeps the write) answers the
// re-sent copy LOADING once restarted. Any other error reply is the
// script's own answer: nothing ran.
func MayHaveRun(err error) bool {
	return err != nil && (!IsReply(err) || NotRun(err) || RefusedLate(err))
}
