package errs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply as go-redis returns it.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ redis.Error = replyErr("")

// NOPERM (and a script's "can't" replies), NOAUTH and OOM are wrapped in
// their sentinels, keeping Redis's text and the reply itself; anything
// else is left alone.
func TestRefused(t *testing.T) {
	for reply, want := range map[string]error{
		"NOPERM this user has no permissions to access one of the keys used as arguments":  ErrNoPermission,
		"ERR The user executing the script can't run this command or subcommand script: x": ErrNoPermission,
		"NOAUTH Authentication required.":                                                  ErrNoAuth,
		"OOM command not allowed when used memory > 'maxmemory'.":                          ErrOutOfMemory,
		"ERR unknown command": nil,
		"WRONGTYPE Operation against a key holding the wrong kind of value": ErrWrongType,
	} {
		err := ReplyError(fmt.Errorf("lock %q: %w", "x", replyErr(reply)))
		if want == nil {
			if !errors.Is(err, replyErr(reply)) || errors.Is(err, ErrNoPermission) {
				t.Errorf("%s: got %v", reply, err)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", reply, err, want)
		}
		var re redis.Error
		if want != ErrWrongType && (!errors.As(err, &re) || re.Error() != reply) {
			t.Errorf("%s: the reply is not kept in %v", reply, err)
		}
		if again := ReplyError(err); again != err && want != ErrWrongType {
			t.Errorf("%s: wrapped twice: %v", reply, again)
		}
	}
	if Refused(errors.New("NOPERM not a reply")) != nil || Refused(nil) != nil {
		t.Error("only replies are refusals")
	}
}
