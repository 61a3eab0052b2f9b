package request

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/core/bg"
)

// movedErr is the error reply of a Cluster node that does not serve the
// key's slot: the request did not run there.
type movedErr string

func (e movedErr) Error() string { return string(e) }
func (movedErr) RedisError()     {}

var _ redis.Error = movedErr("")

// An undo (or a release) whose script met a Cluster redirection (MOVED,
// ASK: a failover or a migration the client has not yet learnt) did not
// run: re-sending it is safe, and it must be re-sent until it runs, as
// after LOADING or CLUSTERDOWN. ResendUntil took MOVED for an answer and
// gave up: the fault suite's cluster topology (seed 3) lost two
// expirable permits without a lease for good that way.
func TestResendUntilFollowsRedirections(t *testing.T) {
	r := New(nil, slog.New(slog.DiscardHandler), bg.New(), new(atomic.Uint64), new(atomic.Uint64))
	for _, reply := range []string{"MOVED 5788 127.0.0.1:34575", "ASK 5788 127.0.0.1:34575"} {
		sent := 0
		err := r.ResendUntil(context.Background(), time.Now().Add(5*time.Second), func() error {
			sent++
			if sent == 1 {
				return movedErr(reply)
			}
			return nil
		})
		require.NoError(t, err, reply)
		assert.Equal(t, 2, sent, reply)
	}
}
