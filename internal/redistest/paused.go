package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TryWhileWritesPaused runs calls at once, concurrently, while the
// server's writes are paused (CLIENT PAUSE WRITE for 20 s: scripts wait,
// reads and CLIENT UNPAUSE do not), and requires each to return (false,
// nil) within 10 s, far sooner than the pause ends: the calls are TryX
// whose wait must bound the requests they send too. The pause is lifted
// before the results are checked. The server must be the test's own
// (Start), since the pause stops every client on it; the calls' client
// must cut requests at their context's deadline (go-redis's
// ContextTimeoutEnabled).
func (s *Server) TryWhileWritesPaused(t testing.TB, calls map[string]func() (bool, error)) {
	t.Helper()
	ctx := context.Background()
	admin := s.Client(t)
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err())
	type result struct {
		name string
		ok   bool
		err  error
	}
	done := make(chan result, len(calls))
	for name, call := range calls {
		go func() {
			ok, err := call()
			done <- result{name, ok, err}
		}()
	}
	results := make([]result, 0, len(calls))
	for range calls {
		select {
		case r := <-done:
			results = append(results, r)
		case <-time.After(10 * time.Second):
			t.Fatal("a call still running after 10 s while Redis is paused: its request was not cut at the end of its wait")
		}
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	// Redis answered none of the calls' writes within their waits: an
	// outage is an error, never "busy" (false, nil).
	for _, r := range results {
		require.Error(t, r.err, r.name+": no answer within the wait read as busy")
		require.False(t, r.ok, r.name)
	}
}
