package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// User creates an ACL user on s with rules (ACL SETUSER's: "~app:*",
// "&*", "+@all", "-publish", ...), deleted when the test ends, and returns
// the option that makes a client of Client log in as it:
//
//	rdb := s.Client(t, s.User(t, "~*", "&*", "+@all", "-subscribe"))
func (s *Server) User(t testing.TB, rules ...string) func(*redis.Options) {
	t.Helper()
	name, password := "u-"+randomHex(6), randomHex(12)
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + password}
	for _, r := range rules {
		args = append(args, r)
	}
	s.Do(t, args...)
	t.Cleanup(func() {
		if s.running() {
			s.Do(t, "ACL", "DELUSER", name)
		}
	})
	return func(o *redis.Options) { o.Username, o.Password = name, password }
}
