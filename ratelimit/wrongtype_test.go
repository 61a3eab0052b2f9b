package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
)

// Regression: a rate limiter on a key of another type returned the raw
// script error ("WRONGTYPE … script: <sha>, on @user_script:N"). Every
// operation of both limiters on such a key returns an error wrapping
// redisync.ErrWrongType, and changes nothing in Redis.
func TestWrongType(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, rdb)
	ctx := context.Background()

	limiterOps := map[string]func(l *Limiter) error{
		"TrySetRate": func(l *Limiter) error { _, err := l.TrySetRate(ctx, Overall, 10, time.Second); return err },
		"SetRate":    func(l *Limiter) error { return l.SetRate(ctx, Overall, 10, time.Second) },
		"UpdateRate": func(l *Limiter) error { _, err := l.UpdateRate(ctx, Overall, 10, time.Second); return err },
		"Config":     func(l *Limiter) error { _, err := l.Config(ctx); return err },
		"TryAcquire": func(l *Limiter) error { _, err := l.TryAcquire(ctx, 1, 0); return err },
		"Release":    func(l *Limiter) error { return l.Release(ctx, 1) },
		"Available":  func(l *Limiter) error { _, err := l.AvailablePermits(ctx); return err },
		"Delete":     func(l *Limiter) error { _, err := l.Delete(ctx); return err },
	}
	// The configuration hash is another type; then, with a valid
	// configuration, the value string and the grants' zset are.
	spoil := map[string]func(t *testing.T, name string){
		"config": func(t *testing.T, name string) {
			require.NoError(t, rdb.RPush(ctx, name, "x").Err())
		},
		"value": func(t *testing.T, name string) {
			require.NoError(t, New(c, name).SetRate(ctx, Overall, 10, time.Second))
			require.NoError(t, rdb.HSet(ctx, keys.RateValue(name), "f", "v").Err())
		},
		"permits": func(t *testing.T, name string) {
			require.NoError(t, New(c, name).SetRate(ctx, Overall, 10, time.Second))
			require.NoError(t, rdb.Set(ctx, keys.RatePermits(name), "x", 0).Err())
		},
		// A value that is no number, beside a grant that is no longer
		// live: dropping it would be a write before the error.
		"value-string": func(t *testing.T, name string) {
			l := New(c, name)
			require.NoError(t, l.SetRate(ctx, Overall, 10, 20*time.Millisecond))
			ok, err := l.TryAcquire(ctx, 1, 0)
			require.NoError(t, err)
			require.True(t, ok)
			time.Sleep(40 * time.Millisecond)
			require.NoError(t, rdb.Set(ctx, keys.RateValue(name), "soon", 0).Err())
		},
		// This client's PerClient value is a hash: the client must not be
		// registered in {name}:clients either.
		"client-value": func(t *testing.T, name string) {
			require.NoError(t, New(c, name).SetRate(ctx, PerClient, 10, time.Second))
			require.NoError(t, rdb.HSet(ctx, keys.RateClientValue(name, c.ID()), "f", "v").Err())
		},
	}
	for key, spoilt := range spoil {
		for opName, op := range limiterOps {
			if key != "config" && opName != "TryAcquire" && opName != "Release" && opName != "Available" {
				continue // these touch the configuration only
			}
			t.Run("limiter/"+key+"/"+opName, func(t *testing.T) {
				name := "wt-" + key + "-" + opName
				spoilt(t, name)
				before := redistest.Snapshot(t, rdb, name)
				err := op(New(c, name))
				require.ErrorIs(t, err, redisync.ErrWrongType, "%v", err)
				assert.NotContains(t, err.Error(), "script:")
				assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "changed")
			})
		}
	}

	gcraOps := map[string]func(g *GCRA) error{
		"Allow":   func(g *GCRA) error { _, err := g.Allow(ctx); return err },
		"AllowN":  func(g *GCRA) error { _, err := g.AllowN(ctx, 2); return err },
		"Reserve": func(g *GCRA) error { _, err := g.Reserve(ctx, 1); return err },
		"Wait":    func(g *GCRA) error { return g.Wait(ctx) },
		"Reset":   func(g *GCRA) error { return g.Reset(ctx) },
	}
	// The GCRA's key is a hash, or a string that is no arrival time.
	gcraSpoil := map[string]func(name string) error{
		"hash":   func(name string) error { return rdb.HSet(ctx, name, "f", "v").Err() },
		"string": func(name string) error { return rdb.Set(ctx, name, "soon", 0).Err() },
	}
	for kind, spoilt := range gcraSpoil {
		for opName, op := range gcraOps {
			t.Run("gcra/"+kind+"/"+opName, func(t *testing.T) {
				name := "wt-gcra-" + kind + "-" + opName
				require.NoError(t, spoilt(name))
				before := redistest.Snapshot(t, rdb, name)
				err := op(NewGCRA(c, name, Limit{Rate: 5, Period: time.Second, Burst: 5}))
				require.ErrorIs(t, err, redisync.ErrWrongType, "%v", err)
				assert.NotContains(t, err.Error(), "script:")
				assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "changed")
			})
		}
	}
}
