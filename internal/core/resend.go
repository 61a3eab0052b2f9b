package core

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Resend runs send, which sends one state-changing request, until Redis
// answers it — a result or an error reply other than one saying the
// request did not run (LOADING, BUSY, ...) — re-sending the very same
// request (same request key, same deadline) after a network error, with a
// pause that grows from 20ms to 1s, for as long as ctx allows and at most
// the request's lifetime (RequestDeadline: later copies would be refused
// anyway). A request
// applies at most once however often it is sent (its record answers the
// copies, its deadline refuses the late ones), so re-sending turns a
// release lost to a short outage into one that took effect, where giving
// up would lose it for good (a semaphore's permits, a latch's count-down).
// It returns send's last error.
func (c *Client) Resend(ctx context.Context, send func() error) error {
	pause := 20 * time.Millisecond
	until := time.Now().Add(c.reqTTL)
	for {
		err := send()
		if err == nil || (IsReply(err) && !notRun(err)) || ctx.Err() != nil || time.Now().Add(pause).After(until) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		pause = min(pause*2, time.Second)
	}
}

// notRun reports whether err is an error reply by which Redis says it did
// not run the request at all (loading its data after a restart, busy with
// a script, a replica or a cluster not ready): re-sending is safe and may
// succeed.
func notRun(err error) bool {
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
