package keys

// Election layout (package election). The lock is the election's name
// itself (a fenced lock in Redisson's layout: Lock hash, FenceCounter);
// these share its slot.

// ElectionLeader is the hash of an election's latest leader record:
// "{name}:leader".
func ElectionLeader(name string) string { return Suffix(name, "leader") }

// ElectionLog is the list of an election's latest leader records, newest
// first: "{name}:leaders".
func ElectionLog(name string) string { return Suffix(name, "leaders") }

// ElectionChannel is the channel an election's new records are published
// on: "redisync_election:{name}".
func ElectionChannel(name string) string { return Prefix("redisync_election", name) }

// ElectionKeys lists every key of the election called name: its lock (the
// name), the leader record, the records' log, the fair lock's queue and
// its timeouts, and the fencing counter, in that order.
func ElectionKeys(name string) []string {
	return []string{name, ElectionLeader(name), ElectionLog(name), FairQueue(name), FairTimeouts(name), FenceCounter(name)}
}
