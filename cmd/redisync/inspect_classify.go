package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/layout"
)

// classify recognises the primitive from the snapshot: its kind, whether
// that is a guess, and why; kindNone when nothing is stored under name. A
// key laid out as no primitive is an error wrapping errNotPrimitive; with
// anyHash, a hash of any layout is taken as a lock (a read-write lock with
// a mode field), for unlock -any.
func classify(s *snapshot, name string, forced kind, anyHash bool) (kind, bool, string, error) {
	switch s.typ {
	case "hash":
		return classifyHash(s, name, forced, anyHash)
	case "string":
		return classifyString(s, name, forced)
	case "none":
		return classifyNone(s, name, forced)
	}
	return "", false, "", fmt.Errorf("%q is a Redis %s: %w (locks, read-write locks and rate limiters are hashes; semaphores and latches are strings)", name, s.typ, errNotPrimitive)
}

// classifyHash recognises a hash: a read-write lock (a mode field, read or
// write, and owner fields), a lock (owner fields only; a fair lock when a
// waiting queue or timeouts zset exists too) or a rate limiter's config
// (rate, interval, type, keepAliveTime). An owner field is
// "<client id>:<owner token>" (a read-write lock's writer "<client id>:<owner token>:write")
// and holds a hold count, a positive integer. Any other hash is not a
// primitive, unless anyHash. -type lock shows a fair lock as a lock (it is
// one, without its queue); -type fair_lock shows a lock as a fair lock
// with nobody queued.
func classifyHash(s *snapshot, name string, forced kind, anyHash bool) (kind, bool, string, error) {
	if isLimiterHash(s.hash) {
		if forced == "" || forced == kindRateLimiter {
			return kindRateLimiter, false, limiterReason(s.hash), nil
		}
		return "", false, "", fmt.Errorf("%q is a hash with rate, interval and type fields: a rate limiter, not %s", name, forced.withArticle())
	}
	what, err := lockHashLayout(s.hash, name, anyHash)
	if err != nil {
		return "", false, "", err
	}
	if _, rw := s.hash["mode"]; rw {
		if forced == "" || forced == kindRWLock {
			return kindRWLock, false, what, nil
		}
		return "", false, "", fmt.Errorf("%q is a hash with a mode field: a read-write lock, not %s", name, forced.withArticle())
	}
	return classifyLockHash(s, name, forced, what)
}

// lockHashLayout describes a hash that is no rate limiter's config for a
// report's reason: a hash of owner fields, or with a mode field. A field
// no lock has (see badLockField) is an error wrapping errNotLockHash,
// unless anyHash: the reason then names it and says -any made it a lock.
func lockHashLayout(hash map[string]string, name string, anyHash bool) (string, error) {
	_, rw := hash["mode"]
	bad, ok := badLockField(hash)
	switch {
	case !ok && rw:
		return "a hash with a mode field", nil
	case !ok:
		return "a hash of owner fields", nil
	case !anyHash:
		return "", fmt.Errorf("%q is %w: a hash with %s (a lock's fields are owners \"<client id>:<owner token>\" holding hold counts, a read-write lock's also a mode read or write; a rate limiter's are rate, interval and type)",
			name, errNotLockHash, fieldsText(hash, bad))
	case rw:
		return fmt.Sprintf("a hash with a mode field and %s, not a read-write lock's layout; taken as one because of -any", fieldsText(hash, bad)), nil
	}
	return fmt.Sprintf("a hash with %s, not a lock's layout; taken as a lock because of -any", fieldsText(hash, bad)), nil
}

// classifyLockHash tells a lock and a fair lock apart, for a hash without
// a mode field that what describes: a fair lock's queue or timeouts zset
// makes it fair, unless -type lock; -type fair_lock makes any such hash a
// fair lock.
func classifyLockHash(s *snapshot, name string, forced kind, what string) (kind, bool, string, error) {
	fair := s.isFair()
	switch {
	case fair && (forced == "" || forced == kindFair):
		return kindFair, false, what + " and " + fairEvidence(s, name), nil
	case forced == "" || forced == kindLock:
		return kindLock, false, what, nil
	case forced == kindFair:
		return kindFair, false, what + ", set with -type; no waiting queue " + keys.FairQueue(name), nil
	case fair:
		return "", false, "", fmt.Errorf("%q is a hash without a mode field, with a waiting queue: a fair lock, not %s", name, forced.withArticle())
	}
	return "", false, "", fmt.Errorf("%q is a hash without a mode field: a lock, not %s", name, forced.withArticle())
}

// badLockField returns a field of hash that no lock or read-write lock
// has: not an owner holding a positive hold count, nor (with a mode field)
// the mode read or write, nor a writer "<owner>:write". ok is false when
// every field is a lock's. It is the library's rule (internal/layout), so
// that inspect and unlock refuse what rlock and rwlock refuse.
func badLockField(hash map[string]string) (field string, ok bool) {
	_, rw := hash["mode"]
	return layout.BadField(hash, rw)
}

// limiterFields are the fields of a Redisson RRateLimiter's config hash:
// rate, interval (ms) and type (0 overall, 1 per client) always,
// keepAliveTime (ms) from Redisson 3.44 on.
var limiterFields = []string{"rate", "interval", "type", "keepAliveTime"}

// isLimiterHash reports whether hash is a rate limiter's config: rate,
// interval and type, perhaps keepAliveTime, each an integer, and nothing
// else.
func isLimiterHash(hash map[string]string) bool {
	found := 0
	for _, f := range limiterFields {
		v, ok := hash[f]
		if !ok {
			continue
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return false
		}
		found++
	}
	_, hasKeepAlive := hash["keepAliveTime"]
	return found == len(hash) && (found == 3 && !hasKeepAlive || found == 4)
}

// limiterReason describes a rate limiter's config hash for a report.
func limiterReason(hash map[string]string) string {
	typ := map[string]string{"0": "overall", "1": "per client"}[hash["type"]]
	if typ == "" {
		typ = "type " + hash["type"]
	}
	reason := fmt.Sprintf("a hash of rate %s per interval %s ms, %s", hash["rate"], hash["interval"], typ)
	if ka, ok := hash["keepAliveTime"]; ok {
		reason += ", keepAliveTime " + ka + " ms"
	}
	return reason + ": Redisson's RRateLimiter config"
}

// sortedFields returns hash's fields in order.
func sortedFields(hash map[string]string) []string {
	fs := make([]string, 0, len(hash))
	for f := range hash {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return fs
}

// maxFieldsShown bounds how many fields a message about a hash names.
const maxFieldsShown = 4

// fieldsText names a hash's fields for a message, bad first: `fields
// "email", "name" (2 in all)`.
func fieldsText(hash map[string]string, bad string) string {
	shown := []string{strconv.Quote(truncate(bad))}
	for _, f := range sortedFields(hash) {
		if len(shown) == maxFieldsShown {
			break
		}
		if f != bad {
			shown = append(shown, strconv.Quote(truncate(f)))
		}
	}
	if len(hash) == 1 {
		return "field " + shown[0]
	}
	text := "fields " + strings.Join(shown, ", ")
	if len(hash) > len(shown) {
		text += fmt.Sprintf(", … (%d in all)", len(hash))
	}
	return text
}

// fairEvidence names the fair lock's keys that exist, for a reason.
func fairEvidence(s *snapshot, name string) string {
	switch {
	case s.queueType == "list" && s.fairType == "zset":
		return "a waiting queue " + keys.FairQueue(name) + " with its timeouts " + keys.FairTimeouts(name)
	case s.queueType == "list":
		return "a waiting queue " + keys.FairQueue(name)
	}
	return "a waiter timeouts zset " + keys.FairTimeouts(name)
}

// classifyString tells a semaphore, expirable semaphore and latch apart:
// they are all stored as a string holding an integer. An expirable
// semaphore whose permits are all available has no permit zset (Redis
// deletes an empty zset, and Redisson leaves nothing else): its layout is
// then a counted semaphore's, byte for byte, and so is what inspect shows
// of it (its available permits, none acquired). Such a string is reported
// as a semaphore, and the reason says that it may be an expirable one with
// no permits out; -type expirable_semaphore says which.
func classifyString(s *snapshot, name string, forced kind) (kind, bool, string, error) {
	n, err := strconv.ParseInt(s.value, 10, 64)
	if err != nil {
		return "", false, "", fmt.Errorf("%q is a string holding %q: %w (a semaphore's or latch's string holds an integer)", name, truncate(s.value), errNotPrimitive)
	}
	if forced.isLock() || forced == kindRateLimiter {
		return "", false, "", fmt.Errorf("%q is a string: a semaphore or latch, not %s", name, forced.withArticle())
	}
	if forced != "" {
		return forced, false, "set with -type", nil
	}
	if s.zsetType == "zset" {
		return kindExpirable, false, "a string with a permit zset " + keys.SemaphoreTimeouts(name), nil
	}
	if n < 0 {
		return kindSemaphore, false, "a negative string value without a permit zset: only a semaphore's permits go below zero; " + noPermitsOut, nil
	}
	k, reason := guessCounter(s.subs[keys.SemaphoreChannel(name)], s.subs[keys.LatchChannel(name)])
	return k, k != kindCounter, reason, nil
}

// noPermitsOut ends the reason of a semaphore found without a permit zset.
const noPermitsOut = "a counted semaphore, or an expirable one with no permits out (the same layout: -type expirable_semaphore if it is one)"

// guessCounter decides between a semaphore and a latch by the waiters on
// their channels (a semaphore's and an expirable semaphore's are the
// same): waiters on one channel only make it a guess of that kind;
// otherwise it is kindCounter, a latch or a semaphore.
func guessCounter(semSubs, latchSubs int64) (kind, string) {
	switch {
	case semSubs > 0 && latchSubs == 0:
		return kindSemaphore, fmt.Sprintf("stored as a latch is; %s on the semaphore channel, none on the latch's; -type latch if it is one", waitText(semSubs))
	case latchSubs > 0 && semSubs == 0:
		return kindLatch, fmt.Sprintf("stored as a semaphore is; %s on the latch channel, none on the semaphore's; -type semaphore if it is one", waitText(latchSubs))
	case latchSubs > 0:
		return kindCounter, "stored alike, and waiters on both channels; -type latch or semaphore says which"
	}
	return kindCounter, "stored alike, and no waiters tell which; -type latch, semaphore or expirable_semaphore says which"
}

// classifyNone recognises a primitive whose main key does not exist by
// its other keys (a permit zset, a fair lock's queue, a fencing counter)
// or, failing those, by the one channel that has waiters.
func classifyNone(s *snapshot, name string, forced kind) (kind, bool, string, error) {
	switch {
	case forced != "":
		return forced, false, "set with -type; no key " + name, nil
	case s.zsetType == "zset":
		return kindExpirable, false, "no key (no permits available) and a permit zset " + keys.SemaphoreTimeouts(name), nil
	case s.isFair():
		return kindFair, false, "no key (free) and " + fairEvidence(s, name), nil
	case s.fence != nil:
		return kindLock, false, "no key (free) and a fencing counter " + keys.FenceCounter(name), nil
	}
	var waited []kind
	for _, k := range allKinds {
		if k.ownChannel() && s.subs[k.channel(name)] > 0 {
			waited = append(waited, k)
		}
	}
	if len(waited) == 1 {
		k := waited[0]
		return k, true, fmt.Sprintf("no key, but %s on the %s channel", waitText(s.subs[k.channel(name)]), k.title()), nil
	}
	return kindNone, false, "no key, no permit zset, no fencing counter and no waiters on its channels", nil
}
