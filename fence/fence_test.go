package fence_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/clienttest"
	"github.com/redisync/redisync/internal/redistest"
)

func TestSetGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.Shared(t)
	v := fence.New(c, redistest.Key(t, "v"))
	s, tok, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "", s)
	assert.Zero(t, tok, "nothing written")

	for _, step := range []struct {
		token int64
		value string
		ok    bool
	}{
		{5, "a", true},
		{5, "b", true}, // the same holder writes again
		{4, "stale", false},
		{1 << 40, "c", true},
		{6, "stale", false},
	} {
		ok, err := v.Set(ctx, step.token, step.value)
		require.NoError(t, err)
		assert.Equal(t, step.ok, ok, "token %d", step.token)
	}
	s, tok, err = v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "c", s)
	assert.EqualValues(t, 1<<40, tok)
}

// Concurrent writers with every token from 1 to n: the value ends as the
// highest token's, whatever the order they arrive in.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.Shared(t)
	v := fence.New(c, redistest.Key(t, "v"))
	const n = 50
	var wg sync.WaitGroup
	for i := int64(1); i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := v.Set(ctx, i, "writer")
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	_, tok, err := v.Get(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, n, tok)
}

// Bad tokens are invalid arguments, sent nowhere; a key of another layout
// is ErrWrongType and left unchanged.
func TestInvalidAndWrongType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	rdb := s.Client(t)
	c := clienttest.New(t, rdb)
	for _, tok := range []int64{0, -1, 1<<53 + 1} {
		_, err := fence.New(c, redistest.Key(t, "v")).Set(ctx, tok, "x")
		assert.ErrorIs(t, err, redisync.ErrInvalidArgument, "token %d", tok)
	}
	_, err := fence.New(c, "").Set(ctx, 1, "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument, "empty name")

	for what, setup := range map[string]func(name string) error{
		"a string":            func(n string) error { return rdb.Set(ctx, n, "x", 0).Err() },
		"an application hash": func(n string) error { return rdb.HSet(ctx, n, "name", "bob").Err() },
		"a hash with a token that is no number": func(n string) error {
			return rdb.HSet(ctx, n, "token", "x", "value", "y").Err()
		},
	} {
		name := redistest.Key(t, "wrong")
		require.NoError(t, setup(name))
		before := redistest.Snapshot(t, rdb, name)
		_, err := fence.New(c, name).Set(ctx, 7, "x")
		assert.ErrorIs(t, err, redisync.ErrWrongType, what)
		assert.Equal(t, before, redistest.Snapshot(t, rdb, name), "%s: unchanged", what)
	}
}

// On a Cluster: names with and without a hash tag.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c := clienttest.New(t, cl.Client(t))
	for _, name := range []string{redistest.Key(t, "v"), "{" + redistest.Key(t, "tenant") + "}:v"} {
		v := fence.New(c, name)
		ok, err := v.Set(ctx, 3, "x")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = v.Set(ctx, 2, "y")
		require.NoError(t, err)
		require.False(t, ok)
		s, tok, err := v.Get(ctx)
		require.NoError(t, err)
		assert.Equal(t, "x", s)
		assert.EqualValues(t, 3, tok)
	}
}

// Regression (B1): with redisync.WithKeyPrefix, Name returns the name
// given, as every other handle's does; the key carries the prefix.
func TestNameWithKeyPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Shared(t)
	name := redistest.Key(t, "v")
	const prefix = "app1:"
	v := fence.New(clienttest.New(t, s.Client(t), redisync.WithKeyPrefix(prefix)), name)
	assert.Equal(t, name, v.Name())
	ok, err := v.Set(ctx, 3, "x")
	require.NoError(t, err)
	require.True(t, ok)
	n, err := s.Client(t).Exists(ctx, prefix+name).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the value is under the prefixed name")
}
