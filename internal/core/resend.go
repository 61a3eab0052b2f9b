package core

import (
	"context"
	"time"
)

// Resend runs send, which sends one state-changing request, until Redis
// answers it — a result or an error reply — re-sending the very same
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
		if err == nil || IsReply(err) || ctx.Err() != nil || time.Now().Add(pause).After(until) {
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
