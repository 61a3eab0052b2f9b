package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// maxNameInKey caps the test-name part of a key; the random suffix, not
// the name, is what makes keys unique.
const maxNameInKey = 80

// Key returns a key name unique to this call:
// "t:<test name>:<8 random hex digits>[:part...]". In the test name every
// character other than ASCII letters, digits, '-', '_' and '.' becomes '_'
// (so subtest slashes and braces disappear), and braces in parts become
// '_', so the key never contains a Redis Cluster hash tag; callers that
// want one add it themselves. Two calls never return the same key, also
// within one test.
func Key(t testing.TB, parts ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t:")
	b.WriteString(sanitize(t.Name()))
	b.WriteByte(':')
	b.WriteString(randomHex(4))
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(strings.NewReplacer("{", "_", "}", "_").Replace(p))
	}
	return b.String()
}

func sanitize(name string) string {
	if len(name) > maxNameInKey {
		name = name[:maxNameInKey]
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b)
}
