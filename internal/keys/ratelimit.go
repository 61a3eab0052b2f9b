package keys

import "strings"

// Rate limiter layout (Redisson RRateLimiter): the configuration is a hash
// at the bare name (fields rate, interval, type, keepAliveTime); the state
// of an OVERALL limiter is the string RateValue (permits left) and the zset
// RatePermits (the log of grants); a PER_CLIENT limiter keeps the same pair
// per client, with ":" and the client id appended. RateClients is
// redisync's own addition: the set of client ids that have per-client keys,
// which Delete reads to remove them all. Redisson neither reads nor writes
// it.

// RateValue is the string holding an OVERALL limiter's permits left.
func RateValue(name string) string { return Suffix(name, "value") }

// RatePermits is the zset of an OVERALL limiter's grants, scored by the
// grant time in epoch milliseconds.
func RatePermits(name string) string { return Suffix(name, "permits") }

// RateClientValue is a PER_CLIENT limiter's permits left for one client.
func RateClientValue(name, client string) string { return RateValue(name) + ":" + client }

// RateClientPermits is the zset of a PER_CLIENT limiter's grants to one
// client.
func RateClientPermits(name, client string) string { return RatePermits(name) + ":" + client }

// RateClients is the set of the ids of the clients that keep per-client
// keys of the limiter (redisync's registry; Redisson does not use it).
func RateClients(name string) string { return Suffix(name, "clients") }

// RateScanPattern is the SCAN MATCH pattern of every key whose name starts
// with Tag(name) + ":" (glob characters of the name escaped): a superset of
// the limiter's per-client keys, which RateClientOf picks out.
func RateScanPattern(name string) string { return globEscape(Tag(name)) + ":*" }

// RateClientOf reports whether key is a per-client key of the limiter
// called name, RateClientValue (value true) or RateClientPermits (value
// false), and of which client. An id holding ":" is refused: a Redisson
// client's id is a UUID, and such keys belong to limiters whose names
// start with this one's value or permits key.
func RateClientOf(name, key string) (client string, value, ok bool) {
	for _, p := range []struct {
		prefix string
		value  bool
	}{{RateValue(name) + ":", true}, {RatePermits(name) + ":", false}} {
		if id, found := strings.CutPrefix(key, p.prefix); found && id != "" && !strings.Contains(id, ":") {
			return id, p.value, true
		}
	}
	return "", false, false
}

// globEscape escapes the characters that Redis's glob patterns (KEYS, SCAN
// MATCH) treat as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
