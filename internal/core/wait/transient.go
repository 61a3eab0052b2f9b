package wait

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/core/errs"
)

// transientErrors keeps track of a wait's attempts that failed on the way
// to Redis (transient): the last such error, and the pause before the next
// attempt, which grows from 20 ms to 1 s while they go on failing.
type transientErrors struct {
	last  error
	pause time.Duration
}

// absorb reports whether err is transient; if so it records it and grows
// the pause. Any other error, or a success, is not absorbed (and a
// success clears nothing: the wait ends).
func (f *transientErrors) absorb(err error) bool {
	if !transient(err) {
		return false
	}
	f.last = err
	f.pause = min(max(2*f.pause, 20*time.Millisecond), time.Second)
	return true
}

// transient reports whether err, from an attempt, is a failure on the way
// to Redis that a later attempt may not meet: a network error (a
// connection refused, reset or timed out, the pool exhausted) or an error
// reply by which Redis says it did not run the request (errs.NotRun: a
// node loading, a cluster failing over). Not ctx's errors, nor Close, nor
// an attempt's own answers (ErrUpgrade, a script's error).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errs.ErrClosed) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errs.IsReply(err) && errs.NotRun(err))
}
