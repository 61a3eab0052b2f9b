package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
)

// Tag returns name wrapped in braces, or name itself when it already holds
// "{" (Redisson's suffixName/prefixName rule).
func Tag(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// Suffix returns Tag(name) + ":" + suffix, Redisson's suffixName.
func Suffix(name, suffix string) string { return Tag(name) + ":" + suffix }

// Prefix returns prefix + ":" + Tag(name), Redisson's prefixName.
func Prefix(prefix, name string) string { return prefix + ":" + Tag(name) }

// ClientRegistration is the key that a Client given an explicit id
// (redisync.WithID) registers the id under while it lives, so that a second
// live Client with the same id is refused: "redisync:client:{<id>}".
func ClientRegistration(id string) string { return Prefix("redisync:client", id) }

// Lock layout.

// LockChannel is the channel a lock's release is published on.
func LockChannel(name string) string { return Prefix("redisson_lock__channel", name) }

// LockWaiters is the lock's queue of waiting redisync Clients, a sorted
// set of their ids by arrival (lua/prelude_wake.lua): the release wakes
// the first live one. Redisson's scripts never read it.
func LockWaiters(name string) string { return Prefix("redisync_lock_waiters", name) }

// LockWaitState is the state of the lock's queue of waiting Clients, a
// hash: until when each counts as alive, and the holder recorded
// (lua/prelude_wake.lua).
func LockWaitState(name string) string { return Prefix("redisync_lock_wait_state", name) }

// LockWakePrefix is the prefix of the waiting Clients' own channels: the
// Client of id c listens on LockWakePrefix(name) + c.
func LockWakePrefix(name string) string { return Prefix("redisync_lock_wake", name) + ":" }

// SemaphoreWaiters is the semaphore's queue of waiting redisync Clients, a
// sorted set of client ids scored by when each joined, as a lock's
// (LockWaiters; lua/prelude_wake.lua).
func SemaphoreWaiters(name string) string { return Prefix("redisync_semaphore_waiters", name) }

// SemaphoreWaitState is the state of the semaphore's queue of waiting
// Clients, a hash: until when each counts as alive.
func SemaphoreWaitState(name string) string { return Prefix("redisync_semaphore_wait_state", name) }

// SemaphoreWakePrefix is the prefix of the Clients' own channels for the
// semaphore: the Client of id c listens on SemaphoreWakePrefix(name) + c.
func SemaphoreWakePrefix(name string) string { return Prefix("redisync_semaphore_wake", name) + ":" }

// FenceCounter is the fenced lock's token counter; unlock never deletes it.
func FenceCounter(name string) string { return Prefix("redisson_lock_token", name) }

// Read-write lock layout.

// RWChannel is the channel read and write releases are published on.
func RWChannel(name string) string { return Prefix("redisson_rwlock", name) }

// RWWriteField is the hash field of a write hold by owner.
func RWWriteField(owner string) string { return owner + ":write" }

// RWTimeoutPrefix is the prefix of owner's per-read-hold timeout keys; the
// n-th hold's key is RWTimeoutPrefix(name, owner) + ":" + n.
func RWTimeoutPrefix(name, owner string) string {
	return Tag(name) + ":" + owner + ":rwlock_timeout"
}

// Semaphore layout (RSemaphore and RPermitExpirableSemaphore).

// SemaphoreChannel is the channel releases of permits are published on.
func SemaphoreChannel(name string) string { return Prefix("redisson_sc", name) }

// SemaphoreTimeouts is the expirable semaphore's zset of permit ids scored by
// expiry time in epoch milliseconds.
func SemaphoreTimeouts(name string) string { return Suffix(name, "timeout") }

// Count-down latch layout.

// LatchChannel is the latch's channel. Redisson builds it as
// "redisson_countdownlatch__channel__{" + name + "}" whatever name holds, so
// unlike every other name here it does not follow Tag.
func LatchChannel(name string) string {
	return "redisson_countdownlatch__channel__{" + name + "}"
}

// Request is the key a state-changing script records its result under, so
// that the same request re-sent after a lost reply (go-redis retries on a
// dropped connection) returns the recorded result instead of applying twice.
// It always shares name's cluster slot, also for names whose braces do not
// form a hash tag ("a}b", "a{}b", "a{b"), where Tag would not. Request ids
// are a client's (request.Requests.Prefix and a sequence number, which
// hold no ':'), or a lock's owner field for the mark of a fresh hold ("<client id>:<token>").
// A name longer than LongName bytes is not repeated in full: see
// AppendRequestPrefix.
func Request(name, requestID string) string {
	return RequestPrefix(name) + requestID
}

// RequestPrefix is the part of name's request keys before the request id:
// Request(name, id) is RequestPrefix(name) + id.
func RequestPrefix(name string) string {
	var buf [128]byte // one allocation, the string, for names up to 100 bytes or so
	return string(AppendRequestPrefix(buf[:0], name))
}

// AppendRequestPrefix appends RequestPrefix(name) to dst, for a key
// built in a buffer of the caller's: it allocates nothing of its own (for
// a name of at most LongName bytes).
// Between the prefix and the colon stands what gives the key name's
// cluster slot: name itself when a hash tag decides its slot, else name
// or, for a name with stray braces, a short string of its slot, in braces.
//
// A name longer than LongName bytes stands as its first bytes (up to
// longNameHead, and before any brace: so a key prefix and an ACL key
// pattern on it still match), "~", 32 hex digits of its SHA-256, and a
// short string of its slot in braces: a request record stays about 150
// bytes whatever the name's length (a 1 MiB name would otherwise leave a
// 1 MiB record for each call, kept a few tens of seconds), in the name's
// slot, and distinct for distinct names.
func AppendRequestPrefix(dst []byte, name string) []byte {
	dst = append(dst, "redisync_request:"...)
	switch {
	case len(name) > LongName:
		head := name[:longNameHead]
		if i := strings.IndexAny(head, "{}"); i >= 0 {
			head = head[:i]
		}
		sum := sha256.Sum256([]byte(name))
		dst = append(append(dst, head...), '~')
		dst = hex.AppendEncode(dst, sum[:16])
		slotTagsOnce.Do(buildSlotTags)
		dst = append(append(append(dst, '{'), slotTags[Slot(name)]...), '}')
	case hasHashTag(name):
		dst = append(dst, name...) // its first hash tag decides the slot
	case !strings.ContainsAny(name, "{}"):
		dst = append(append(append(dst, '{'), name...), '}')
	default:
		slotTagsOnce.Do(buildSlotTags)
		dst = append(append(append(dst, '{'), slotTags[Slot(name)]...), '}')
	}
	return append(dst, ':')
}

// LongName is the longest name whose request records hold it in full
// (AppendRequestPrefix).
const LongName = 256

// longNameHead is how many of a long name's first bytes its request
// records keep.
const longNameHead = 64

// StrayBraces reports whether name holds braces that form no hash tag
// ("a}b", "a{}b", "a{b"): the keys and channels derived from it (Tag,
// Prefix, Suffix, LatchChannel) then hash to another cluster slot than
// name, where a name without braces, or with a hash tag, shares it with
// them (Request keeps name's slot in any case).
func StrayBraces(name string) bool {
	return strings.ContainsAny(name, "{}") && !hasHashTag(name)
}

// hasHashTag reports whether Redis Cluster hashes key by a tag: a "{"
// followed later by a "}" with something between them.
func hasHashTag(key string) bool {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return false
	}
	return strings.IndexByte(key[s+1:], '}') > 0
}

var (
	slotTagsOnce sync.Once
	slotTags     [16384]string // slotTags[i]: a short string hashing to slot i
)

// buildSlotTags fills slotTags with base-36 numbers, the first that hashes
// to each slot (about 160,000 CRCs, a few milliseconds, once per process
// and only for names with stray braces).
func buildSlotTags() {
	filled := 0
	for i := int64(0); filled < len(slotTags); i++ {
		s := strconv.FormatInt(i, 36)
		if sl := crc16(s) % 16384; slotTags[sl] == "" {
			slotTags[sl] = s
			filled++
		}
	}
}

// Slot returns the Redis Cluster hash slot of key (CRC16 of the hash tag or
// of the whole key, modulo 16384).
func Slot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return int(crc16(key) % 16384)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), the one Redis Cluster uses,
// a byte at a time (crc16Table): a long name's slot (AppendRequestPrefix)
// costs about a millisecond per MiB.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table[b] is the CRC of the byte b shifted through the register.
var crc16Table = func() (t [256]uint16) {
	for b := range t {
		crc := uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[b] = crc
	}
	return t
}()

// Itoa is strconv.FormatInt for the hold numbers in timeout key names.
func Itoa(n int64) string { return strconv.FormatInt(n, 10) }
