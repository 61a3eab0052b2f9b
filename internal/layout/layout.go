package layout

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redisync/redisync/internal/core/errs"
)

// writeSuffix ends a read-write lock's writer field, "<owner>:write".
const writeSuffix = ":write"

// BadField returns a field of hash that no lock has (rw false) or no
// read-write lock has (rw true), in sorted order, and whether there is
// one. A lock's fields are owners "<client id>:<token>" (any client of
// Redisson's protocol: see [IsOwner]) holding hold counts (non-negative
// integers: 0 is a field that a release within a minimum hold keeps until
// the lock expires); a read-write lock's are also "mode", read or write,
// and writers "<owner>:write" holding hold counts.
func BadField(hash map[string]string, rw bool) (field string, ok bool) {
	for _, f := range sortedFields(hash) {
		v := hash[f]
		switch {
		case rw && f == "mode":
			if v == "read" || v == "write" {
				continue
			}
		case IsOwner(f) && isHoldCount(v):
			continue
		case rw && strings.HasSuffix(f, writeSuffix) && IsOwner(strings.TrimSuffix(f, writeSuffix)) && isHoldCount(v):
			continue
		}
		return f, true
	}
	return "", false
}

// Check returns nil when hash (HGETALL of the key name; empty when there
// is no key) is laid out as a lock (rw false) or a read-write lock (rw
// true: also with a mode field whenever the hash exists), and otherwise
// an error wrapping errs.ErrWrongType that names the field no lock has.
func Check(name string, hash map[string]string, rw bool) error {
	if f, bad := BadField(hash, rw); bad {
		return fmt.Errorf("%w (key %s is a hash with a field %q that no lock has: not a lock, left unchanged)", errs.ErrWrongType, name, f)
	}
	if _, mode := hash["mode"]; rw && len(hash) > 0 && !mode {
		return fmt.Errorf("%w (key %s is a hash without a mode field: not a read-write lock, left unchanged)", errs.ErrWrongType, name)
	}
	return nil
}

// IsOwner reports whether f is an owner, "<client id>:<token>": a
// non-empty client id (a UUID, or a redisync Client's WithID), a colon,
// and a non-empty token: a redisync owner token or a Java thread id (a
// decimal number), or what another client of Redisson's protocol uses
// (node-redisson: a second UUID). A field is told from an application's
// by what it holds too (a hold count), not by the token's shape.
func IsOwner(f string) bool {
	i := strings.IndexByte(f, ':')
	return i > 0 && i < len(f)-1
}

// isHoldCount reports whether v is a hold count: a non-negative decimal
// integer (0: a field a release within a minimum hold keeps).
func isHoldCount(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(v, 10, 63)
	return err == nil
}

// sortedFields returns hash's fields in order, so that the field named
// is the same at every call.
func sortedFields(hash map[string]string) []string {
	fs := make([]string, 0, len(hash))
	for f := range hash {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}
