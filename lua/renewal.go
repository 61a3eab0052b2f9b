package lua

import "github.com/redis/go-redis/v9"

// Renewal is one hold's part of a batch renewal script's call (the common
// renewal encoding of RenewalBatch): the script, and the hold's KEYS and
// ARGV. RenewLockHold and RenewReadHold, generated from the scripts'
// "-- Hold" header entries, implement it.
type Renewal interface {
	Renewal() (script *redis.Script, keys []string, args []any)
}

// RenewalBatch is the KEYS and ARGV of one call of a batch renewal script
// (renew_lock.lua, renew_read.lua), in their common encoding:
//
//	KEYS: the keys of every hold in the batch, in order
//	ARGV[1]: lease in milliseconds
//	ARGV[2]: number of holds n
//	then per hold: number of its keys, number of its args, its args (its
//	  Renewal's, then the hold count the client believes in, which the
//	  script sets in Redis)
//
// The script replies with n results, RenewLockRenewed or RenewLockGone
// (renew_read.lua's codes are the same).
type RenewalBatch struct {
	keys []string
	args []any
}

// NewRenewalBatch starts the call that renews n holds with a lease of
// leaseMillis; Add each of them.
func NewRenewalBatch(leaseMillis int64, n int) *RenewalBatch {
	return &RenewalBatch{args: []any{leaseMillis, n}}
}

// Add appends a hold: its keys and args (from its Renewal) and the hold
// count the client believes in.
func (b *RenewalBatch) Add(keys []string, args []any, count int64) {
	b.keys = append(b.keys, keys...)
	b.args = append(b.args, len(keys), len(args)+1)
	b.args = append(b.args, args...)
	b.args = append(b.args, count)
}

// Keys returns the call's KEYS.
func (b *RenewalBatch) Keys() []string { return b.keys }

// Args returns the call's ARGV.
func (b *RenewalBatch) Args() []any { return b.args }
