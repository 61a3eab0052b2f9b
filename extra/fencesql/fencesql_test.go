package fencesql_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/extra/fencesql"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE state (k TEXT PRIMARY KEY, v TEXT NOT NULL, fence INTEGER NOT NULL)`)
	require.NoError(t, err)
	return db
}

var state = fencesql.Table{Dialect: fencesql.SQLite, Name: "state", ID: "k", Value: "v", Token: "fence"}

func row(t *testing.T, db *sql.DB, k string) (string, int64) {
	t.Helper()
	var v string
	var tok int64
	require.NoError(t, db.QueryRow(`SELECT v, fence FROM state WHERE k = ?`, k).Scan(&v, &tok))
	return v, tok
}

func TestSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	for _, step := range []struct {
		token int64
		value string
		ok    bool
	}{
		{5, "a", true}, // inserted
		{5, "b", true}, // the same holder again
		{4, "stale", false},
		{9, "c", true},
		{6, "stale", false},
	} {
		ok, err := state.Set(ctx, db, "x", step.token, step.value)
		require.NoError(t, err)
		assert.Equal(t, step.ok, ok, "token %d", step.token)
	}
	v, tok := row(t, db, "x")
	assert.Equal(t, "c", v)
	assert.EqualValues(t, 9, tok)

	_, err := state.Set(ctx, db, "x", 0, "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
	_, err = fencesql.Table{Dialect: fencesql.SQLite, Name: "state; DROP TABLE state"}.Set(ctx, db, "x", 1, "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
}

// Holders of a real fenced lock on a real redis-server, each paused past
// its lease before it writes: whatever order the writes land in, the row
// ends with the last holder's value, and every stale write is refused.
func TestStaleHoldersRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	db.SetMaxOpenConns(1)
	c := redisync.New(redistest.Shared(t).Client(t))
	t.Cleanup(func() { c.Close() })
	l := rlock.New(c, redistest.Key(t, "lock"), rlock.WithFencing())
	var tokens []int64
	for range 10 {
		require.NoError(t, l.Lock(ctx))
		tokens = append(tokens, l.FencingToken())
		require.NoError(t, l.Unlock(ctx))
	}
	var wg sync.WaitGroup
	results := make([]bool, len(tokens))
	for i := len(tokens) - 1; i >= 0; i-- { // the newest first, then the stale ones
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := state.Set(ctx, db, "k", tokens[i], "w")
			assert.NoError(t, err)
			results[i] = ok
		}()
		if i == len(tokens)-1 {
			wg.Wait()
		}
	}
	wg.Wait()
	assert.True(t, results[len(tokens)-1], "the newest holder writes")
	_, tok := row(t, db, "k")
	assert.Equal(t, tokens[len(tokens)-1], tok, "the newest token stays")
	for i, ok := range results[:len(tokens)-1] {
		assert.False(t, ok, "stale holder %d", i)
	}
}

func TestDialectRequired(t *testing.T) {
	t.Parallel()
	db := open(t)
	_, err := fencesql.Table{Name: "state", ID: "k", Value: "v", Token: "fence"}.Set(context.Background(), db, "x", 1, "x")
	assert.ErrorIs(t, err, redisync.ErrInvalidArgument)
	assert.ErrorContains(t, err, "fencesql.SQLite")
}
