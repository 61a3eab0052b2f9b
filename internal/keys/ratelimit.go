package keys

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
