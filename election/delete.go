package election

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/core"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/lua"
)

// ErrLeading is returned by Delete while the election's lock is held: by
// its leader, or by an owner that is no candidate (a Redisson RLock on the
// election's name). ForceDelete deletes it all the same.
var ErrLeading = errors.New("redisync: the election's lock is held")

// Delete deletes the election's keys, which it keeps without an expiry
// (see the package documentation, "Keys"): the leader record and its log,
// the candidates' queue and their deadlines, and the fencing counter. Use
// it for an election no service runs any more. It reports whether any of
// them existed. It is refused while the election's lock is held, with an
// error wrapping ErrLeading that names the holder (and the leader's value
// and term when it is the leader), and nothing is deleted: resign first,
// or use ForceDelete.
//
// Candidates still waiting lose their places: the first one whose place
// was live is woken and leads at once; the others join the queue again at
// their next re-check. Terms keep growing after the counter is deleted:
// the next term is at least the server's clock in microseconds, above
// every term issued before (the floor that protects a counter lost to a
// restart; see docs/fencing.md). Observers are told, and go on
// with the next leader. A key of another type than the election's layout
// gives an error wrapping redisync.ErrWrongType, and nothing is deleted.
//
// After a network error it may or may not have taken effect; calling
// again is safe. See “Errors and retries” in [redisync].
func (e *Election) Delete(ctx context.Context) (bool, error) {
	return e.del(ctx, false)
}

// ForceDelete is Delete, also while someone leads: the election's lock is
// deleted with the other keys, whoever holds it. The leadership it takes
// away ends with an error wrapping redisync.ErrLockLost: at once in this
// Client, at the holder's next renewal in others (within a third of the
// lease, or a round trip with keyspace notifications). Before its end is
// noticed, a leader's Proclaim is refused (the lock is no longer its).
func (e *Election) ForceDelete(ctx context.Context) (bool, error) {
	return e.del(ctx, true)
}

// del runs election_delete, and ends this Client's hold of a lock it
// deleted.
func (e *Election) del(ctx context.Context, force bool) (bool, error) {
	if err := e.h.Check(ctx); err != nil {
		return false, err
	}
	name := e.h.Name
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("election %q: delete: %w", name, errs.ReplyError(err))
	}
	pub, err := e.h.C.PublishCommand(ctx)
	if err != nil {
		return fail(err)
	}
	rep, err := lua.ElectionDeleteArgs{Lock: name, Leader: keys.ElectionLeader(name), Log: keys.ElectionLog(name),
		Queue: keys.FairQueue(name), Timeouts: keys.FairTimeouts(name), Counter: keys.FenceCounter(name),
		ChannelPrefix: keys.LockChannel(name), Channel: keys.ElectionChannel(name),
		Force: force, Publish: pub, Deadline: e.h.C.Requests().Deadline(ctx),
		RequestPrefix: keys.RequestPrefix(name), MarkTTLMillis: core.ForcedMarkTTL}.Run(ctx, e.h.C.Direct())
	if err != nil {
		return fail(err)
	}
	if rep.Code == lua.ElectionDeleteHeld {
		return false, fmt.Errorf("election %q: delete: %w by %s%s; resign first, or force the deletion",
			name, ErrLeading, rep.Holder, e.leaderText(ctx, rep.Holder))
	}
	if rep.Holder != "" && strings.HasPrefix(rep.Holder, e.h.C.ID()+":") {
		// A hold of this Client: it ends now, as a force unlock's does.
		e.h.C.Holds().End(core.HoldKey{Key: name, Field: rep.Holder},
			fmt.Errorf("%w: the election was deleted", redisync.ErrLockLost))
	}
	return rep.Code == lua.ElectionDeleteDeleted, nil
}

// leaderText describes holder for Delete's refusal: ", the leader (value
// "x", term 7)" when it wrote the latest record, ", no candidate" when it
// holds the lock without one; "" when the record cannot be read.
func (e *Election) leaderText(ctx context.Context, holder string) string {
	info, err := e.Inspect(ctx)
	switch {
	case err != nil:
		return ""
	case info.Owner == holder:
		return fmt.Sprintf(", the leader (value %q, term %d)", info.Leader.Value, info.Leader.Term)
	}
	return " (no candidate's record: a lock that is no candidate's, or a winner about to write its record)"
}
