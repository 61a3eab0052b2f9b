package countdown

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redisync/redisync/internal/core/errs"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
	"github.com/redisync/redisync/pubsub"
)

// Message payloads on the latch channel, as Redisson sends them.
const (
	zeroMessage = "0" // the count reached zero
	newMessage  = "1" // the latch was set or deleted
)

// Latch is a count-down latch on Redis, compatible with Redisson's
// RCountDownLatch: a coordinator sets a count with TrySetCount, workers in
// any process call CountDown, and every Wait returns once the count reaches
// zero. It is a handle: creating one does no I/O, and it is safe for
// concurrent use. A latch has no owner: any handle on the same name, in any
// process, counts down the same count.
type Latch struct {
	h       core.Handle
	channel string
	// chanInKeys: the channel shares the counter's cluster slot, so scripts
	// declare it in KEYS. Redisson builds the channel as "...{" + name + "}",
	// which for a name holding braces hashes to another slot; a script
	// declaring both would fail with CROSSSLOT on a Redis Cluster, so the
	// channel then travels in ARGV (PUBLISH touches no key).
	chanInKeys bool
	// fence is the key a count's read writes (latch_count.lua): the
	// client's own, in the counter's slot.
	fence string
}

// New returns a handle on the latch called name. It does no I/O and never
// fails: an empty name is reported, wrapping redisync.ErrInvalidArgument, by
// the first operation.
func New(c *redisync.Client, name string) *Latch {
	h := core.NewHandle((*core.Client)(c), "countdown", name)
	ch := keys.LatchChannel(h.Name)
	l := &Latch{
		h:          h,
		channel:    ch,
		chanInKeys: keys.Slot(ch) == keys.Slot(h.Name),
	}
	if h.C != nil { // a nil client is reported by every call (Check)
		l.fence = keys.Request(h.Name, h.C.ID()+":read")
	}
	l.h.OwnSlot = true // the counter and its request records: any name works on a Cluster
	return l
}

// Name returns the latch's name, which is also its Redis key (after the
// Client's key prefix, redisync.WithKeyPrefix, which Name leaves out).
func (l *Latch) Name() string { return l.h.Given }

// latchOp is one of the latch's state-changing scripts.
type latchOp int

const (
	trySetCount latchOp = iota // latch_try_set_count.lua
	countDown                  // latch_count_down.lua
	deleteLatch                // latch_delete.lua
)

// done and again say, in the error of a change the replicas did not
// acknowledge, what took effect on the primary and what not to do.
func (op latchOp) done() string {
	switch op {
	case trySetCount:
		return "set"
	case countDown:
		return "counted down"
	}
	return "deleted"
}

func (op latchOp) again() string {
	if op == countDown {
		return "do not count down again"
	}
	return "a failover before a replica has it may undo it; Count tells"
}

// message returns what the script publishes.
func (op latchOp) message() string {
	if op == countDown {
		return zeroMessage
	}
	return newMessage
}

// published tells from the script's result whether it published (or, for
// run's own SPUBLISH, would have).
func (op latchOp) published(res int64) bool {
	switch op {
	case trySetCount:
		return res == lua.LatchTrySetCountSet
	case countDown:
		return res == lua.LatchCountDownOpened
	}
	return res == lua.LatchDeleteExisted
}

// run runs a state-changing latch script with a fresh request key and
// deadline (n is latch_try_set_count's count). The channel goes in KEYS
// when it shares the counter's slot, else in ARGV.
//
// With sharded pub/sub a channel outside the counter's slot cannot be
// published from the script (SPUBLISH runs on the node of the channel's
// slot, the script on the counter's): the script then publishes nothing,
// and run sends the SPUBLISH itself right after, to the channel's node. That
// message is not atomic with the change: if it is lost (the process dies in
// between, the node is unreachable), waiters find the change on their next
// re-check.
func (l *Latch) run(ctx context.Context, op latchOp, n int64) (int64, error) {
	deadline := l.h.C.Requests().Deadline(ctx)
	pub, err := l.h.C.PublishCommand(ctx)
	if err != nil {
		return 0, err
	}
	after := pub == core.SPublish && !l.chanInKeys
	if after {
		pub = "" // the script publishes nothing
	}
	request, msg := keys.Request(l.h.Name, l.h.C.Requests().ID()), op.message()
	channel, channelArg := l.channel, ""
	if !l.chanInKeys {
		channel, channelArg = "", l.channel
	}
	// Every change waits for the replicas (WithReplicaSync): a count-down
	// lost in a failover would leave a latch that never opens, a set or a
	// delete lost so would open or close it again behind the callers'
	// backs (a set latch read open lets its waiters through).
	sync := l.h.C.Pipeline().NewSync()
	var res int64
	err = l.h.C.Requests().Resend(ctx, func() (err error) {
		switch op {
		case trySetCount:
			res, err = lua.LatchTrySetCountArgs{Latch: l.h.Name, Request: request, Channel: channel, Count: n,
				Deadline: deadline, Message: msg, Publish: pub, ChannelArg: channelArg}.Run(ctx, l.h.C.Pipeline().Runner(sync))
		case countDown:
			res, err = lua.LatchCountDownArgs{Latch: l.h.Name, Request: request, Channel: channel,
				Deadline: deadline, Message: msg, Publish: pub, ChannelArg: channelArg}.Run(ctx, l.h.C.Pipeline().Runner(sync))
		default:
			res, err = lua.LatchDeleteArgs{Latch: l.h.Name, Request: request, Channel: channel,
				Deadline: deadline, Message: msg, Publish: pub, ChannelArg: channelArg}.Run(ctx, l.h.C.Pipeline().Runner(sync))
		}
		return err
	})
	if err == nil && after && op.published(res) {
		if err := l.h.C.Redis().SPublish(ctx, l.channel, msg).Err(); err != nil {
			// The change is made; reporting an error would invite a retry
			// that counts down twice. Waiters re-check on their timers.
			l.h.C.Logger().Warn("redisync: latch changed but its SPUBLISH failed; waiters find out on their next re-check",
				"latch", l.h.Name, "channel", l.channel, "err", err)
		}
	}
	if err == nil && sync.SyncErr() != nil {
		err = fmt.Errorf("%s on the primary (it took effect: %s): %w", op.done(), op.again(), sync.Err)
	}
	return res, err
}

// maxCount bounds a latch's count: the scripts compare and decrement it as
// a Lua number (a double), exact up to 2^53.
const maxCount = 1 << 53

// TrySetCount sets the count to n if the latch is not set (its count is
// zero), and publishes the change. It returns true when it set the count,
// false when the latch was already set (the count is unchanged). n must be
// between 1 and 2^53 (the scripts count in Lua numbers, doubles, which are
// exact up to 2^53; the semaphores have the same bound), else TrySetCount
// returns an error wrapping redisync.ErrInvalidArgument and sends nothing.
// A call re-sent by go-redis after a lost reply is applied once and
// reports what the first run did.
//
// When it returns an error other than a bad argument, the count may or may
// not have been set; Count tells. Like a count-down it waits for the
// replicas (WithReplicaSync): one that took effect on the primary only
// returns an error wrapping redisync.ErrNotReplicated.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Latch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if err := l.h.Check(ctx); err != nil {
		return false, err
	}
	if n <= 0 || n > maxCount {
		return false, fmt.Errorf("%w: countdown %q: count %d, must be between 1 and 2^53", redisync.ErrInvalidArgument, l.h.Name, n)
	}
	res, err := l.run(ctx, trySetCount, n)
	if err != nil {
		return false, fmt.Errorf("countdown %q: set count: %w", l.h.Name, errs.ReplyError(err))
	}
	return res == lua.LatchTrySetCountSet, nil
}

// CountDown decrements the count by one. When it reaches zero the latch is
// deleted, which opens it, and every waiter, in every process, is woken.
// The count never goes below zero: counting down a latch that is not set
// (never set, already at zero, or deleted) does nothing and is not an
// error, as in Redisson.
//
// CountDown runs even when ctx is already cancelled (on a detached context
// with a bounded timeout), so a worker's deferred CountDown after its
// request was cancelled still counts. A count-down re-sent by go-redis after
// a lost reply is applied once, also when the latch was set anew in
// between. When it returns an error other than a bad argument or
// redisync.ErrClosed, the count-down may or may not have been applied.
//
// After a network error it may or may not have taken effect, and calling
// again may apply it twice. See “Errors and retries” in [redisync].
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.h.Check(ctx); err != nil {
		return err
	}
	ctx, cancel := l.h.C.Background().Detached(ctx)
	defer cancel()
	if _, err := l.run(ctx, countDown, 0); err != nil {
		return fmt.Errorf("countdown %q: count down: %w", l.h.Name, errs.ReplyError(err))
	}
	return nil
}

// Count returns the current count: 0 when the latch is not set (open).
// With replica acknowledgement on (the default), the count is believed
// only once the replicas have every change it saw (the read writes a
// short-lived fence key of the client's and waits for the replicas, as a
// count-down does): a count read on the old primary of a split brain, or
// of changes not on the replicas yet, fails with an error wrapping
// redisync.ErrNotReplicated, and so do the waits' reads.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.h.Check(ctx); err != nil {
		return 0, err
	}
	n, err := l.count(ctx)
	if err != nil {
		return 0, fmt.Errorf("countdown %q: %w", l.h.Name, errs.ReplyError(err))
	}
	return n, nil
}

// count reads the counter; absent or not positive is 0. With replica
// acknowledgement on, the read is a write (latch_count.lua writes the
// client's fence key) acknowledged as the changes are: a count is
// believed only once the replicas have every change it saw. The old
// primary of a split brain, cut off or back before its demotion, has
// count-downs no replica has, which its demotion discards: a latch read
// open there is set again on the promoted replica. A read without a
// write cannot be acknowledged (WAIT waits for the offset of the
// connection's last write), and judging the server by the replicas it
// lists does not suffice (it lists its promoted replica until its
// repl-timeout). Without acknowledgement, a plain GET.
func (l *Latch) count(ctx context.Context) (int64, error) {
	if !l.h.C.Pipeline().On() {
		return l.get(ctx)
	}
	sync := l.h.C.Pipeline().NewSync()
	n, err := lua.LatchCountArgs{Latch: l.h.Name, Fence: l.fence}.
		Run(ctx, l.h.C.Pipeline().Runner(sync))
	if err != nil {
		return 0, err
	}
	if err := sync.SyncErr(); err != nil {
		return 0, fmt.Errorf("the count read is not on the replicas yet: %w", err)
	}
	return n, nil
}

// get reads the counter with a GET: absent or not positive is 0. It
// writes nothing and waits for no replica.
func (l *Latch) get(ctx context.Context) (int64, error) {
	s, err := l.h.C.Redis().Get(ctx, l.h.Name).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: count %q is not an integer", redisync.ErrWrongType, s)
	}
	return max(n, 0), nil
}

// Wait blocks until the count is zero, as long as ctx allows. A latch that
// is not set is open: Wait then returns nil at once. Waiters are woken
// through pub/sub when the count reaches zero or the latch is deleted, and
// re-check at least every recheck interval of the Client
// (redisync.WithRecheckInterval) in case a message was lost; they never
// poll otherwise. All waiters of one Client share one subscription.
//
// When ctx ends first, Wait returns an error wrapping ctx.Err() and leaves
// no subscription behind.
//
// A latch lost with its server is not opened: when the latch this wait
// saw set on one server is missing on the server that answers now (a
// restart without persistence, a failover onto a replica that did not
// have it), Wait returns an error wrapping redisync.ErrStateLost. A latch
// counted down to zero by any client (Java included), or deleted, opens
// with nil.
func (l *Latch) Wait(ctx context.Context) error {
	_, err := l.wait(ctx, 0, true)
	return err
}

// TryWait waits at most wait for the count to reach zero (0: a single
// check). It returns true when the latch is open, (false, nil) when the count
// was read above zero when the wait ran out, and an error for a failure
// (a bad argument, Redis unreachable or not answering within the wait,
// the latch lost with its server as Wait says: redisync.ErrStateLost, ctx
// ended: then wrapping ctx.Err()). A negative wait is an invalid argument.
//
// A wait above 0 bounds the reads too: one still on its way when it ends
// is cut (a stalled read only on a go-redis client with
// ContextTimeoutEnabled); TryWait reports false when an earlier read of
// the wait answered, and an error when none did; see “Wait bounds” in
// [redisync].
func (l *Latch) TryWait(ctx context.Context, wait time.Duration) (bool, error) {
	if err := l.h.CheckWait(wait); err != nil {
		return false, err
	}
	return l.wait(ctx, wait, false)
}

// wait is Wait and TryWait after their argument checks: one observed wait
// (core.Client.BeginWait), in which "acquired" means the latch was open.
func (l *Latch) wait(ctx context.Context, wait time.Duration, forever bool) (ok bool, err error) {
	if err := l.h.Check(ctx); err != nil {
		return false, err
	}
	ctx, obs := l.h.C.BeginWait(ctx, l.h.Kind, "", l.h.Name, forever, wait)
	defer func() { obs.End(ok, err) }()
	// The zero message opens the latch for every waiter; a set or delete
	// message may too (a deleted latch is open), so all re-check. The
	// wait remembers on which server it saw the latch set (watch): found
	// missing on another, it was lost, not opened.
	watchOpen := (&watch{l: l}).open
	open := core.Attempt(watchOpen)
	if !forever && wait > 0 {
		// The wait bounds the reads too: one still on its way when the
		// wait ends is cut (a stalled read only with ContextTimeoutEnabled).
		end := time.Now().Add(wait)
		open = func(ctx context.Context) (bool, time.Duration, error) {
			rctx, cancel := context.WithDeadline(ctx, end)
			defer cancel()
			ok, retry, err := watchOpen(rctx)
			if err != nil && rctx.Err() != nil && ctx.Err() == nil {
				// the wait ended: still closed, as far as Redis answered
				// before; an error if it never did
				return false, 0, core.Cut(err)
			}
			return ok, retry, err
		}
	}
	ok, err = l.h.C.Waits().Until(ctx, &core.PubSub{Channel: l.channel, Wake: pubsub.WakeAll},
		core.Bound{Forever: forever, Wait: wait}, open)
	if err != nil {
		return false, fmt.Errorf("countdown %q: %w", l.h.Name, errs.ReplyError(err))
	}
	return ok, nil
}

// watch is one wait's memory of the latch: the server (its run_id) on
// which the wait last found the latch set, and the count it read there.
type watch struct {
	l     *Latch
	setOn string
	count int64
}

// open is a wait's attempt: whether the count is 0. The count does not
// change by itself: no retry hint, the client's re-check interval bounds
// the wait for a lost message.
//
// A latch is open when its key is missing (Redisson's rule), but a key
// also goes missing when its server lost it: a restart without
// persistence, a failover onto a replica that did not have it. So each
// read names the server that answered, and a latch this wait saw set on
// one server and finds missing on another was lost with its server, not
// counted down: the wait ends with an error wrapping
// redisync.ErrStateLost. Found missing on the server that held it, it
// was counted down to zero or deleted (by any client).
func (w *watch) open(ctx context.Context) (bool, time.Duration, error) {
	n, server, err := w.l.read(ctx)
	switch {
	case err != nil:
		return false, 0, err
	case n > 0:
		w.setOn, w.count = server, n
		return false, 0, nil
	case w.setOn != "" && server != "" && server != w.setOn:
		return false, 0, fmt.Errorf("the latch, seen set (count %d) on the server with run_id %.8s…, is missing on the server with run_id %.8s… that answers now: lost with its server (a restart without persistence, or a failover onto a server that did not have it), not counted down: %w",
			w.count, w.setOn, server, redisync.ErrStateLost)
	}
	return true, 0, nil
}

// read returns the latch's count, as count does (with replica
// acknowledgement on, as a write acknowledged by the replicas), and the
// run_id of the server that answered (latch_wait.lua).
func (l *Latch) read(ctx context.Context) (int64, string, error) {
	sync := l.h.C.Pipeline().NewSync()
	a := lua.LatchWaitArgs{Latch: l.h.Name}
	if sync != nil {
		a.Fence = l.fence
	}
	rep, err := a.Run(ctx, l.h.C.Pipeline().Runner(sync))
	if err != nil {
		return 0, "", err
	}
	if err := sync.SyncErr(); err != nil {
		return 0, "", fmt.Errorf("the count read is not on the replicas yet: %w", err)
	}
	return rep.Count, rep.Server, nil
}

// Delete deletes the latch whatever its count, which opens it: its waiters
// are woken and return. It reports whether the latch was set. A call
// re-sent by go-redis after a lost reply is applied once and reports what
// the first run did. A key of another type (not a string holding a count)
// gives an error wrapping redisync.ErrWrongType and is not deleted.
//
// After a network error it may or may not have taken effect; calling again
// is safe. See “Errors and retries” in [redisync].
func (l *Latch) Delete(ctx context.Context) (bool, error) {
	if err := l.h.Check(ctx); err != nil {
		return false, err
	}
	res, err := l.run(ctx, deleteLatch, 0)
	if err != nil {
		return false, fmt.Errorf("countdown %q: delete: %w", l.h.Name, errs.ReplyError(err))
	}
	return res == lua.LatchDeleteExisted, nil
}
