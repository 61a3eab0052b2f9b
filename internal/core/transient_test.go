package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redisync/redisync/internal/core/errs"
	"github.com/stretchr/testify/assert"
)

// replyError is an error reply as go-redis returns them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// transient tells failures on the way to Redis from everything else.
func TestTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for err, want := range map[error]bool{
		fmt.Errorf("acquire: %w", refused):                        true,
		fmt.Errorf("acquire: %w", io.EOF):                         true,
		io.ErrUnexpectedEOF:                                       true,
		redis.ErrPoolTimeout:                                      true,
		fmt.Errorf("acquire: %w", replyError("CLUSTERDOWN down")): true,
		replyError("LOADING Redis is loading the dataset"):        true,
		replyError("REDISYNC_LATE request delivered after"):       false,
		replyError("ERR unknown command"):                         false,
		context.Canceled:                                          false,
		fmt.Errorf("wait: %w", context.DeadlineExceeded):          false,
		errs.ErrClosed:                                            false,
		redis.ErrClosed:                                           false,
		fmt.Errorf("owner x: %w", errors.New("upgrade refused")):  false,
	} {
		assert.Equal(t, want, transient(err), "%v", err)
	}
}

func TestRetryAfterPTTL(t *testing.T) {
	assert.Positive(t, RetryAfterPTTL(0), "PTTL 0 must give a hint: the waiter would fall back to the re-check cap")
	assert.Equal(t, 1501*time.Millisecond, RetryAfterPTTL(1500), "PTTL 1500")
	assert.Zero(t, RetryAfterPTTL(-1), "no expiry gives no hint")
}
