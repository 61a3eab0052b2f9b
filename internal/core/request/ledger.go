package request

import (
	"sync"

	"github.com/redisync/redisync/internal/keys"
)

// Ledger numbers a client's requests on its counted semaphores and keeps,
// per semaphore, the numbers whose outcome the client does not know yet
// (lua/prelude_ledger.lua has the why). Each request carries its number and
// the lowest such number on its semaphore, the low-water mark, below which
// the ledger in Redis drops what it keeps. The numbers are the client's
// own, increasing over all its semaphores; the ledger's key carries the
// client's random request id, so two clients never share one.
type Ledger struct {
	reqID   string // the client's: the ledger keys' suffix
	mu      sync.Mutex
	next    int64
	pending map[string]map[int64]struct{} // by semaphore name
}

// Ledger returns the client's ledger of counted-semaphore requests, made
// on first use.
func (r *Requests) Ledger() *Ledger {
	r.ledgerOnce.Do(func() { r.ledger = &Ledger{reqID: r.id, pending: make(map[string]map[int64]struct{})} })
	return r.ledger
}

// Key returns the key of the client's ledger on the semaphore called name,
// in the semaphore's slot.
func (l *Ledger) Key(name string) string { return keys.Request(name, "ledger:"+l.reqID) }

// Begin numbers a new request on the semaphore called name and returns its
// number and the client's low-water mark on name: the lowest number of its
// requests on name whose outcome it does not know, this one included. End
// must follow once the outcome is known, or given up.
func (l *Ledger) Begin(name string) (seq, low int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	seq = l.next
	p := l.pending[name]
	if p == nil {
		p = make(map[int64]struct{})
		l.pending[name] = p
	}
	p[seq] = struct{}{}
	low = seq
	for s := range p {
		low = min(low, s)
	}
	return seq, low
}

// End says that the outcome of the requests seqs on name is known (or
// given up on): later copies of them may be treated as stale.
func (l *Ledger) End(name string, seqs ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending[name]
	for _, s := range seqs {
		delete(p, s)
	}
	if len(p) == 0 {
		delete(l.pending, name)
	}
}
