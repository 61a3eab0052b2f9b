package core

import (
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The sentinel errors. The root package re-exports them under the same
// names; they live here so that internal packages can return them.
var (
	ErrNotHeld         = errors.New("redisync: not held")
	ErrLockLost        = errors.New("redisync: lock lost")
	ErrClosed          = errors.New("redisync: client closed")
	ErrInvalidArgument = errors.New("redisync: invalid argument")
	ErrUpgrade         = errors.New("redisync: write lock requested while holding only the read lock")
	ErrNotReplicated   = errors.New("redisync: not acknowledged by enough replicas")
	ErrWrongType       = errors.New("redisync: key holds data of another type")
	ErrDuplicateID     = errors.New("redisync: client id in use by another live client")
)

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
// any other error is returned as it is. Primitives pass every error of an
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
