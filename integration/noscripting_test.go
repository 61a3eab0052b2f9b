package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Issue 40 item 4: a server that cannot run scripts (EVAL and EVALSHA
// renamed away; an ACL user without them) fails the first call at once
// with an error wrapping ErrNoScripting that says what to do, and leaves
// nothing behind: no key, no subscription.
func TestNoScripting(t *testing.T) {
	t.Parallel()
	renamed := redistest.Start(t, redistest.WithArgs("--rename-command", "EVAL", "", "--rename-command", "EVALSHA", ""))
	acl := redistest.Start(t)
	for _, tc := range []struct {
		what string
		s    *redistest.Server
		rdb  *redis.Client
		acl  bool
	}{
		{"renamed away", renamed, renamed.Client(t), false},
		{"refused by the ACL", acl, acl.Client(t, acl.User(t, "~*", "&*", "+@all", "-eval", "-evalsha", "-script")), true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := clienttest.New(t, tc.rdb)
			name := redistest.Key(t, "x")
			calls := map[string]func() error{
				"rlock Lock":          func() error { return rlock.New(c, name).Lock(ctx) },
				"rlock owner TryLock": func() error { _, err := rlock.New(c, name).TryLock(redisync.WithOwner(ctx), time.Second); return err },
				"fair lock Lock":      func() error { return rlock.NewFair(c, name).Lock(ctx) },
				"rwlock RLock":        func() error { return rwlock.New(c, name).RLock(ctx) },
				"semaphore Acquire":   func() error { return semaphore.New(c, name).Acquire(ctx, 1) },
				"latch TrySetCount":   func() error { _, err := countdown.New(c, name).TrySetCount(ctx, 1); return err },
			}
			for what, call := range calls {
				start := time.Now()
				err := call()
				require.ErrorIs(t, err, redisync.ErrNoScripting, what)
				assert.Less(t, time.Since(start), 5*time.Second, "%s: at once", what)
				assert.Contains(t, err.Error(), "EVALSHA", what)
				if tc.acl {
					assert.ErrorIs(t, err, redisync.ErrNoPermission, what)
				}
			}
			clienttest.NoSubscriptions(t, c)
			n, err := tc.s.Client(t).DBSize(ctx).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "no key written")
		})
	}
}
