package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Under GODEBUG=fips140=only the embedded miniredis would panic on its
// first script (it computes SHA-1 digests); the demo says so and asks for
// a real server instead.
func TestDemoEmbeddedRefusedInFIPSOnlyMode(t *testing.T) {
	t.Setenv("GODEBUG", "fips140=only")
	d := &demo{}
	err := d.startEmbedded()
	require.Error(t, err)
	require.Contains(t, err.Error(), "-redis")
	require.Empty(t, d.cleanup, "nothing started")
}
