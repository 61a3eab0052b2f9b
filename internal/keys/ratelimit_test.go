package keys

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The rate limiter's keys are Redisson's ({name}:value, {name}:permits and
// their per-client forms), and every one of them shares the name's slot.
func TestRateLimiterLayout(t *testing.T) {
	cases := []struct{ got, want string }{
		{RateValue("api"), "{api}:value"},
		{RatePermits("api"), "{api}:permits"},
		{RateClientValue("api", "c1"), "{api}:value:c1"},
		{RateClientPermits("api", "c1"), "{api}:permits:c1"},
		{RateClients("api"), "{api}:clients"},
		{RateValue("a{b}"), "a{b}:value"},
		{RateClientPermits("a{b}", "c1"), "a{b}:permits:c1"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.got)
	}
	for _, k := range []string{RateValue("api"), RatePermits("api"), RateClientValue("api", "c"), RateClientPermits("api", "c"), RateClients("api")} {
		assert.Equal(t, Slot("api"), Slot(k), k)
	}
}
