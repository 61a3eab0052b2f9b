package errs

import (
	"errors"
	"testing"
)

// The replies by which a server that cannot run scripts refuses them, as
// Redis 6.2 and 7.x word them, are ErrNoScripting (an ACL refusal also
// ErrNoPermission); a refusal of a script's keys or inner commands is not.
func TestNoScripting(t *testing.T) {
	for _, tc := range []struct {
		reply   string
		no, acl bool
	}{
		{"ERR unknown command 'evalsha', with args beginning with: 'abc' '1' 'k' ", true, false},
		{"ERR unknown command 'eval', with args beginning with: ", true, false},
		{"ERR unknown command `evalsha`, with args beginning with: `abc`, ", true, false},
		{"NOPERM User u-1 has no permissions to run the 'evalsha' command", true, true},
		{"NOPERM this user has no permissions to run the 'eval' command or its subcommand", true, true},
		{"NOPERM User u-1 has no permissions to run the 'script|load' command", true, true},
		{"NOPERM No permissions to access a key", false, true},
		{"ERR The user executing the script can't run this command or subcommand script: abc", false, true},
		{"ERR unknown command 'foo', with args beginning with: ", false, false},
	} {
		err := ReplyError(replyErr(tc.reply))
		if got := errors.Is(err, ErrNoScripting); got != tc.no {
			t.Errorf("%q: ErrNoScripting %v, want %v", tc.reply, got, tc.no)
		}
		if got := errors.Is(err, ErrNoPermission); got != tc.acl {
			t.Errorf("%q: ErrNoPermission %v, want %v", tc.reply, got, tc.acl)
		}
	}
}
