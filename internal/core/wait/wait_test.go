package wait

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRetryAfterPTTL(t *testing.T) {
	assert.Positive(t, RetryAfterPTTL(0), "PTTL 0 must give a hint: the waiter would fall back to the re-check cap")
	assert.Equal(t, 1501*time.Millisecond, RetryAfterPTTL(1500), "PTTL 1500")
	assert.Zero(t, RetryAfterPTTL(-1), "no expiry gives no hint")
}
