package main

import (
	"fmt"
	"strings"

	"github.com/redisync/redisync/internal/keys"
)

// kind is a primitive as recognised from its Redis layout. Its value is
// the report's JSON "type" and the -type value: one spelling, snake_case.
type kind string

const (
	kindLock        kind = "lock"
	kindFair        kind = "fair_lock" // a lock with a waiting queue
	kindRWLock      kind = "rwlock"
	kindSemaphore   kind = "semaphore"
	kindExpirable   kind = "expirable_semaphore"
	kindLatch       kind = "latch"
	kindRateLimiter kind = "rate_limiter" // Redisson RRateLimiter's config hash
	// kindNone is the type of a report on a name under which nothing is
	// stored (Redis's TYPE says "none" too). It is not a -type value.
	kindNone kind = "none"
	// kindCounter is the type of a report on a string holding an integer
	// ≥ 0 that no waiter tells apart: a latch's count or a semaphore's
	// available permits, which are stored alike. It is not a -type value:
	// -type latch or -type semaphore says which.
	kindCounter kind = "latch_or_semaphore"
)

var allKinds = []kind{kindLock, kindFair, kindRWLock, kindSemaphore, kindExpirable, kindLatch, kindRateLimiter, kindElection}

// ownChannel reports whether the kind's waiters subscribe to a channel no
// other kind uses: an expirable semaphore shares the semaphore's, a fair
// lock's waiters (and an election's candidates) each have their own, under
// the lock's channel, and a rate limiter has none.
func (k kind) ownChannel() bool {
	return k != kindExpirable && k != kindFair && k != kindElection && !k.rateLimit()
}

// title is the kind's name in prose.
func (k kind) title() string {
	switch k {
	case kindFair:
		return "fair lock"
	case kindRWLock:
		return "read-write lock"
	case kindExpirable:
		return "expirable semaphore"
	case kindRateLimiter:
		return "rate limiter"
	case kindCounter:
		return "latch or semaphore"
	}
	return string(k)
}

// isLock reports whether the kind is one that unlock frees.
func (k kind) isLock() bool { return k == kindLock || k == kindFair || k == kindRWLock }

// withArticle returns the kind's name in prose after "a" or "an": "a lock",
// "an expirable semaphore".
func (k kind) withArticle() string { return withArticle(k.title()) }

// withArticle puts "a" or "an" before phrase, chosen by its first letter:
// "an" before a vowel. That is right for every word inspect and unlock put
// after an article; words like "unit" or "hour" would need a list.
func withArticle(phrase string) string {
	if phrase != "" && strings.ContainsRune("aeiouAEIOU", rune(phrase[0])) {
		return "an " + phrase
	}
	return "a " + phrase
}

// channel is where the primitive's waiters subscribe; for a fair lock, the
// prefix of its waiters' channels (<channel>:<owner>); "" for a rate
// limiter, which has no channel.
func (k kind) channel(name string) string {
	switch k {
	case kindLock, kindFair, kindElection:
		return keys.LockChannel(name)
	case kindRWLock:
		return keys.RWChannel(name)
	case kindLatch:
		return keys.LatchChannel(name)
	case kindRateLimiter, kindCounter:
		return "" // a counter's waiters: on both channels (Report.Waiters)
	}
	return keys.SemaphoreChannel(name)
}

// kindValue is a flag.Value holding a kind ("" when not set).
type kindValue struct{ k kind }

func (v *kindValue) String() string { return string(v.k) }

// Set takes a kind's -type value, which is also the type a report gives,
// so a script can pass back what a report said.
func (v *kindValue) Set(s string) error {
	for _, k := range allKinds {
		if s == string(k) {
			v.k = k
			return nil
		}
	}
	return fmt.Errorf("unknown type %q (want one of %s)", s, kindNames())
}

// kindNames lists the -type values, comma-separated.
func kindNames() string {
	names := make([]string, len(allKinds))
	for i, k := range allKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
