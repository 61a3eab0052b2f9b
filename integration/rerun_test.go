package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// Regression (make chaos, seed 5, single server): a counted semaphore lost
// 2 permits for good with nothing held. An acquisition ran on a primary
// that was killed before it replied (its append-only file kept the write);
// go-redis re-sent it to the restarted server, which answered LOADING, and
// since an error reply was taken to mean that nothing ran, the acquisition
// was not undone. An error reply proves only that the last copy did not
// run: after one that says so (LOADING, BUSY, READONLY, ...) the
// acquisition is now undone as after a lost reply (errs.MayHaveRun).
//
// The test makes it deterministic with BUSY: the proxy drops the reply of
// the acquisition, which ran, and go-redis's re-send (after a back-off of
// 800ms) finds the server busy with a long script.
func TestAcquisitionReSentIntoBusyServerIsUndone(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"expirable", "counted"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			acquisitionReSentIntoBusyServerIsUndone(t, kind)
		})
	}
}

func acquisitionReSentIntoBusyServerIsUndone(t *testing.T, kind string) {
	s := redistest.Start(t) // its own server: it is made busy
	p := redistest.NewProxy(t, s.Addr())
	// The re-send comes 800 ms after the dropped reply, well inside the
	// busy window (it starts within milliseconds of the drop and lasts 2
	// s) even on a loaded machine, where starting the looper can take a
	// few hundred milliseconds.
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: 3,
		MinRetryBackoff: 800 * time.Millisecond, MaxRetryBackoff: 800 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	c := clienttest.New(t, rdb)
	direct := s.Client(t)
	ctx := context.Background()
	name := redistest.Key(t, "sem")
	require.NoError(t, direct.ConfigSet(ctx, "busy-reply-threshold", "20").Err())

	var acquire func(ctx context.Context) error
	switch kind {
	case "expirable":
		es := semaphore.NewExpirable(c, name)
		require.NoError(t, es.SetPermits(ctx, 3))
		id, err := es.Acquire(ctx, 0) // loads the scripts on the server
		require.NoError(t, err)
		require.NoError(t, es.Release(ctx, id))
		acquire = func(ctx context.Context) error {
			_, ok, err := es.TryAcquire(ctx, 0, 0)
			if err == nil && !ok {
				err = fmt.Errorf("not acquired")
			}
			return err
		}
	case "counted":
		cs := semaphore.New(c, name)
		require.NoError(t, cs.AddPermits(ctx, 3))
		require.NoError(t, cs.Acquire(ctx, 1)) // loads the scripts on the server
		require.NoError(t, cs.Release(ctx, 1))
		acquire = func(ctx context.Context) error {
			ok, err := cs.TryAcquire(ctx, 1, 0)
			if err == nil && !ok {
				err = fmt.Errorf("not acquired")
			}
			return err
		}
	}
	state := permitState(direct, kind, name, 3)
	require.NoError(t, rdb.Ping(ctx).Err())

	// When the reply has been dropped, a script that loops keeps the
	// server busy for two seconds (then it is killed).
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		for p.Dropped() == 0 {
			time.Sleep(time.Millisecond)
		}
		looper := s.Client(t)
		go func() {
			time.Sleep(2 * time.Second)
			_ = direct.ScriptKill(ctx).Err()
		}()
		_ = looper.Eval(ctx, "while true do end", nil).Err()
	}()
	p.DropNextReply()
	err := acquire(ctx)
	<-busy
	require.Error(t, err, "the acquisition, re-sent into the busy server")
	require.Contains(t, err.Error(), "BUSY", "the re-sent copy's reply: the test proves nothing otherwise")
	require.Equal(t, 1, p.Dropped())

	eventuallyAllFree(t, 5*time.Second, state, 3)
}
