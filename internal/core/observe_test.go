package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/core/errs"
)

// Without hooks an observed wait allocates nothing: the cost of
// observability for those who do not use it is two atomic additions.
func TestBeginWaitWithoutHooksAllocatesNothing(t *testing.T) {
	c := NewClient(nil, Options{})
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		_, obs := c.BeginWait(ctx, "rwlock", "read", "name", false, time.Second)
		obs.End(true, nil)
	})
	if allocs != 0 {
		t.Fatalf("BeginWait and End allocate %v times per wait without hooks, want 0", allocs)
	}
	if s := c.Stats(); s.Waits[WaitAcquired] != 1001 || s.Waiting != 0 {
		t.Fatalf("%d acquisitions counted, %d waiting; want 1001 (AllocsPerRun warms up once) and 0", s.Waits[WaitAcquired], s.Waiting)
	}
}

// The result of a wait from its outcome, as documented on End.
func TestWaitResults(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		forever bool
		wait    time.Duration
		ok      bool
		err     error
		want    WaitResult
	}{
		{"acquired", bg, true, 0, true, nil, WaitAcquired},
		{"busy", bg, false, 0, false, nil, WaitBusy},
		{"timed out", bg, false, time.Second, false, nil, WaitTimedOut},
		{"cancelled", cancelled, true, 0, false, errs.CtxError(cancelled), WaitCancelled},
		{"error while cancelled", cancelled, true, 0, false, errs.ErrClosed, WaitError},
		{"error", bg, false, time.Second, false, errors.New("boom"), WaitError},
	} {
		c := NewClient(nil, Options{})
		var got WaitEnd
		c.opts.Hooks = &Hooks{WaitEnd: func(_ context.Context, e WaitEnd) { got = e }}
		_, obs := c.BeginWait(tc.ctx, "rlock", "", "n", tc.forever, tc.wait)
		obs.End(tc.ok, tc.err)
		if got.Result != tc.want || c.Stats().Waits[tc.want] != 1 {
			t.Errorf("%s: result %d (counted %d), want %d", tc.name, got.Result, c.Stats().Waits[tc.want], tc.want)
		}
		if (got.Err != nil) != (tc.want == WaitCancelled || tc.want == WaitError) {
			t.Errorf("%s: Err %v", tc.name, got.Err)
		}
	}
}

func TestPrimitive(t *testing.T) {
	for _, tc := range [][3]string{
		{"rlock", "", "rlock"},
		{"spin lock", "", "spin_lock"},
		{"rwlock", "read ", "rwlock.read"},
		{"rwlock", "write ", "rwlock.write"},
		{"expirable semaphore", "", "expirable_semaphore"},
	} {
		if got := primitiveLabel(tc[0], tc[1]); got != tc[2] {
			t.Errorf("primitiveLabel(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
