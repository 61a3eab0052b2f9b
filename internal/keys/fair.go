package keys

// Fair lock layout (Redisson RFairLock): the lock hash is the name, as for
// the lock; the waiters wait in a list and a zset, each on its own channel.

// FairQueue is the fair lock's list of waiting owners, in arrival order.
func FairQueue(name string) string { return Prefix("redisson_lock_queue", name) }

// FairTimeouts is the fair lock's zset of waiting owners, scored by the
// epoch-millisecond time by which each must take its turn or be dropped.
func FairTimeouts(name string) string { return Prefix("redisson_lock_timeout", name) }

// FairChannel is the channel of one waiting owner of a fair lock: a release
// publishes on the channel of the owner at the head of the queue only. The
// scripts build it from LockChannel(name) + ":" + owner.
func FairChannel(name, owner string) string { return LockChannel(name) + ":" + owner }
