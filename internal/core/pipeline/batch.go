package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/lua"
)

// call is one script call on its way to a primary: what the caller asked
// for, and what the batch that carried it found.
type call struct {
	cmd   lua.Command
	reply *redis.Cmd // EVALSHA, EVAL after NOSCRIPT; the caller's
	// sync: the caller waits for the replicas (a Sync); start is when the
	// call was made, from which its acknowledgement is bounded.
	sync  bool
	start time.Time
	// ackErr is set, for a call with sync, when the write was not
	// acknowledged by enough replicas in time (wraps ErrNotReplicated).
	ackErr error
	// done carries the batch's end to the caller (pipelined); state says
	// who is done with the call (waiting, delivered, abandoned).
	done  chan struct{}
	state atomic.Int32
	one   [1]*call // the batch of a call sent alone
}

// ack is what one batch asks of the replicas: how many acknowledgements,
// for at most how long (ms, at least 1: WAIT 0 would wait forever).
type ack struct {
	want int
	ms   int64
}

// ackFor returns what a batch of calls waits for on a primary with n
// replicas online (unknown: read in the batch), and false when it waits
// for nothing: no call with sync, or no replica. A call's acknowledgement
// is bounded from its start (one bound: WithReplicaSync's timeout), so a
// re-sent call, or one that waited in the queue, waits for what is left.
func (ac *acks) ackFor(calls []*call, n int) (ack, bool) {
	var oldest time.Time
	for _, c := range calls {
		if c.sync && (oldest.IsZero() || c.start.Before(oldest)) {
			oldest = c.start
		}
	}
	if oldest.IsZero() || n == 0 {
		return ack{}, false
	}
	want := ac.sync.Replicas
	if want == All {
		want = n
	}
	left := ac.sync.Timeout - time.Since(oldest)
	ms := left.Milliseconds()
	if left%time.Millisecond != 0 {
		ms++
	}
	return ack{want: want, ms: max(ms, 1)}, true
}

// send runs calls, each a state-changing script with its keys on node's
// slot, on the primary node (p's) in one pipeline, and waits for the
// replicas when a call asks for it: see the package doc. Each call gets
// its own reply (and ackErr); an error of one does not fail the others.
func (pl *Pipeline) send(ctx context.Context, p *primary, node *redis.Client, calls []*call) {
	n, id, verify := pl.acks.countFor(ctx, p, node, calls)
	a, wait := pl.acks.ackFor(calls, n)
	var learn *redis.StringCmd
	if n == unknown {
		// Not known yet (no call waits, or the first read failed): read
		// with the batch (INFO replication first), which waits for nothing.
		wait = false
		learn = newInfoReplication(ctx)
	}
	// A batch that waits is judged by the primary that ran it, always.
	verify = verify || wait
	pending := calls
	for try := 0; len(pending) > 0; try++ {
		if try > 0 {
			learn = nil
		}
		if !wait && !verify && learn == nil && len(pending) == 1 {
			_ = node.Process(ctx, pending[0].reply) // no pipeline to build
		} else {
			pl.batch(ctx, p, node, pending, plan{learn: learn, wait: wait, a: a, verify: verify, expect: id})
		}
		pending = pl.noScript(ctx, pending, try)
		if wait {
			a, wait = pl.acks.ackFor(pending, n) // what is left of their bound
		}
	}
}

// plan is what one pipeline of a batch carries besides its calls: a read
// of a count not known yet first (learn), a WAIT for a (wait), and the
// INFO replication of the server that ran it last (verify), judged
// against the replication id the count is of (expect).
type plan struct {
	learn  *redis.StringCmd
	wait   bool
	a      ack
	verify bool
	expect string
}

// batch runs calls in one pipeline on node as how says, and settles them
// (settle) or learns the count (learn).
func (pl *Pipeline) batch(ctx context.Context, p *primary, node *redis.Client, calls []*call, how plan) {
	pipe := node.Pipeline()
	if how.learn != nil {
		_ = pipe.Process(ctx, how.learn)
	}
	for _, c := range calls {
		_ = pipe.Process(ctx, c.reply)
	}
	var acked *redis.IntCmd
	if how.wait {
		acked = redis.NewIntCmd(ctx, "wait", how.a.want, how.a.ms)
		_ = pipe.Process(ctx, acked)
	}
	var info *redis.StringCmd
	if how.verify {
		info = newInfoReplication(ctx)
		_ = pipe.Process(ctx, info)
	}
	stop := pl.acks.wake(node, how.wait, how.a.ms)
	_, _ = pipe.Exec(ctx)
	stop()
	if how.verify {
		pl.acks.settle(p, calls, how.a, acked, info, how.expect)
	} else if how.learn != nil {
		pl.acks.learn(p, how.learn)
	}
}

// countFor returns the count a batch of calls waits for on p, read first
// (readFirst) when it is not known yet and a call waits for replicas, the
// replication id of the primary it is of, and whether the batch must
// read the INFO replication of the primary that runs it (count).
func (ac *acks) countFor(ctx context.Context, p *primary, node *redis.Client, calls []*call) (n int, id string, verify bool) {
	n, id, verify = ac.count(p, node)
	if n == unknown && anySync(calls) {
		n, id, verify = ac.readFirst(ctx, p, node)
	}
	return n, id, verify
}

// anySync reports whether a call of calls waits for the replicas.
func anySync(calls []*call) bool {
	for _, c := range calls {
		if c.sync {
			return true
		}
	}
	return false
}

// readFirst reads the count of a primary not read yet before the first
// batch that waits for its replicas (INFO replication, a round trip of its
// own, bounded by WithReplicaSync's timeout: once per primary, again only
// after a failed read), and returns what count returns then; unknown when
// the read failed, which fails nothing: that batch then reads it in its
// own pipeline and waits for no replica. The batch cannot
// read it in its own pipeline and still wait: WAIT must follow the writes
// on their connection, and its count is known only from the reply; a
// write not acknowledged because its count was not known yet would be a
// write a failover may lose although the caller was told it was safe.
func (ac *acks) readFirst(ctx context.Context, p *primary, node *redis.Client) (n int, id string, verify bool) {
	rctx, cancel := context.WithTimeout(ctx, ac.sync.Timeout)
	defer cancel()
	info := newInfoReplication(rctx)
	_ = node.Process(rctx, info)
	ac.learn(p, info)
	if info.Err() != nil && !errs.IsReply(info.Err()) {
		ac.log.Debug("redisync: could not read the primary's replicas; this batch waits for none", "err", info.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	return p.want(now, ac.sync.Forget), p.id, p.hadReplicas(now, ac.sync.Forget)
}

// learn records the count a batch read (INFO replication) on a primary whose count was
// unknown. A failed read changes nothing (the next batch reads again); a
// server that refuses INFO replication has its count read again in
// the background, as one with no replica.
func (ac *acks) learn(p *primary, info *redis.StringCmd) {
	if n, id, ok := parseReplication(info); ok {
		p.set(n, id)
	} else if errs.IsReply(info.Err()) {
		p.set(0, "")
	}
}

// noScript returns the calls of a batch that the server refused for
// lacking their script, made ready to be sent again with the script's
// source (EVAL loads it); none after the second try.
func (pl *Pipeline) noScript(ctx context.Context, calls []*call, try int) []*call {
	var again []*call
	for _, c := range calls {
		if lua.NoScript(c.reply.Err()) && try == 0 {
			c.reply = c.cmd.Eval(ctx)
			again = append(again, c)
		}
	}
	return again
}

// settle sets each call's ackErr from a batch's WAIT (acked, nil when the
// batch waited for none) and the INFO replication read after it (info),
// and records the count info read. expect is the replication id of the
// primary whose count the batch waited for.
//
// A batch is judged by the primary that ran it: when that is not the
// one expected (a client that reaches two primaries: a Sentinel client
// whose connections straddle a failover, or an old primary back from a
// partition before the sentinels demote it, taking writes that its
// demotion will discard), its calls are acknowledged only if that
// primary's own replicas acknowledged them (primary.judge), else they
// fail with ErrNotReplicated, their replies too: what that primary
// answered (acquired, not held) may not be what the primary that stays
// has. Every call, whether it waits for replicas or not, fails so, its
// reply with it, when the primary that ran it has fewer replicas online
// than it is counted with, even when it is the
// primary the client expected: a client whose last batch ran on the old
// primary expects it. An INFO replication that cannot be read, or that
// is not a primary's, fails them too: which primary has the writes is
// then unknown.
// Fewer acknowledgements than wanted acknowledge a call all the same when
// the client waits for every replica and the primary has no more online
// now (one gone since the count was read), counting a replica that
// dropped out of the count within the last Forget (want).
func (ac *acks) settle(p *primary, calls []*call, a ack, acked *redis.IntCmd, info *redis.StringCmd, expect string) {
	online, ran, ok := parseReplication(info)
	if ok {
		p.set(online, ran)
	}
	err := ac.verdict(p, a, acked, ranOn{online, ran, ok, info}, expect)
	stale := err // which primary ran the batch is not known
	if ok {
		stale = ac.stale(p, ran, online)
	}
	for _, c := range calls {
		switch {
		case c.reply.Err() != nil:
		case stale != nil:
			// Whatever the client expected, that primary may be an old
			// one about to be demoted: what it answered (acquired, not
			// held, a permit unknown) may not be what the primary that
			// stays has. The call fails as one whose reply was lost: its
			// engine undoes or settles it (errs.MayHaveRun).
			c.reply.SetErr(stale)
			if c.sync {
				c.ackErr = stale
			}
		case c.sync:
			c.ackErr = err
			if err != nil && ran != expect {
				// Not acknowledged, by another primary than the one
				// counted: its reply is not believed either.
				c.reply.SetErr(err)
			}
		}
	}
}

// ranOn is what a batch read of the server that ran it (INFO replication,
// after its writes): the replicas online of the primary ran, or not ok
// (info's error, or not a primary).
type ranOn struct {
	online int
	ran    string
	ok     bool
	info   *redis.StringCmd
}

// verdict returns the acknowledgement error of a batch that waited as a
// says (acked, nil when it waited for none) and ran as r says, its count
// having been of the primary expect (settle).
func (ac *acks) verdict(p *primary, a ack, acked *redis.IntCmd, r ranOn, expect string) error {
	var got int64
	var werr error
	if acked != nil {
		got, werr = acked.Result()
	}
	online, ran, ok, info := r.online, r.ran, r.ok, r.info
	need := func() int64 {
		n := p.judge(ran, online, ac.sync.Forget)
		if ac.sync.Replicas != All {
			n = min(n, ac.sync.Replicas)
		}
		return int64(n)
	}
	switch {
	case werr != nil:
		return fmt.Errorf("%w: WAIT failed: %w", errs.ErrNotReplicated, werr)
	case !ok:
		return fmt.Errorf("%w: could not read which primary ran the writes (%v)", errs.ErrNotReplicated, infoErr(info))
	case ran != expect:
		if n := need(); got < n {
			return fmt.Errorf("%w: the writes ran on another primary than the one counted (replication id %s, not %s), and %d of its %d replicas acknowledged them",
				errs.ErrNotReplicated, ran, expect, got, n)
		}
		return nil
	case got >= int64(a.want):
		return nil
	case ac.sync.Replicas == All && got >= need():
		return nil
	}
	return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", errs.ErrNotReplicated, got, a.want, ac.sync.Timeout)
}

// stale returns the error of the calls of a batch that ran on the
// primary ran, which has online replicas online: nil when it has every
// replica it is counted with (primary.judge).
func (ac *acks) stale(p *primary, ran string, online int) error {
	if n := p.judge(ran, online, ac.sync.Forget); online < n {
		return fmt.Errorf("%w: the primary that answered (replication id %s) has %d of the %d replicas it had: it may be an old primary about to be demoted, which discards what it has",
			errs.ErrNotReplicated, ran, online, n)
	}
	return nil
}

// infoErr says why info (INFO replication) read no primary's
// replication: its error, or that the server is not a primary.
func infoErr(info *redis.StringCmd) any {
	if err := info.Err(); err != nil {
		return err
	}
	return "not a primary"
}

// wake returns a stop function; when wait, until stopped, it sends PING to
// node a little after WAIT's timeout of ms, and again every wakeAgain: a
// server wakes up only every 1000/hz ms (100 ms by default) when idle, and
// would answer WAIT that much late; any command makes it notice the
// timeout at once (again: a PING that arrived before WAIT did not).
func (ac *acks) wake(node *redis.Client, wait bool, ms int64) func() {
	if !wait {
		return noStop
	}
	wk := &waker{node: node}
	wk.mu.Lock() // ping reads wk.t
	wk.t = time.AfterFunc(time.Duration(ms)*time.Millisecond+wakeLate, wk.ping)
	wk.mu.Unlock()
	return wk.stop
}

// waker pings a node until stopped (wake).
type waker struct {
	node    *redis.Client
	t       *time.Timer
	mu      sync.Mutex
	stopped bool
}

func (w *waker) ping() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = w.node.Ping(ctx).Err()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Reset(wakeAgain)
	}
}

func (w *waker) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

// wakeLate is how long after WAIT's timeout wake sends its first PING:
// enough for the server's clock to have passed the timeout; wakeAgain,
// how often it sends another while WAIT's reply has not come.
const (
	wakeLate  = 2 * time.Millisecond
	wakeAgain = 10 * time.Millisecond
)

func noStop() {}
