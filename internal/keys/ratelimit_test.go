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

// The scan pattern matches the limiter's keys and escapes the glob
// characters of its name; RateClientOf recognises only per-client keys.
func TestRateScanPattern(t *testing.T) {
	assert.Equal(t, `{api}:*`, RateScanPattern("api"))
	assert.Equal(t, `{a\*b\?\[c\]\\}:*`, RateScanPattern(`a*b?[c]\`))
	assert.Equal(t, `x{y}-z:*`, RateScanPattern("x{y}-z"))

	cases := []struct {
		key, id string
		value   bool
		ok      bool
	}{
		{"{api}:value:c1", "c1", true, true},
		{"{api}:permits:c1", "c1", false, true},
		{"{api}:value", "", false, false},
		{"{api}:value:", "", false, false},
		{"{api}:clients", "", false, false},
		{"{api}:value:x:value", "", false, false},
		{"{api}:valuex:c1", "", false, false},
		{"{other}:value:c1", "", false, false},
	}
	for _, c := range cases {
		id, value, ok := RateClientOf("api", c.key)
		assert.Equal(t, c.ok, ok, c.key)
		assert.Equal(t, c.id, id, c.key)
		assert.Equal(t, c.value, value, c.key)
	}
}
