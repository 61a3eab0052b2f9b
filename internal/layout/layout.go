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
// one. A lock's fields are owners "<client id>:<n>" (a non-empty client
// id, a colon, a decimal token) holding hold counts, positive integers; a
// read-write lock's are also "mode", read or write, and writers
// "<client id>:<n>:write" holding hold counts.
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

// IsOwner reports whether f is an owner, "<client id>:<n>": a non-empty
// client id (a UUID, or a redisync Client's WithID), a colon, and a
// decimal token (a redisync owner token or a Java thread id).
func IsOwner(f string) bool {
	i := strings.LastIndexByte(f, ':')
	return i > 0 && isDigits(f[i+1:])
}

// isHoldCount reports whether v is a hold count: a positive integer.
func isHoldCount(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n > 0
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
