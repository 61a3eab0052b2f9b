package request

import (
	"context"
	"time"
)

// Resend runs send, which sends one state-changing request, until Redis
// answers it — a result or an error reply other than one saying the
// request did not run (LOADING, BUSY, ...) — re-sending the very same
// request (same request key, same deadline) after a network error, with a
// pause that grows from 20ms to 1s, for as long as ctx allows and at most
// the request's lifetime (Deadline: later copies would be refused
// anyway). A request
// applies at most once however often it is sent (its record answers the
// copies, its deadline refuses the late ones), so re-sending turns a
// release lost to a short outage into one that took effect, where giving
// up would lose it for good (a semaphore's permits, a latch's count-down).
// It returns send's last error.
func (r *Requests) Resend(ctx context.Context, send func() error) error {
	return r.ResendUntil(ctx, time.Now().Add(r.ttl), send)
}

// Settle makes sure that an owner's request whose reply was lost — a
// release, or the undo of an acquisition, request key req — can no longer
// apply, then calls unlock (the owner's lock on the hold, held until
// then). An owner's requests set its hold count to what the client counts,
// and the last release deletes its field: a copy of such a request arriving
// after the owner's next acquisition would lower that acquisition's count
// or delete its hold, while this client counts it held. So Settle marks req
// "cancelled" with SET NX, which a release finding it obeys by changing
// nothing (lua/prelude_request.lua, release_replay), and which changes
// nothing when the request ran already (its record holds req). It re-sends
// the mark as Resend does, until Redis answers or the request's deadline
// has passed (a later copy is refused by it anyway). It runs in the
// background and reports whether it started: when the client is closing
// it does not, and the caller unlocks.
//
// The fresh holds need none of this: their field serves one hold only, so
// a late copy of its release finds nothing of a later hold to change.
func (r *Requests) Settle(req string, unlock func()) bool {
	return r.bg.Finish(r.ttl+settleSlack, func(ctx context.Context) {
		defer unlock()
		rdb := r.rdb
		err := r.Resend(ctx, func() error {
			return rdb.SetNX(ctx, req, "cancelled", r.ttl+settleSlack).Err()
		})
		if err != nil {
			r.log.Warn("redisync: could not settle a request whose reply was lost; a late copy of it may still apply until its deadline",
				"request", req, "err", err)
		}
	})
}

// settleSlack is how long a settling mark outlives the request's deadline
// at the least, and how much longer than the request's lifetime Settle may
// try: room for the error in the measured clock offset.
const settleSlack = 2 * time.Second
