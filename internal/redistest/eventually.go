package redistest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tick is how often Eventually polls its condition.
const Tick = 10 * time.Millisecond

// Eventually fails the test unless cond returns nil within d. It polls cond
// every Tick, from another goroutine (require.EventuallyWithT), so cond must
// not call t.FailNow; on failure what and cond's latest error say what was
// missing. For a condition without an error to report, use testify's
// require.Eventually.
func Eventually(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.NoError(ct, cond(), what)
	}, d, Tick, "not within %v: %s", d, what)
}
