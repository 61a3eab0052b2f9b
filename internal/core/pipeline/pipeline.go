package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/lua"
)

// The bounds of one batch: at most maxBatch calls and about maxBatchBytes
// of arguments (a call larger than that goes alone). They bound what one
// round trip holds up and what a pipeline buffers, far above what a
// Client's callers make in one round trip on loopback (bench: tens).
const (
	maxBatch      = 256
	maxBatchBytes = 256 << 10
)

// maxInFlight is how many batches may be in flight to one primary at once,
// and smallInFlight when more than one may be: a call (or a batch) goes
// beside the batches in flight only while they carry fewer than
// smallInFlight calls in all. With a few callers per Client each call is
// sent at once on a connection of its own, as go-redis alone would, and a
// small batch held up (a WAIT the replicas do not answer, up to its
// timeout: an undo re-sent in the background) holds up no other. Under
// load the batches grow past smallInFlight and mostly one is in flight:
// the server, not the round trip, bounds the rate there, and more batches
// in flight only make them smaller (many-locks, 256 goroutines on 4
// Clients, one lock each, loopback, 2-CPU machine: one in flight 21,306
// lock+unlock/s, mean batch 31 calls; two always allowed 15,764/s, mean
// batch 16). Measured with the bench, before and after in the same
// minutes: 4 goroutines on one Client, a lock each (clients-many-locks,
// one process), 9,453 and 10,311/s with one in flight, 15,463 and
// 16,777/s with these; many-locks 46,362 and 48,616/s (mean batch 31.6),
// then 47,066 and 46,190/s (mean batch 16.8, Redis CPU per op the same);
// with 128 such processes, where the server is the bound, 11,353 and
// 10,857/s with one in flight (0.98 round trips per op), 9,677 and
// 10,717/s with these (2.1: their few calls no longer share one).
// Each batch in flight holds a connection. Order between calls of
// different batches is not kept, as it is not between two connections:
// the scripts' request records make every call apply once whatever the
// order its copies and undos arrive in (lua/prelude_request.lua), and a
// call whose caller waits for it is never in flight beside that caller's
// next call.
const (
	maxInFlight   = 4
	smallInFlight = 4
)

// queue is the script queue of one primary: calls wait in pending while a
// batch is in flight, and go together in the next one.
type queue struct {
	mu       sync.Mutex
	node     *redis.Client // the primary's client (the latest routed)
	pending  []*call
	inFlight int
	// inFlightCalls is how many calls the batches in flight carry.
	inFlightCalls int
	// stats, for the bench (Stats)
	batches atomic.Uint64
	calls   atomic.Uint64
}

// Stats counts the batches a Client sent through its script pipelines and
// the calls they carried (mean batch size: Calls/Batches).
type Stats struct {
	Batches uint64
	Calls   uint64
}

// Stats returns the batches sent so far, on every primary.
func (pl *Pipeline) Stats() Stats {
	var s Stats
	pl.primaries.mu.RLock()
	defer pl.primaries.mu.RUnlock()
	for _, p := range pl.primaries.m {
		s.Batches += p.queue.batches.Load()
		s.Calls += p.queue.calls.Load()
	}
	return s
}

// call states (call.state): who is done with a call gives it back to the
// pool once both are.
const (
	waiting   int32 = iota // in a batch, its caller waiting
	delivered              // the batch is done with it
	abandoned              // its caller has gone (its context ended)
)

// callPool holds calls for reuse: a call and its channel are allocated
// once, not at every script call.
var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// newCall returns a call of cmd, from the pool.
func newCall(ctx context.Context, cmd lua.Command, sync bool) *call {
	c := callPool.Get().(*call)
	c.cmd, c.reply, c.sync, c.ackErr = cmd, cmd.EvalSha(ctx), sync, nil
	c.start = time.Now()
	c.state.Store(waiting)
	return c
}

// release gives c back to the pool.
func (c *call) release() {
	c.cmd, c.reply, c.ackErr = lua.Command{}, nil, nil
	callPool.Put(c)
}

// size is about how many bytes c's arguments take in a pipeline.
func (c *call) size() int {
	n := 0
	for _, a := range c.cmd.Args {
		switch v := a.(type) {
		case string:
			n += len(v) + 16
		case *string:
			n += len(*v) + 16
		default:
			n += 24
		}
	}
	return n
}

// pipelined runs one call through the queue of its primary p (node's) and
// returns its reply and acknowledgement error. A call that finds nothing
// in flight to p is sent at once by its caller, alone, as a direct call
// would be: no hand-over to another goroutine when idle. Otherwise it
// waits in the queue for the next batch; when ctx ends first, pipelined
// returns a reply with ctx's error at once: the call goes on in its batch
// for the others, and its caller undoes it as after any reply lost.
func (pl *Pipeline) pipelined(ctx context.Context, p *primary, node *redis.Client, c *call) (*redis.Cmd, error) {
	q := &p.queue
	q.mu.Lock()
	q.node = node
	if len(q.pending) == 0 && q.room() {
		q.inFlight++
		q.inFlightCalls++
		q.mu.Unlock()
		q.batches.Add(1)
		q.calls.Add(1)
		c.one[0] = c
		pl.send(ctx, p, node, c.one[:])
		c.one[0] = nil
		q.mu.Lock()
		q.inFlightCalls--
		q.mu.Unlock()
		pl.handOn(p)
		reply, ackErr := c.reply, c.ackErr
		c.release()
		return reply, ackErr
	}
	q.pending = append(q.pending, c)
	start := q.room()
	if start {
		q.inFlight++
	}
	q.mu.Unlock()
	if start {
		pl.handOn(p)
	}
	select {
	case <-c.done:
		reply, ackErr := c.reply, c.ackErr
		c.release()
		return reply, ackErr
	case <-ctx.Done():
		if c.state.Swap(abandoned) == delivered {
			<-c.done
			reply, ackErr := c.reply, c.ackErr
			c.release()
			return reply, ackErr
		}
		reply := redis.NewCmd(ctx)
		reply.SetErr(ctx.Err())
		return reply, nil
	}
}

// room reports whether one more batch may go now (q.mu held): when none
// is in flight, or beside small ones (smallInFlight).
func (q *queue) room() bool {
	return q.inFlight == 0 || (q.inFlight < maxInFlight && q.inFlightCalls < smallInFlight)
}

// handOn passes an in-flight slot of p on: to a sender goroutine when
// calls are pending, else back to the queue.
func (pl *Pipeline) handOn(p *primary) {
	q := &p.queue
	q.mu.Lock()
	if len(q.pending) == 0 {
		q.inFlight--
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	if !pl.startSender(p) {
		pl.drain(p) // the client is closing: this caller sends
	}
}

// startSender starts a goroutine that sends p's batches until none is
// pending, and reports false when the client is closing.
func (pl *Pipeline) startSender(p *primary) bool {
	if !pl.bg.Track() {
		return false
	}
	go func() {
		defer pl.bg.Untrack()
		pl.drain(p)
	}()
	return true
}

// drain sends p's pending calls, a batch at a time, until none is left,
// then ends its part of the in-flight count.
func (pl *Pipeline) drain(p *primary) {
	q := &p.queue
	var batch []*call
	for {
		q.mu.Lock()
		batch = q.take(batch[:0])
		node := q.node
		if len(batch) == 0 {
			q.inFlight--
			q.mu.Unlock()
			return
		}
		q.inFlightCalls += len(batch)
		q.mu.Unlock()
		q.batches.Add(1)
		q.calls.Add(uint64(len(batch)))
		pl.send(context.Background(), p, node, batch)
		q.mu.Lock()
		q.inFlightCalls -= len(batch)
		q.mu.Unlock()
		for i, c := range batch {
			c.deliver()
			batch[i] = nil
		}
	}
}

// take moves the next batch from pending into batch (q.mu held): the
// oldest calls, within the bounds.
func (q *queue) take(batch []*call) []*call {
	n, bytes := 0, 0
	for n < len(q.pending) && n < maxBatch {
		s := q.pending[n].size()
		if n > 0 && bytes+s > maxBatchBytes {
			break
		}
		bytes += s
		n++
	}
	batch = append(batch, q.pending[:n]...)
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	return batch
}

// deliver hands c's outcome to its caller, or gives c back to the pool
// when its caller has gone.
func (c *call) deliver() {
	if c.state.Swap(delivered) == abandoned {
		c.release()
		return
	}
	c.done <- struct{}{}
}
