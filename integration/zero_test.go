package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/countdown"
	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Regression (issue 34): `var l rlock.Lock; l.Lock(ctx)` and
// `rlock.New(&redisync.Client{}, "x").Lock(ctx)` panicked with a nil
// dereference. A zero-value handle, a handle on a zero Client and a handle
// on a nil Client return an error wrapping ErrInvalidArgument from every
// method that returns an error, and the others do not panic. Every
// exported method of every primitive is called (by reflection, so a method
// added later is covered), with arguments that would be valid on a real
// handle. None of it needs Redis: nothing is sent.
func TestZeroValues(t *testing.T) {
	zero := &redisync.Client{}
	handles := map[string]func(c *redisync.Client) any{
		"rlock.Lock":                   func(c *redisync.Client) any { return rlock.New(c, "x") },
		"rlock.FairLock":               func(c *redisync.Client) any { return rlock.NewFair(c, "x") },
		"rlock.SpinLock":               func(c *redisync.Client) any { return rlock.NewSpin(c, "x") },
		"rwlock.RWLock":                func(c *redisync.Client) any { return rwlock.New(c, "x") },
		"rwlock.RWLock.ReadLocker":     func(c *redisync.Client) any { return rwlock.New(c, "x").ReadLocker() },
		"semaphore.Semaphore":          func(c *redisync.Client) any { return semaphore.New(c, "x") },
		"semaphore.ExpirableSemaphore": func(c *redisync.Client) any { return semaphore.NewExpirable(c, "x") },
		"countdown.Latch":              func(c *redisync.Client) any { return countdown.New(c, "x") },
		"ratelimit.Limiter":            func(c *redisync.Client) any { return ratelimit.New(c, "x") },
		"ratelimit.GCRA": func(c *redisync.Client) any {
			return ratelimit.NewGCRA(c, "x", ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 10})
		},
		"multilock.MultiLock": func(c *redisync.Client) any { return multilock.New(rlock.New(c, "x"), rlock.New(c, "y")) },
		"multilock.RedLock": func(c *redisync.Client) any {
			return multilock.NewRedLock(rlock.New(c, "x"), rlock.New(c, "y"), rlock.New(c, "z"))
		},
	}
	for name, mk := range handles {
		t.Run(name+"/zero Client", func(t *testing.T) { callAll(t, mk(zero)) })
		t.Run(name+"/nil Client", func(t *testing.T) { callAll(t, mk(nil)) })
	}
	zeroValues := map[string]any{
		"rlock.Lock":                   new(rlock.Lock),
		"rlock.FairLock":               new(rlock.FairLock),
		"rlock.SpinLock":               new(rlock.SpinLock),
		"rwlock.RWLock":                new(rwlock.RWLock),
		"rwlock.RWLock.ReadLocker":     new(rwlock.RWLock).ReadLocker(),
		"semaphore.Semaphore":          new(semaphore.Semaphore),
		"semaphore.ExpirableSemaphore": new(semaphore.ExpirableSemaphore),
		"countdown.Latch":              new(countdown.Latch),
		"ratelimit.Limiter":            new(ratelimit.Limiter),
		"ratelimit.GCRA":               new(ratelimit.GCRA),
		"multilock.MultiLock":          new(multilock.MultiLock),
		"multilock.MultiLock members":  multilock.New(new(rlock.Lock), new(rwlock.RWLock)),
		"multilock.RedLock members":    multilock.NewRedLock(new(rlock.Lock), new(rlock.Lock), new(rlock.SpinLock)),
	}
	for name, h := range zeroValues {
		t.Run(name+"/zero value", func(t *testing.T) { callAll(t, h) })
	}
	t.Run("ratelimit.Reservation/zero value", func(t *testing.T) {
		// Not a handle: the zero value reserved nothing, as x/time/rate's.
		var r ratelimit.Reservation
		assert.False(t, r.OK())
		assert.Equal(t, time.Duration(-1), r.Delay())
		assert.NoError(t, r.Cancel(context.Background()))
	})
	t.Run("zero Client", func(t *testing.T) {
		require.ErrorIs(t, zero.Close(), redisync.ErrInvalidArgument)
		assert.Empty(t, zero.ID())
		assert.Nil(t, zero.Redis())
		assert.Zero(t, zero.Stats())
	})
}

// callAll calls every exported method of h (see TestZeroValues).
func callAll(t *testing.T, h any) {
	t.Helper()
	v := reflect.ValueOf(h)
	require.Positive(t, v.NumMethod())
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		t.Run(name, func(t *testing.T) {
			var out []reflect.Value
			require.NotPanics(t, func() { out = m.Call(zeroArgs(t, m.Type())) }, "%T.%s", h, name)
			for _, o := range out {
				if o.Type() != reflect.TypeFor[error]() {
					continue
				}
				err, _ := o.Interface().(error)
				if errors.Is(err, redisync.ErrNotHeld) && isView(name) {
					continue // Err of a handle that never held: it says so
				}
				if _, multi := h.(*multilock.MultiLock); multi && name == "Unlock" && errors.Is(err, redisync.ErrNotHeld) {
					continue // a valid MultiLock of invalid members: it never held, and sends nothing
				}
				assert.ErrorIs(t, err, redisync.ErrInvalidArgument, "%T.%s", h, name)
			}
		})
	}
}

// isView names the methods that report a state instead of doing anything:
// on an invalid handle they report "never held", as on a valid one that
// never held.
func isView(method string) bool { return method == "Err" }

// zeroArgs returns arguments for a method of type ft that would be valid
// on a real handle: a background context, 1 for a count, a second for a
// duration, "x" for a name or id.
func zeroArgs(t *testing.T, ft reflect.Type) []reflect.Value {
	t.Helper()
	var args []reflect.Value
	for i := range ft.NumIn() {
		at := ft.In(i)
		if ft.IsVariadic() && i == ft.NumIn()-1 {
			if at.Elem().Kind() == reflect.String {
				args = append(args, reflect.ValueOf("x"))
			}
			continue
		}
		var a reflect.Value
		switch {
		case at == reflect.TypeFor[context.Context]():
			a = reflect.ValueOf(context.Background())
		case at == reflect.TypeFor[time.Duration]():
			a = reflect.ValueOf(time.Second)
		case at.Kind() == reflect.Int64 || at.Kind() == reflect.Int:
			a = reflect.New(at).Elem()
			a.SetInt(1)
		case at.Kind() == reflect.String:
			a = reflect.ValueOf("x")
		default:
			require.Fail(t, fmt.Sprintf("no argument for %v", at))
		}
		args = append(args, a.Convert(at))
	}
	return args
}

// A nil context is an invalid argument: every method of every primitive
// that takes a context, called with a nil one on a valid handle, returns
// an error wrapping ErrInvalidArgument (the ones without an error return
// do not panic) and sends nothing. Before, each panicked with a bare
// nil-pointer dereference.
func TestNilContext(t *testing.T) {
	s := redistest.Shared(t)
	rdb := s.Client(t)
	sent := &redistest.Counter{}
	rdb.AddHook(sent)
	c := clienttest.New(t, rdb)
	handles := map[string]any{
		"rlock.Lock":                   rlock.New(c, "x"),
		"rlock.FairLock":               rlock.NewFair(c, "x"),
		"rlock.SpinLock":               rlock.NewSpin(c, "x"),
		"rwlock.RWLock":                rwlock.New(c, "x"),
		"rwlock.RWLock.ReadLocker":     rwlock.New(c, "x").ReadLocker(),
		"semaphore.Semaphore":          semaphore.New(c, "x"),
		"semaphore.ExpirableSemaphore": semaphore.NewExpirable(c, "x"),
		"countdown.Latch":              countdown.New(c, "x"),
		"ratelimit.Limiter":            ratelimit.New(c, "x"),
		"ratelimit.GCRA":               ratelimit.NewGCRA(c, "x", ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 10}),
		"multilock.MultiLock":          multilock.New(rlock.New(c, "x"), rlock.New(c, "y")),
		"multilock.RedLock":            multilock.NewRedLock(rlock.New(c, "x"), rlock.New(c, "y"), rlock.New(c, "z")),
		"election.Election":            election.New(c, "x"),
		"fence.Value":                  fence.New(c, "x"),
	}
	for name, h := range handles {
		t.Run(name, func(t *testing.T) { callWithNilContext(t, h) })
	}
	var nilCtx context.Context
	require.ErrorIs(t, c.Shutdown(nilCtx), redisync.ErrInvalidArgument)
	assert.Zero(t, sent.Load(), "nothing sent for a nil context")

	ctx := context.Background()
	lead, err := election.New(c, redistest.Key(t)).Campaign(ctx, "v")
	require.NoError(t, err)
	before := sent.Load()
	t.Run("election.Leadership", func(t *testing.T) { callWithNilContext(t, lead) })
	assert.Equal(t, before, sent.Load(), "nothing sent for a nil context")
	require.NoError(t, lead.Err(), "a refused Resign ends nothing")
	require.NoError(t, lead.Resign(ctx))
}

// callWithNilContext calls every exported method of h that takes a
// context, with a nil one (see TestNilContext).
func callWithNilContext(t *testing.T, h any) {
	t.Helper()
	v := reflect.ValueOf(h)
	ctxType := reflect.TypeFor[context.Context]()
	called := 0
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().Method(i).Name
		if m.Type().NumIn() == 0 || m.Type().In(0) != ctxType {
			continue
		}
		called++
		t.Run(name, func(t *testing.T) {
			args := zeroArgs(t, m.Type())
			args[0] = reflect.Zero(ctxType)
			var out []reflect.Value
			require.NotPanics(t, func() { out = m.Call(args) }, "%T.%s", h, name)
			for _, o := range out {
				if o.Type() == reflect.TypeFor[error]() {
					err, _ := o.Interface().(error)
					assert.ErrorIs(t, err, redisync.ErrInvalidArgument, "%T.%s", h, name)
					assert.ErrorContains(t, err, "nil context", "%T.%s", h, name)
				}
			}
		})
	}
	require.Positive(t, called)
}
