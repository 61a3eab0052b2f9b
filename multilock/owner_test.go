package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// hangGuard is how long a Lock that should return at once may take before
// the test calls it hung (a guard against waiting forever, not a timing).
const hangGuard = 30 * time.Second

// lockBackground calls ml.Lock(context.Background()), as a user without
// an owner would, and fails the test if it has not returned within
// hangGuard.
func lockBackground(t *testing.T, ml *multilock.MultiLock) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- ml.Lock(context.Background()) }()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(hangGuard):
		t.Fatalf("Lock(context.Background()) still waiting after %v: a member waits for another", hangGuard)
	}
}

// Regression (issue 34): a MultiLock naming one lock twice, through one
// handle or two, waited for itself forever without an owner in ctx (the
// second member waited for the first, held by another owner). A MultiLock
// takes every member for one owner, so the second re-enters; Unlock
// releases each as often as it was taken and leaves nothing.
func TestDuplicateMemberReenters(t *testing.T) {
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	same := rlock.New(m.cs[0], a)
	cases := map[string]*multilock.MultiLock{
		"New(l, l)":                  multilock.New(same, same),
		"New(two handles, one name)": multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[0], a)),
		"New(a, b, a)":               multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b), rlock.New(m.cs[0], a)),
		"New(a, New(a, b))": multilock.New(rlock.New(m.cs[0], a),
			multilock.New(rlock.New(m.cs[0], a), rlock.New(m.cs[1], b))),
		// A RedLock's members are on different servers; two on one server
		// are the same lock. Both are needed for a majority of two.
		"NewRedLock(l, l)":                  multilock.NewRedLock(same, same),
		"NewRedLock(two handles, one name)": multilock.NewRedLock(rlock.New(m.cs[0], a), rlock.New(m.cs[0], a)),
	}
	for name, ml := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			lockBackground(t, ml)
			requireLocked(t, m.ss[0], a)
			// Held for the MultiLock's own owner: no other owner gets in.
			require.False(t, tryLock(redisync.WithOwner(ctx), t, rlock.New(m.cs[0], a), 0))
			require.NoError(t, ml.Unlock(context.Background()))
			requireFree(t, m.ss[0], a)
			requireFree(t, m.ss[1], b)
			require.ErrorIs(t, ml.Unlock(context.Background()), redisync.ErrNotHeld)
			noWatchdogHolds(t, m.cs[0])
		})
	}
}

// A mix of owners: an owner in ctx re-enters through the MultiLock what it
// holds directly, and Unlock gives back only the MultiLock's share; a
// MultiLock used without an owner acts for one of its own, which neither
// that owner nor the members' own handles are.
func TestMixedOwners(t *testing.T) {
	ctx := testCtx(t)
	m := startMasters(t, 2)
	a, b := m.name+":a", m.name+":b"
	la, lb := rlock.New(m.cs[0], a), rlock.New(m.cs[1], b)
	ml := multilock.New(la, lb)
	alice := redisync.WithOwner(ctx)

	require.NoError(t, la.Lock(alice))
	require.NoError(t, ml.Lock(alice)) // re-enters a
	n, err := la.HoldCount(alice)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.False(t, tryLock(ctx, t, ml, 0), "no owner in ctx: the MultiLock's own owner is not alice")
	require.NoError(t, ml.Unlock(alice))
	n, err = la.HoldCount(alice)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "alice's own hold of a stays")
	requireFree(t, m.ss[1], b)

	require.False(t, tryLock(ctx, t, ml, 0), "a is alice's")
	require.NoError(t, la.Unlock(alice))
	require.True(t, tryLock(ctx, t, ml, 0))
	require.False(t, tryLock(alice, t, la, 0), "held for the MultiLock's own owner")
	require.False(t, tryLock(ctx, t, lb, 0), "nor for the member handle's")
	require.ErrorIs(t, ml.Unlock(alice), redisync.ErrNotHeld)
	require.NoError(t, ml.Unlock(ctx)) // the hold taken without an owner
	requireFree(t, m.ss[0], a)
	requireFree(t, m.ss[1], b)
}
