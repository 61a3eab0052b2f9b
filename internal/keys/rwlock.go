package keys

import "strings"

// RWTimeoutKey returns the timeout key of owner's n-th read hold (n ≥ 1) on
// the read-write lock name: RWTimeoutPrefix(name, owner) + ":" + n.
func RWTimeoutKey(name, owner string, n int64) string {
	return RWTimeoutPrefix(name, owner) + ":" + Itoa(n)
}

// RWTimeoutParts splits RWTimeoutPrefix around the owner, for scripts that
// build the timeout keys of every reader field they find in the hash:
// head + owner + tail == RWTimeoutPrefix(name, owner) for every owner.
func RWTimeoutParts(name string) (head, tail string) {
	const mark = "\x00"
	p := RWTimeoutPrefix(name, mark)
	i := strings.LastIndex(p, mark)
	return p[:i], p[i+len(mark):]
}
