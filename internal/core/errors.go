package core

import (
	"errors"
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
	ErrWrongType       = errors.New("redisync: key holds data of another type")
	ErrDuplicateID     = errors.New("redisync: client id in use by another live client")
)

// wrongTypeReplies start the error replies that mean a key holds another
// type than the script expects: Redis's own (a command on a key of another
// type) and the scripts' (check_type and check_number in
// lua/prelude_request.lua: a key of the right Redis type whose content is
// not the primitive's, which would otherwise fail in Lua, e.g. comparing a
// number with nil).
var wrongTypeReplies = []string{"WRONGTYPE", "REDISYNC_WRONGTYPE"}

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
func ReplyError(err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	for _, p := range wrongTypeReplies {
		if !strings.HasPrefix(msg, p+" ") {
			continue
		}
		detail := strings.TrimPrefix(msg, p+" ")
		if i := strings.Index(detail, " script: "); i >= 0 {
			detail = detail[:i]
		}
		return &wrongTypeError{detail: strings.TrimSpace(detail)}
	}
	return err
}
